"""A copy of a function whose calls pass their callable through a router first.

``torch.compiler.disable(fn, recursive=False)`` asks for ``fn``'s own frame to
run natively while the functions it calls are compiled: torch does that with
its frame hook. bytegraph has none, so it runs a copy of ``fn`` whose code
hands each call's callable to ``router`` (the runtime's, which returns the
callee made to compile its own frame, or the callee unchanged) just before the
call. The copy has ``fn``'s globals, closure, defaults and name, so it reads
and writes what ``fn`` would.

Calls whose callable is loaded together with its NULL slot (a global, a
method, ``super()``'s attribute) and calls whose callable is one load next to
an explicit ``PUSH_NULL`` (a local, a cell, a constant; from 3.13 any
expression, which ends at the ``PUSH_NULL``) are routed, and below 3.13 so is a
callable that a subscript or a call returns (``fns[0](x)``, ``partial(f)(x)``).
A callable built otherwise below 3.13 (``(a or b)(x)``) and calls inside nested
functions and comprehensions run as ``fn`` would run them.
"""
from __future__ import annotations

import types
from typing import Any, Callable

from bytecode import Bytecode, Instr

from bytegraph.bytecode.analysis import stack_producers
from bytegraph.bytecode.instructions import decode
from bytegraph.bytecode.lower import Op, lower, without_null
from bytegraph.bytecode.versions import NULL_BELOW_CALLABLE

#: native instructions whose one output, pushed last, can be a callable next to an explicit PUSH_NULL
_ONE_LOAD = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_NAME",
                       "LOAD_CONST", "LOAD_GLOBAL", "LOAD_ATTR", "BINARY_SUBSCR", "CALL"})


def route_calls(fn: types.FunctionType, router: Callable[[Any], Any]) -> types.FunctionType:
    """``fn`` with each call's callable replaced by ``router(callable)`` at the call."""
    code = fn.__code__
    loads_after_null = _loads_after_null(code) if NULL_BELOW_CALLABLE else frozenset()
    out: list = []
    index = -1
    for item in Bytecode.from_code(code):
        if not isinstance(item, Instr):
            out.append(item)
            continue
        index += 1
        plain = without_null(item)
        if plain is not None:  # [NULL, callable] (3.11, 3.12) or [callable, NULL] (3.13)
            load, (null_first, _) = plain
            out += [load, *_route(router, item)]
            out += _null_below(item) if null_first else [Instr("PUSH_NULL", location=item.location)]
        elif item.name == "PUSH_NULL" and not NULL_BELOW_CALLABLE:  # 3.13: the callable is on top
            out += [*_route(router, item), item]
        else:
            out.append(item)
            if index in loads_after_null:
                out += _route(router, item)
    bc = Bytecode.from_code(code)
    bc.clear()
    bc.extend(out)
    routed = types.FunctionType(bc.to_code(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    routed.__kwdefaults__ = fn.__kwdefaults__
    routed.__qualname__ = fn.__qualname__
    routed.__dict__.update(fn.__dict__)
    return routed


def _route(router: Callable[[Any], Any], at: Instr) -> list[Instr]:
    """Native instructions replacing the value on top of the stack by ``router(value)``."""
    lineno = at.lineno if isinstance(at.lineno, int) else None
    ops = [Op("LOAD_CONST", router, lineno), Op("PUSH_NULL", lineno=lineno), Op("SWAP", 3, lineno),
           Op("PRECALL", 1, lineno), Op("CALL", 1, lineno)]
    return lower(ops)


def _null_below(at: Instr) -> list[Instr]:
    return [Instr("PUSH_NULL", location=at.location), Instr("SWAP", 2, location=at.location)]


def _loads_after_null(code: types.CodeType) -> frozenset[int]:
    """Native indices (3.11, 3.12) of one-instruction loads of a callable that
    an explicit ``PUSH_NULL`` precedes in its call."""
    insts = decode(code).instructions
    found = set()
    for inst in insts:
        if inst.opname not in ("CALL", "CALL_FUNCTION_EX"):
            continue
        producers = stack_producers(code, inst.index)
        args = inst.arg if inst.opname == "CALL" else 1 + (inst.arg & 1)
        if producers is None or len(producers) < args + 2:
            continue
        null, callable_ = producers[-args - 2], producers[-args - 1]
        if null is None or callable_ is None or isinstance(null, str) or isinstance(callable_, str):
            continue
        load = insts[callable_]
        if insts[null].opname == "PUSH_NULL" and load.opname in _ONE_LOAD and load.start + 1 == load.end:
            found.add(load.native)  # (below 3.13 a one-member group is one native instruction)
    return frozenset(found)
