"""Assemble new code objects with the ``bytecode`` package.

A transformed frame keeps the original's signature, cells and free variables:
its body starts with the frame prologue (``MAKE_CELL`` per cell variable,
``COPY_FREE_VARS``, ``RESUME``) and continues with generated instructions.
"""
from __future__ import annotations

import dis
import io
import types
from typing import Sequence

from bytecode import Bytecode, CellVar, Instr, Label

from bytegraph.logs import enabled, get


def prologue(code: types.CodeType, lineno: int) -> list[Instr]:
    """The frame prologue of ``code`` (the same instructions in 3.11-3.13)."""
    out = [Instr("MAKE_CELL", CellVar(name), lineno=lineno) for name in code.co_cellvars]
    if code.co_freevars:
        out.append(Instr("COPY_FREE_VARS", len(code.co_freevars), lineno=lineno))
    out.append(Instr("RESUME", 0, lineno=lineno))
    return out


def max_depth(instructions: Sequence[object]) -> int:
    """Deepest stack reached by a straight-line run of instructions from depth 0
    (labels and markers ignored, jumps taken as fall-through)."""
    depth = deepest = 0
    for ins in instructions:
        if isinstance(ins, Instr):
            depth += ins.stack_effect(jump=False)
            deepest = max(deepest, depth)
    return deepest


def to_code(bc: Bytecode, stacksize: int) -> types.CodeType:
    """``bc`` as a code object with an explicit stack size.

    Generated code may contain a copy of an original body entered in the
    middle of a ``try`` region, which defeats the ``bytecode`` package's
    stack-depth analysis; callers give an upper bound instead (the original
    code's stack size plus what the generated parts push). Handler depths are
    kept from the original exception table.
    """
    return bc.to_code(stacksize=stacksize, compute_exception_stack_depths=False)


def assemble(
    template: types.CodeType, body: Sequence[Instr | Label], extra_stack: int = 0, name: str | None = None
) -> types.CodeType:
    """A code object with ``template``'s signature, cells and free variables and
    the instructions ``prologue(template) + body``; ``extra_stack`` is the
    depth the generated parts of ``body`` may add to ``template``'s own.

    Raises:
        ValueError / RuntimeError: from the ``bytecode`` package when the
            instruction list is malformed (a bug in bytegraph).
    """
    bc = Bytecode.from_code(template)
    bc.clear()
    bc.extend(prologue(template, template.co_firstlineno))
    bc.extend(body)
    if name is not None:
        bc.name = name
    code = to_code(bc, template.co_stacksize + extra_stack)
    if enabled("bytecode"):
        text = io.StringIO()
        dis.dis(code, file=text)
        get("bytecode").info("transformed code of %s:\n%s", template.co_name, text.getvalue())
    return code
