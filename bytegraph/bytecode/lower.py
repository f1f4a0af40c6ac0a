"""Native instructions for generated code, on the running Python (3.11-3.13).

Generated code (graph calls, value reconstruction, resume-function calls) is
written in the translator's vocabulary, CPython 3.11's, as :class:`Op` s;
:func:`lower` turns a list of them into the ``bytecode`` package's
instructions for the running version. Calls keep 3.11's stack order
(``[NULL, callable, args]``); from 3.13 :func:`lower` swaps the two slots at the
call. The other helpers adjust native instructions copied from a frame when a
graph break rewrites them.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from bytecode import Instr, Label

from bytegraph.bytecode.versions import NULL_BELOW_CALLABLE, PYTHON

NO_ARG = object()


@dataclasses.dataclass(frozen=True)
class Op:
    """One vocabulary instruction to emit: ``name`` (a 3.11 opname), ``arg``
    (as the ``bytecode`` package takes it for 3.11, or :data:`NO_ARG`) and
    the source line."""

    name: str
    arg: Any = NO_ARG
    lineno: int | None = None


def lower(items: Sequence[Op | Instr | Label]) -> list[Instr | Label]:
    """``items`` with every :class:`Op` replaced by the native instructions
    doing the same on the running Python (labels and native instructions pass
    through)."""
    out: list[Instr | Label] = []
    kw_names: tuple[str, ...] | None = None
    for item in items:
        if not isinstance(item, Op):
            out.append(item)
            continue

        def native(name: str, *arg: Any) -> Instr:
            return Instr(name, *arg, lineno=item.lineno)

        name, arg = item.name, item.arg
        if PYTHON == (3, 11):
            out.append(native(name) if arg is NO_ARG else native(name, arg))
        elif name == "PRECALL":
            continue
        elif name == "LOAD_METHOD" and NULL_BELOW_CALLABLE:
            out.append(native("LOAD_ATTR", (True, arg)))
        elif name == "LOAD_METHOD":  # the plain attribute, in 3.11's order [NULL, attribute]
            out += [native("LOAD_ATTR", (False, arg)), native("PUSH_NULL"), native("SWAP", 2)]
        elif name == "LOAD_ATTR" and isinstance(arg, str):
            out.append(native("LOAD_ATTR", (False, arg)))
        elif name == "KW_NAMES" and not NULL_BELOW_CALLABLE:
            kw_names = arg
        elif name == "CALL" and not NULL_BELOW_CALLABLE:
            out += [native(op, *a) for op, *a in _swap_below(arg)]
            if kw_names is not None:
                out += [native("LOAD_CONST", kw_names), native("CALL_KW", arg)]
                kw_names = None
            else:
                out.append(native("CALL", arg))
        elif name == "CALL_FUNCTION_EX" and not NULL_BELOW_CALLABLE:
            out += [native(op, *a) for op, *a in _swap_below(1 + (arg & 1))]
            out.append(native(name, arg))
        elif name == "LOAD_CLOSURE" and PYTHON >= (3, 13):
            out.append(native("LOAD_FAST", arg))
        elif name == "MAKE_FUNCTION" and PYTHON >= (3, 13):
            out.append(native("MAKE_FUNCTION"))
            out += [native("SET_FUNCTION_ATTRIBUTE", bit) for bit in (8, 4, 2, 1) if arg & bit]
        elif name.startswith("POP_JUMP_FORWARD_IF_"):
            out.append(native(name.replace("_FORWARD", ""), arg))
        else:
            out.append(native(name) if arg is NO_ARG else native(name, arg))
    return out


def _swap_below(count: int) -> list[tuple]:
    """Exchange the two stack slots under the top ``count`` ones (3.11's
    ``[NULL, callable]`` to 3.13's ``[callable, NULL]``)."""
    if count == 0:
        return [("SWAP", 2)]
    return [("SWAP", count + 1), ("SWAP", count + 2), ("SWAP", count + 1)]


def without_null(instr: Instr) -> tuple[Instr, tuple[bool, bool]] | None:
    """For a native instruction that pushes a NULL with a callable (a method
    or global load for a call): the same load without the NULL, and where the
    NULL was among the two slots (True marks it). None for other instructions."""
    name, arg = instr.name, instr.arg
    if name == "LOAD_METHOD":
        plain = Instr("LOAD_ATTR", arg, location=instr.location)
    elif name in ("LOAD_GLOBAL", "LOAD_ATTR") and isinstance(arg, tuple) and arg[0]:
        plain = Instr(name, (False, arg[1]), location=instr.location)
    elif name == "LOAD_SUPER_ATTR" and arg[0]:
        plain = Instr(name, (False, arg[1], arg[2]), location=instr.location)
    else:
        return None
    return plain, ((True, False) if NULL_BELOW_CALLABLE else (False, True))


def landing(opname: str, lineno: int | None) -> list[Instr]:
    """What must follow a label that native ``opname`` jumps to when it is not
    the compiler's target: from 3.12 an exhausted ``FOR_ITER`` (and a finished
    ``SEND``) skips the instructions after its target that would pop the
    iterator, so they are put there (never run)."""
    if opname == "FOR_ITER" and PYTHON == (3, 12):
        return [Instr("END_FOR", lineno=lineno)]
    if opname == "FOR_ITER" and PYTHON >= (3, 13):
        return [Instr("END_FOR", lineno=lineno), Instr("POP_TOP", lineno=lineno)]
    if opname == "SEND" and PYTHON >= (3, 12):
        return [Instr("END_SEND", lineno=lineno)]
    return []
