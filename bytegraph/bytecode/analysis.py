"""Static analysis of decoded bytecode (3.11 vocabulary) for graph breaks.

- :func:`live_locals`: which local variables may be read before being written
  from a given instruction on (backward dataflow over jumps and exception
  handlers), so only those are passed to a resume function.
- :func:`enclosing_handlers`: the exception handlers protecting an
  instruction, each classified as a ``with`` cleanup or a ``try`` handler.
- :func:`stack_inputs` / :func:`stack_outputs`: how many stack slots the group
  a graph break runs natively consumes and leaves.
- :func:`cell_rebound`: whether a cell variable is ever assigned or deleted.
- :func:`stack_producers`: which instruction pushed each stack slot (the
  compile report names a resume function's stack values by it).
"""
from __future__ import annotations

import dis
import types
from functools import lru_cache
from typing import Any, Callable

from bytegraph.bytecode.instructions import TERMINATORS, UNCONDITIONAL_JUMPS, DecodedCode, Instruction, decode

_READS = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "DELETE_FAST", "LOAD_FAST_AND_CLEAR"})
_WRITES = frozenset({"STORE_FAST"})


def _successors(decoded: DecodedCode, inst: Instruction) -> list[int]:
    out = []
    if inst.opname not in TERMINATORS and inst.index + 1 < len(decoded.instructions):
        out.append(inst.index + 1)
    if inst.target is not None:
        out.append(inst.target)
    handler = decoded.handler_for(inst.index)
    if handler is not None:
        out.append(handler.target)
    return out


@lru_cache(maxsize=1024)
def _live_in(code: types.CodeType) -> tuple[frozenset[str], ...]:
    decoded = decode(code)
    insts = decoded.instructions
    succs = [_successors(decoded, inst) for inst in insts]
    live: list[frozenset[str]] = [frozenset()] * len(insts)
    changed = True
    while changed:
        changed = False
        for inst in reversed(insts):
            out: set[str] = set()
            for s in succs[inst.index]:
                out |= live[s]
            if inst.opname in _WRITES:
                out.discard(inst.argval)
            if inst.opname in _READS:
                out.add(inst.argval)
            new = frozenset(out)
            if new != live[inst.index]:
                live[inst.index] = new
                changed = True
    return tuple(live)


def live_locals(code: types.CodeType, index: int) -> frozenset[str]:
    """Plain locals (not cells) possibly read at or after instruction ``index``
    before being overwritten."""
    return _live_in(code)[index]


def cell_rebound(code: types.CodeType, name: str) -> bool:
    """Whether cell ``name`` of ``code`` is assigned or deleted anywhere: in
    ``code`` after its prologue (an argument held in a cell is stored by
    ``MAKE_CELL``, not ``STORE_DEREF``) or by a nested function (``nonlocal``)."""
    if any(i.opname in ("STORE_DEREF", "DELETE_DEREF") and i.argval == name for i in decode(code).instructions):
        return True
    nested = (c for c in code.co_consts if isinstance(c, types.CodeType) and name in c.co_freevars)
    return any(cell_rebound(c, name) for c in nested)


def enclosing_handlers(code: types.CodeType, index: int) -> list[tuple[int, str]]:
    """Exception handlers protecting ``index``, innermost first, as
    ``(handler index, kind)``: ``"with"`` for the cleanup of a ``with`` block,
    ``"except"`` for an ``except`` clause (which may catch), ``"finally"`` for a
    ``finally`` clause (which always re-raises). Cleanup code of handlers
    themselves (``COPY 3; POP_EXCEPT; RERAISE``) is skipped."""
    decoded = decode(code)
    insts = decoded.instructions
    found = []
    seen = set()
    entry = decoded.handler_for(index)
    while entry is not None and entry.target not in seen:
        seen.add(entry.target)
        if insts[entry.target].opname == "PUSH_EXC_INFO":
            found.append((entry.target, _handler_kind(insts, entry.target)))
        entry = decoded.handler_for(entry.target)
    return found


def _handler_kind(insts: tuple[Instruction, ...], start: int) -> str:
    if insts[start + 1].opname == "WITH_EXCEPT_START":
        return "with"
    for inst in insts[start + 1 :]:
        if inst.opname in ("CHECK_EXC_MATCH", "POP_EXCEPT"):  # matched, or a bare except that ends handling
            return "except"
        if inst.opname == "RERAISE":
            return "finally"
    return "finally"


