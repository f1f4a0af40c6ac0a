"""What differs between the CPython versions bytegraph runs on (3.11-3.13).

This module and :mod:`.lower` are the only places that know which Python is
running. The translator reads one instruction vocabulary, CPython 3.11's
(:mod:`.instructions` documents it); :func:`vocabulary` rewrites each native
instruction of the running version into that vocabulary, and :mod:`.lower`
turns vocabulary instructions that generated code emits back into native ones.

The rewriting keeps one rule: the stack the translator models after each
*group* (the vocabulary instructions made from one native instruction, or from
a short native run) is the stack the native code has there, NULL slots
included, because a graph break rebuilds the native stack from the modelled
one. Inside a group the model may differ, so a graph break inside a group
moves to its start, where the whole group runs natively.

Constructs with no 3.11 spelling stay under their native name; the translator
either has a handler for them (``LOAD_FAST_AND_CLEAR``) or graph-breaks with
gb_type ``unsupported bytecode`` naming the opcode.

Adding a Python version: extend :data:`SUPPORTED`, add its rewrite rules in
:func:`vocabulary` and its emission rules in :mod:`.lower`, then run the test
suite on it (``make test-py3XX``); the translator is not touched unless the
version adds a construct that 3.11 cannot spell.
"""
from __future__ import annotations

import dataclasses
import dis
import sys
import types
from typing import Any

#: the CPython versions whose bytecode bytegraph decodes
SUPPORTED = ((3, 11), (3, 12), (3, 13))
PYTHON = sys.version_info[:2]
if PYTHON not in SUPPORTED:  # pragma: no cover - pyproject's requires-python keeps others out
    raise ImportError(f"bytegraph decodes the bytecode of CPython 3.11-3.13, not {PYTHON[0]}.{PYTHON[1]}")

#: whether ``CALL`` finds the NULL of a plain call below the callable (3.11,
#: 3.12: ``[NULL, f, args]``) or above it (3.13: ``[f, NULL, args]``)
NULL_BELOW_CALLABLE = PYTHON < (3, 13)

#: natives a loop's exhausted ``FOR_ITER`` skips after its jump target (the
#: runtime pops the iterator itself: 3.12 skips ``END_FOR``, 3.13 ``END_FOR; POP_TOP``)
_FOR_ITER_SKIP = {(3, 11): 0, (3, 12): 1, (3, 13): 2}[PYTHON]

_JUMPS = frozenset(getattr(dis, "hasjump", None) or (dis.hasjrel + dis.hasjabs))


@dataclasses.dataclass(frozen=True)
class Member:
    """One vocabulary instruction of a group.

    Attributes:
        opname, arg, argval: as in :class:`~.instructions.Instruction`.
        jump: byte offset of the native jump target, for jumps.
        prelude: native opnames generated code runs before entering the native
            instruction when a graph break happens here (3.13's ``TO_BOOL``:
            the native jump needs a bool, the model holds the value).
    """

    opname: str
    arg: int | None
    argval: Any
    jump: int | None = None
    prelude: tuple[str, ...] = ()


def native_instructions(everything: list[dis.Instruction]) -> list[dis.Instruction]:
    """A code object's instructions (all of ``dis.get_instructions``), less ``CACHE`` and ``EXTENDED_ARG``."""
    return [i for i in everything if i.opname not in ("EXTENDED_ARG", "CACHE")]


