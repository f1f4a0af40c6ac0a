"""Decoded CPython 3.11 instructions, as the translator walks them.

:func:`decode` turns a code object into a list of :class:`Instruction` with jump
targets resolved to list indices, ``EXTENDED_ARG``/``CACHE`` entries dropped and
the source line of each instruction filled in. This is the only module that
knows how ``dis`` presents 3.11 bytecode to the translator.
"""
from __future__ import annotations

import bisect
import dataclasses
import dis
import sys
import types
from functools import lru_cache
from typing import Any

if sys.version_info[:2] != (3, 11):  # pragma: no cover - guarded at import of bytegraph
    raise ImportError("bytegraph's translator models CPython 3.11 bytecode only")

JUMP_OPNAMES = frozenset(dis.opname[op] for op in dis.hasjrel + dis.hasjabs)
UNCONDITIONAL_JUMPS = frozenset(
    {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE"}
)
TERMINATORS = frozenset({"RETURN_VALUE", "RAISE_VARARGS", "RERAISE"}) | UNCONDITIONAL_JUMPS


@dataclasses.dataclass(frozen=True, slots=True)
class Instruction:
    """One decoded instruction.

    Attributes:
        index: position in the decoded list.
        opname: e.g. ``"LOAD_FAST"``.
        arg: the raw oparg (with EXTENDED_ARG folded in), or None.
        argval: the resolved argument (name, constant, comparison string...).
        offset: byte offset in ``co_code``.
        lineno: source line, or None for synthetic instructions.
        target: index of the jump target for jump instructions, else None.
    """

    index: int
    opname: str
    arg: int | None
    argval: Any
    offset: int
    lineno: int | None
    target: int | None = None

    def __repr__(self) -> str:
        arg = "" if self.arg is None else f" {self.argval!r}"
        return f"<{self.index}@{self.offset} {self.opname}{arg}>"


@dataclasses.dataclass(frozen=True)
class ExceptionEntry:
    """One row of the 3.11 exception table, in instruction indices."""

    start: int  # first covered instruction index
    end: int  # one past the last covered instruction index
    target: int  # handler instruction index
    depth: int  # stack depth the handler expects
    lasti: bool


@dataclasses.dataclass(frozen=True)
class DecodedCode:
    """A decoded code object.

    Attributes:
        instructions: the instructions, jump targets as indices.
        offset_to_index: byte offset -> instruction index.
        exception_table: the 3.11 exception table, in instruction indices.
    """

    instructions: tuple[Instruction, ...]
    offset_to_index: dict[int, int]
    exception_table: tuple[ExceptionEntry, ...]

    def handler_for(self, index: int) -> ExceptionEntry | None:
        """The innermost exception-table entry covering instruction ``index``."""
        best = None
        for entry in self.exception_table:
            if entry.start <= index < entry.end:
                if best is None or entry.start >= best.start:
                    best = entry
        return best


@lru_cache(maxsize=4096)
def decode(code: types.CodeType) -> DecodedCode:
    """Decode ``code`` (cached per code object)."""
    everything = list(dis.get_instructions(code))
    raw = [i for i in everything if i.opname not in ("EXTENDED_ARG", "CACHE")]
    offset_to_index = {ins.offset: n for n, ins in enumerate(raw)}
    for ins in everything:  # a jump may target the EXTENDED_ARG prefix of an instruction
        if ins.offset not in offset_to_index:
            offset_to_index[ins.offset] = bisect.bisect_left([i.offset for i in raw], ins.offset)
    lineno = code.co_firstlineno
    out = []
    for n, ins in enumerate(raw):
        if ins.positions is not None and ins.positions.lineno is not None:
            lineno = ins.positions.lineno
        target = offset_to_index[ins.argval] if ins.opname in JUMP_OPNAMES else None
        argval = code.co_consts[ins.arg] if ins.opname == "KW_NAMES" else ins.argval  # dis leaves it unresolved
        out.append(Instruction(n, ins.opname, ins.arg, argval, ins.offset, lineno, target))
    offsets = [ins.offset for ins in out]
    table = []
    for entry in dis.Bytecode(code).exception_entries:
        start = bisect.bisect_left(offsets, entry.start)
        end = bisect.bisect_left(offsets, entry.end)
        table.append(ExceptionEntry(start, end, offset_to_index[entry.target], entry.depth, entry.lasti))
    return DecodedCode(tuple(out), offset_to_index, tuple(table))