@lru_cache(maxsize=1024)
def except_clauses(code: types.CodeType, handler: int) -> tuple[tuple[Instruction, ...], ...] | None:
    """The exception-type expressions of the ``except`` clauses of the handler
    starting at ``handler`` (its ``PUSH_EXC_INFO``), in order: the instructions
    that compute each clause's class or tuple of classes before
    ``CHECK_EXC_MATCH``. None when a clause is a bare ``except:``."""
    insts = decode(code).instructions
    clauses = []
    start = handler + 1
    while insts[start].opname != "RERAISE":
        end = start
        while insts[end].opname != "CHECK_EXC_MATCH":
            if insts[end].opname not in _TYPE_EXPRESSION_OPS:
                return None  # a bare except (or something this reader does not know)
            end += 1
        clauses.append(insts[start:end])
        jump = insts[end + 1]
        if jump.opname != "POP_JUMP_FORWARD_IF_FALSE":
            return None
        start = jump.target
    return tuple(clauses)


_TYPE_EXPRESSION_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_ATTR", "LOAD_FAST", "LOAD_DEREF", "BUILD_TUPLE"})


@lru_cache(maxsize=1024)
def catching_indices(code: types.CodeType) -> frozenset[int]:
    """Instructions of ``code`` protected by an ``except`` clause of the frame."""
    return frozenset(
        inst.index for inst in decode(code).instructions
        if any(kind == "except" for _, kind in enclosing_handlers(code, inst.index))
    )


#: Stack slots each vocabulary opcode consumes, for the ones a graph break can stop at.
_FIXED_INPUTS = {
    "NOP": 0, "POP_TOP": 1, "BINARY_OP": 2, "BINARY_SUBSCR": 2, "STORE_SUBSCR": 3, "DELETE_SUBSCR": 2,
    "UNARY_NEGATIVE": 1, "UNARY_POSITIVE": 1, "UNARY_NOT": 1, "UNARY_INVERT": 1, "COMPARE_OP": 2,
    "IS_OP": 2, "CONTAINS_OP": 2, "GET_ITER": 1, "FOR_ITER": 1, "LOAD_ATTR": 1, "LOAD_METHOD": 1,
    "STORE_ATTR": 2, "DELETE_ATTR": 1, "LOAD_GLOBAL": 0, "LOAD_FAST": 0, "LOAD_DEREF": 0,
    "LOAD_CONST": 0, "LOAD_CLOSURE": 0, "PRECALL": 0, "KW_NAMES": 0, "LIST_APPEND": 1, "SET_ADD": 1,
    "LIST_EXTEND": 1, "SET_UPDATE": 1, "DICT_UPDATE": 1, "DICT_MERGE": 1, "MAP_ADD": 2,
    "UNPACK_SEQUENCE": 1, "UNPACK_EX": 1, "POP_JUMP_FORWARD_IF_TRUE": 1, "POP_JUMP_FORWARD_IF_FALSE": 1,
    "POP_JUMP_BACKWARD_IF_TRUE": 1, "POP_JUMP_BACKWARD_IF_FALSE": 1, "POP_JUMP_FORWARD_IF_NONE": 1,
    "POP_JUMP_FORWARD_IF_NOT_NONE": 1, "POP_JUMP_BACKWARD_IF_NONE": 1, "POP_JUMP_BACKWARD_IF_NOT_NONE": 1,
    "JUMP_IF_TRUE_OR_POP": 1, "JUMP_IF_FALSE_OR_POP": 1, "BEFORE_WITH": 1, "IMPORT_NAME": 2,
    "IMPORT_FROM": 1, "STORE_FAST": 1, "STORE_GLOBAL": 1, "STORE_DEREF": 1, "DELETE_FAST": 0,
    "LOAD_ASSERTION_ERROR": 0, "GET_LEN": 1, "RETURN_VALUE": 1, "LIST_TO_TUPLE": 1, "PUSH_NULL": 0,
}


def stack_inputs(code: types.CodeType, inst: Instruction) -> int | None:
    """Stack slots the group starting at ``inst`` consumes when it runs
    natively, or None when not modelled (callers then treat the whole stack as
    consumed)."""
    effect = _group_effect(code, inst, jump=False)
    return None if effect is None else effect[0]


def stack_outputs(code: types.CodeType, inst: Instruction, jump: bool) -> int | None:
    """Stack slots the group starting at ``inst`` leaves in place of its inputs
    (for the taken or fall-through path), or None when not modelled."""
    effect = _group_effect(code, inst, jump)
    return None if effect is None else effect[1]


def _group_effect(code: types.CodeType, inst: Instruction, jump: bool) -> tuple[int, int] | None:
    """(inputs, outputs) of the group starting at ``inst``; None for groups
    spanning several native instructions (a graph break there does not resume)."""
    decoded = decode(code)
    members = decoded.instructions[inst.start : inst.end]
    after = decoded.instructions[inst.end].native if inst.end < len(decoded.instructions) else decoded.native_count
    if inst.index != inst.start or after != inst.native + 1:
        return None
    depth = lowest = 0
    for member in members:
        inputs = _inputs(member)
        outputs = _outputs(member, jump and member.target is not None)
        if inputs is None or outputs is None:
            return None
        depth -= inputs
        lowest = min(lowest, depth)
        depth += outputs
    return -lowest, depth - lowest