def code_objects(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and the code objects nested in its constants, at any depth."""
    found = [code]
    for c in found:
        found += [const for const in c.co_consts if isinstance(const, types.CodeType)]
    return found


def code_constants(code: types.CodeType) -> list[Any]:
    """The constants of ``code`` and of every code object nested in it, the
    items of constant tuples and frozensets included (not the code objects)."""
    out: list[Any] = []
    pending = [const for c in code_objects(code) for const in c.co_consts]
    while pending:
        const = pending.pop()
        if isinstance(const, (tuple, frozenset)):
            pending += const
        elif not isinstance(const, types.CodeType):
            out.append(const)
    return out


_LOAD_GLOBAL, _LOAD_NAME = dis.opmap["LOAD_GLOBAL"], dis.opmap["LOAD_NAME"]


def global_reads(code: types.CodeType) -> set[str]:
    """The names ``code`` and the code objects nested in it read as globals
    (``LOAD_GLOBAL``, whose oparg is the name's index shifted left by one on
    every supported version, and ``LOAD_NAME``). Read from the raw bytecode,
    without decoding it (a guard function has tens of thousands of instructions)."""
    names: set[str] = set()
    for c in code_objects(code):
        raw = c.co_code
        ops = raw[0::2]  # the opcode bytes; each is followed by its oparg byte
        for op, shift in ((_LOAD_GLOBAL, 1), (_LOAD_NAME, 0)):
            at = ops.find(op)
            while at >= 0:
                arg, before, bits = raw[2 * at + 1], at - 1, 8
                while before >= 0 and ops[before] == dis.EXTENDED_ARG:
                    arg |= raw[2 * before + 1] << bits
                    before, bits = before - 1, bits + 8
                names.add(c.co_names[arg >> shift])
                at = ops.find(op, at + 1)
    return names


def _target(natives: list[dis.Instruction], ins: dis.Instruction) -> int:
    """The byte offset ``ins`` really continues at when it jumps."""
    if ins.opname in ("FOR_ITER", "SEND") and PYTHON >= (3, 12):
        position = next(n for n, i in enumerate(natives) if i.offset == ins.argval)
        skip = _FOR_ITER_SKIP if ins.opname == "FOR_ITER" else 1  # SEND skips END_SEND
        return natives[position + skip].offset
    return ins.argval


def vocabulary(code: types.CodeType, natives: list[dis.Instruction], n: int) -> tuple[int, list[Member]]:
    """The vocabulary instructions for the native instructions starting at
    ``natives[n]``: ``(how many natives the group covers, its members)``."""
    ins = natives[n]
    name, arg, argval = ins.opname, ins.arg, ins.argval
    jump = _target(natives, ins) if ins.opcode in _JUMPS else None
    if name == "KW_NAMES":
        return 1, [Member(name, arg, code.co_consts[arg])]  # dis leaves it unresolved
    if PYTHON == (3, 11):
        return 1, [Member(name, arg, argval, jump)]
    cells = (*code.co_cellvars, *code.co_freevars)
    one = _RENAMED.get(name)
    if one is not None:
        prelude = ("TO_BOOL",) if PYTHON >= (3, 13) and one in _NEEDS_BOOL else ()
        return 1, [Member(one, arg, argval, jump, prelude)]
    if name == "LOAD_ATTR" and arg & 1:
        return 1, _method(argval)
    if name == "LOAD_ATTR":
        return 1, [Member("LOAD_ATTR", None, argval)]
    if name == "LOAD_GLOBAL" and PYTHON >= (3, 13) and arg & 1:
        return 1, [Member("LOAD_GLOBAL", arg & ~1, argval), Member("PUSH_NULL", None, None)]
    if name == "LOAD_SUPER_ATTR":
        return 1, _super_attr(arg, argval)
    if name == "BINARY_SLICE":
        return 1, [Member("BUILD_SLICE", 2, 2), Member("BINARY_SUBSCR", None, None)]
    if name == "STORE_SLICE":
        return 1, [Member("BUILD_SLICE", 2, 2), Member("STORE_SUBSCR", None, None)]
    if name == "RETURN_CONST":
        return 1, [Member("LOAD_CONST", arg, argval), Member("RETURN_VALUE", None, None)]
    if name in ("CALL_INTRINSIC_1", "CALL_INTRINSIC_2"):  # argrepr names the intrinsic
        intrinsic = _INTRINSICS.get(ins.argrepr)
        return 1, [Member(intrinsic, None, None) if intrinsic else Member(f"{name} {ins.argrepr}", arg, argval)]
    if name == "LOAD_FAST_AND_CLEAR" and argval in cells:
        # an inlined comprehension re-makes a captured cell (PEP 709): the translator keeps one
        # cell per name, so this runs natively
        return 1, [Member(f"{name} of a cell", arg, argval)]
    if name == "MAKE_CELL" and n > 0 and natives[n - 1].opname not in ("MAKE_CELL", "COPY_FREE_VARS"):
        return 1, [Member(f"{name} inside the body", arg, argval)]
    if PYTHON >= (3, 13):
        return _vocabulary_313(code, natives, n, cells)
    return 1, [Member(name, arg, argval, jump)]


def _method(name: str) -> list[Member]:
    """A method load: ``[NULL, bound]`` below 3.13, ``[bound, NULL]`` from 3.13."""
    if NULL_BELOW_CALLABLE:
        return [Member("LOAD_METHOD", None, name)]
    return [Member("LOAD_ATTR", None, name), Member("PUSH_NULL", None, None)]


def _super_attr(arg: int, name: str) -> list[Member]:
    """``LOAD_SUPER_ATTR`` on ``[super, __class__, self]``: ``super(__class__, self).name``
    for the two-argument form; the zero-argument form calls ``super()`` the
    way 3.11 does (it reads the frame's ``__class__`` cell and first argument)."""
    if arg & 2:
        call = [Member("CALL", 1, 1)]
    else:
        call = [Member("POP_TOP", None, None), Member("POP_TOP", None, None), Member("PUSH_NULL", None, None),
                Member("CALL", 0, 0)]
    return call + (_method(name) if arg & 1 else [Member("LOAD_ATTR", None, name)])


def _vocabulary_313(
    code: types.CodeType, natives: list[dis.Instruction], n: int, cells: tuple[str, ...]
) -> tuple[int, list[Member]]:
    ins = natives[n]
    name, arg, argval = ins.opname, ins.arg, ins.argval

    def load(local: str) -> Member:  # 3.13 loads a cell for a closure with LOAD_FAST
        return Member("LOAD_CLOSURE" if local in cells else "LOAD_FAST", None, local)

    if name in ("LOAD_FAST", "LOAD_FAST_CHECK") and argval in cells:
        return 1, [load(argval)]
    if name == "LOAD_FAST_LOAD_FAST":
        return 1, [load(argval[0]), load(argval[1])]
    if name == "STORE_FAST_LOAD_FAST":
        return 1, [Member("STORE_FAST", None, argval[0]), load(argval[1])]
    if name == "STORE_FAST_STORE_FAST":
        return 1, [Member("STORE_FAST", None, argval[0]), Member("STORE_FAST", None, argval[1])]
    if name == "LOAD_CONST" and n + 1 < len(natives) and natives[n + 1].opname == "CALL_KW":
        return 1, [Member("KW_NAMES", arg, argval)]
    if name == "CALL_KW":
        return 1, [Member("CALL", arg, argval)]
    if name == "TO_BOOL":
        return 1, [Member("NOP", None, None)]  # the jump or ``not`` after it tests truth
    if name in _FORMATS:
        return 1, [Member("FORMAT_VALUE", _FORMATS[name] if name != "CONVERT_VALUE" else arg, None)]
    if name == "MAKE_FUNCTION":
        flags = 0
        count = 1
        while n + count < len(natives) and natives[n + count].opname == "SET_FUNCTION_ATTRIBUTE":
            flags |= natives[n + count].arg
            count += 1
        return count, [Member("MAKE_FUNCTION", flags, flags)] + [Member("NOP", None, None)] * (count - 1)
    return 1, [Member(name, arg, argval, _target(natives, ins) if ins.opcode in _JUMPS else None)]


#: native names (3.12, 3.13) of instructions that are one vocabulary instruction
_RENAMED = {
    "POP_JUMP_IF_TRUE": "POP_JUMP_FORWARD_IF_TRUE",
    "POP_JUMP_IF_FALSE": "POP_JUMP_FORWARD_IF_FALSE",
    "POP_JUMP_IF_NONE": "POP_JUMP_FORWARD_IF_NONE",
    "POP_JUMP_IF_NOT_NONE": "POP_JUMP_FORWARD_IF_NOT_NONE",
    "UNARY_NOT": "UNARY_NOT",
}
#: vocabulary instructions whose 3.13 native form needs a bool on the stack
_NEEDS_BOOL = frozenset({"POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE", "UNARY_NOT"})
#: 3.12's one-argument intrinsics that 3.11 spells otherwise. A generator's
#: outermost handler turns an escaping StopIteration into RuntimeError (PEP 479);
#: 3.11 did that where the exception left the frame, and so does the translator
#: (``InliningTranslator.resume_generator``): here it passes the exception on.
_INTRINSICS = {
    "INTRINSIC_UNARY_POSITIVE": "UNARY_POSITIVE", "INTRINSIC_LIST_TO_TUPLE": "LIST_TO_TUPLE",
    "INTRINSIC_STOPITERATION_ERROR": "NOP",
}


def models_handler(target: dis.Instruction) -> bool:
    """Whether the translator follows the exception handler starting at native
    ``target``. Two 3.12+ handlers do what 3.11 did outside the frame, where
    the translator does it too, so exceptions pass them by: a generator's
    outermost one (PEP 479's StopIteration check; see
    ``InliningTranslator.resume_generator``) and ``CLEANUP_THROW`` around a
    ``yield from`` suspension (an exception thrown into the delegate; see
    ``InliningTranslator.close_generator``)."""
    if target.opname == "CALL_INTRINSIC_1":
        return target.argrepr != "INTRINSIC_STOPITERATION_ERROR"
    return target.opname != "CLEANUP_THROW"
#: 3.13's f-string instructions -> FORMAT_VALUE flags (CONVERT_VALUE's oparg is the conversion)
_FORMATS = {"FORMAT_SIMPLE": 0, "FORMAT_WITH_SPEC": 4, "CONVERT_VALUE": None}


def resumes_after_yield_from(resume_arg: int) -> bool:
    """Whether a ``RESUME`` with this argument follows a ``yield from``/``await``
    (2, 3); from 3.13 the argument also carries an exception-depth flag (4)."""
    return (resume_arg & 3) >= 2
