"""Assemble new code objects with the ``bytecode`` package.

A transformed frame keeps the original's signature, cells and free variables:
its body starts with the 3.11 prologue (``MAKE_CELL`` per cell variable,
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
    """The 3.11 frame prologue of ``code``."""
    out = [Instr("MAKE_CELL", CellVar(name), lineno=lineno) for name in code.co_cellvars]
    if code.co_freevars:
        out.append(Instr("COPY_FREE_VARS", len(code.co_freevars), lineno=lineno))
    out.append(Instr("RESUME", 0, lineno=lineno))
    return out


def assemble(template: types.CodeType, body: Sequence[Instr | Label], name: str | None = None) -> types.CodeType:
    """A code object with ``template``'s signature, cells and free variables and
    the instructions ``prologue(template) + body``.

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
    code = bc.to_code()
    if enabled("bytecode"):
        text = io.StringIO()
        dis.dis(code, file=text)
        get("bytecode").info("transformed code of %s:\n%s", template.co_name, text.getvalue())
    return code