def _inputs(inst: Instruction) -> int | None:
    name, arg = inst.opname, inst.arg or 0
    if name in _FIXED_INPUTS:
        return _FIXED_INPUTS[name]
    if name == "CALL":
        return arg + 2
    if name == "CALL_FUNCTION_EX":
        return 3 + (arg & 1)
    if name in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET", "BUILD_STRING", "BUILD_SLICE", "RAISE_VARARGS"):
        return arg
    if name == "BUILD_MAP":
        return 2 * arg
    if name == "BUILD_CONST_KEY_MAP":
        return arg + 1
    if name == "FORMAT_VALUE":
        return 2 if arg & 0x04 else 1
    if name == "MAKE_FUNCTION":
        return 1 + bin(arg & 0x0F).count("1")
    if name in ("COPY", "SWAP"):
        return arg
    return None


_FIXED_OUTPUTS = {
    "CALL": 1, "CALL_FUNCTION_EX": 1, "PRECALL": 0, "KW_NAMES": 0, "LOAD_METHOD": 2, "LOAD_ATTR": 1,
    "BEFORE_WITH": 2, "IMPORT_FROM": 2, "IMPORT_NAME": 1, "RAISE_VARARGS": 0, "PUSH_NULL": 1, "NOP": 0,
    "POP_JUMP_FORWARD_IF_TRUE": 0, "POP_JUMP_FORWARD_IF_FALSE": 0, "POP_JUMP_FORWARD_IF_NONE": 0,
    "POP_JUMP_FORWARD_IF_NOT_NONE": 0, "POP_JUMP_BACKWARD_IF_TRUE": 0, "POP_JUMP_BACKWARD_IF_FALSE": 0,
    "POP_JUMP_BACKWARD_IF_NONE": 0, "POP_JUMP_BACKWARD_IF_NOT_NONE": 0, "LIST_TO_TUPLE": 1,
    "UNARY_POSITIVE": 1, "FORMAT_VALUE": 1, "MAKE_FUNCTION": 1, "LOAD_CLOSURE": 1, "BUILD_SLICE": 1,
    "LOAD_FAST": 1, "LOAD_FAST_CHECK": 1, "LOAD_DEREF": 1, "LOAD_CONST": 1, "STORE_FAST": 0, "STORE_DEREF": 0,
    "STORE_GLOBAL": 0, "DELETE_FAST": 0, "POP_TOP": 0, "RETURN_VALUE": 0, "BINARY_OP": 1, "BINARY_SUBSCR": 1,
    "STORE_SUBSCR": 0, "COMPARE_OP": 1, "GET_ITER": 1,
}


def _outputs(inst: Instruction, jump: bool) -> int | None:
    name, arg = inst.opname, inst.arg or 0
    if name in _FIXED_OUTPUTS:
        return _FIXED_OUTPUTS[name]
    if name == "LOAD_GLOBAL":
        return 1 + (arg & 1)
    if name == "FOR_ITER":
        return 0 if jump else 2
    if name in ("JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"):
        return 1 if jump else 0
    if name == "UNPACK_SEQUENCE":
        return arg
    if name == "UNPACK_EX":
        return (arg & 0xFF) + (arg >> 8) + 1
    inputs = _inputs(inst)
    if inputs is None or name not in dis.opmap:
        return None
    opcode = dis.opmap[name]  # the rest have the same stack effect in 3.11-3.13
    try:
        effect = dis.stack_effect(opcode, inst.arg if opcode >= dis.HAVE_ARGUMENT else None, jump=jump)
    except ValueError:
        return None
    return inputs + effect


def closing_runs_code(decoded: DecodedCode, index: int, resolve_global: Callable[[str], Any]) -> bool:
    """Whether ``close()`` on a generator suspended at instruction ``index``
    (its ``yield``) could run code of the generator: False when the
    GeneratorExit passes only through handlers that run none on its way out of
    the frame: ``except Name:`` clauses whose ``Name`` (``resolve_global``) is
    an Exception subclass, which GeneratorExit (a BaseException) never matches,
    the cleanup that restores the exception state at the end of an ``except``
    body (the ``yield`` is in one), and the one that unbinds an ``except ... as
    name`` (a fast local: the frame is going away). Anything else (``finally``,
    ``with``, a bare or tuple ``except``) counts as code that runs."""
    instructions = decoded.instructions
    entry = decoded.handler_for(index)
    while entry is not None:
        reraise = _passing_handler(instructions, entry.target, resolve_global)
        if reraise is None:
            return True
        entry = decoded.handler_for(reraise)
    return False


#: handlers that only pass an exception on: the end of an ``except`` body
#: (restore the exception state) and of ``except ... as name`` (unbind the name)
_PASSING_HANDLERS = (("COPY", "POP_EXCEPT", "RERAISE"), ("LOAD_CONST", "STORE_FAST", "DELETE_FAST", "RERAISE"))


def _passing_handler(instructions: tuple[Instruction, ...], i: int, resolve_global: Callable[[str], Any]) -> int | None:
    """The index of the ``RERAISE`` by which the handler at ``i`` passes a
    GeneratorExit on having run no code of the program, or None."""
    names = tuple(ins.opname for ins in instructions[i:i + 4])
    for shape in _PASSING_HANDLERS:
        if names[:len(shape)] == shape and (shape[0] != "LOAD_CONST" or instructions[i].argval is None
                                            and instructions[i + 1].argval == instructions[i + 2].argval):
            return i + len(shape) - 1
    if instructions[i].opname != "PUSH_EXC_INFO":
        return None
    i += 1
    while instructions[i].opname == "LOAD_GLOBAL" and instructions[i + 1].opname == "CHECK_EXC_MATCH":
        jump = instructions[i + 2]
        caught = resolve_global(instructions[i].argval)
        if not (jump.opname.startswith("POP_JUMP") and jump.opname.endswith("IF_FALSE") and isinstance(caught, type)
                and issubclass(caught, Exception)):
            return None
        i = jump.target
    return i if instructions[i].opname == "RERAISE" else None


#: vocabulary opcodes that leave the stack as it is
_STACK_NEUTRAL = frozenset({"NOP", "RESUME", "MAKE_CELL", "COPY_FREE_VARS", "PRECALL", "KW_NAMES"}) | UNCONDITIONAL_JUMPS


def stack_producers(code: types.CodeType, index: int,
                    placeholders: frozenset[str] = frozenset()) -> tuple[int | str | None, ...] | None:
    """For each slot of the stack before instruction ``index`` (bottom
    first), the index of the instruction that pushed it; None for a slot that
    paths reaching ``index`` fill differently. None when the stack there is not
    modelled (an instruction on the way whose stack effect is unknown, or only
    an exception handler reaches ``index``). A ``for`` loop's iterator keeps
    its ``GET_ITER`` as producer; ``COPY`` and ``SWAP`` move producers.

    A local in ``placeholders`` (a resume function's stack parameter) stands
    for a value made before the frame: its ``LOAD_FAST`` pushes the local's
    name, which yields to an instruction index where paths meet."""
    return _producers(code, placeholders)[index]


@lru_cache(maxsize=256)
def _producers(code: types.CodeType, placeholders: frozenset[str]) -> tuple[tuple | None, ...]:
    """Forward dataflow over jumps (not exception edges) of :func:`stack_producers`."""
    insts = decode(code).instructions
    states: list[tuple | None] = [None] * len(insts)
    states[0] = ()
    work = [0]
    while work:
        inst = insts[work.pop()]
        stack = states[inst.index]
        flows = [] if inst.opname in TERMINATORS or inst.index + 1 >= len(insts) else [(inst.index + 1, False)]
        if inst.target is not None:
            flows.append((inst.target, True))
        for successor, jump in flows:
            after = _after(inst, stack, jump, placeholders)
            old = states[successor]
            if after is None or (old is not None and len(old) != len(after)):
                continue
            new = after if old is None else tuple(_meet(a, b) for a, b in zip(old, after))
            if new != old:
                states[successor] = new
                work.append(successor)
    return tuple(states)


def _meet(a: int | str | None, b: int | str | None) -> int | str | None:
    if a == b or isinstance(b, str):
        return a
    return b if isinstance(a, str) else None


def _after(inst: Instruction, stack: tuple, jump: bool, placeholders: frozenset[str]) -> tuple | None:
    """The producers on the stack after ``inst`` runs (taking its jump or not)."""
    name, arg = inst.opname, inst.arg or 0
    if name in _STACK_NEUTRAL:
        return stack
    if name == "LOAD_FAST" and inst.argval in placeholders:
        return stack + (inst.argval,)
    if name == "COPY":
        return stack + (stack[-arg],) if len(stack) >= arg else None
    if name == "SWAP":
        if len(stack) < arg:
            return None
        swapped = list(stack)
        swapped[-1], swapped[-arg] = swapped[-arg], swapped[-1]
        return tuple(swapped)
    if name == "FOR_ITER":  # the iterator stays (its producer too) while the loop runs
        return stack[:-1] if jump else stack + (inst.index,)
    if name in ("JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"):
        return stack if jump else stack[:-1]
    inputs, outputs = _inputs(inst), _outputs(inst, jump and inst.target is not None)
    if inputs is None or outputs is None or len(stack) < inputs:
        return None
    return stack[: len(stack) - inputs] + (inst.index,) * outputs
