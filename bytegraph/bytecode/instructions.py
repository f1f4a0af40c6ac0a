"""Decoded instructions, as the translator walks them.

:func:`decode` turns a code object of the running Python into a list of
:class:`Instruction` in one vocabulary, CPython 3.11's, whatever the version
(:mod:`.versions` rewrites 3.12 and 3.13 instructions into it), with jump
targets resolved to list indices, ``EXTENDED_ARG``/``CACHE`` entries dropped and
the source line of each instruction filled in.

One native instruction may become several vocabulary instructions, and a short
native run may become one group (3.13's ``MAKE_FUNCTION`` with its
``SET_FUNCTION_ATTRIBUTE`` s): each instruction knows its group
(``start``/``end``) and the native instruction the group begins at
(``native``), which is where a graph break inside the group runs natively.
"""
from __future__ import annotations

import bisect
import dataclasses
import dis
import types
from functools import lru_cache
from typing import Any

from bytegraph.bytecode.versions import models_handler, native_instructions, vocabulary

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
        native: index (among the native instructions, as the ``bytecode``
            package counts them) of the first native instruction of its group.
        start, end: decoded indices of its group's first instruction and of
            the first instruction after the group.
        prelude: native opnames to run before entering the group natively
            (see :class:`~.versions.Member`).
    """

    index: int
    opname: str
    arg: int | None
    argval: Any
    offset: int
    lineno: int | None
    target: int | None = None
    native: int = 0
    start: int = 0
    end: int = 0
    prelude: tuple[str, ...] = ()

    def __repr__(self) -> str:
        arg = "" if self.arg is None else f" {self.argval!r}"
        return f"<{self.index}@{self.offset} {self.opname}{arg}>"


@dataclasses.dataclass(frozen=True)
class ExceptionEntry:
    """One row of the exception table, in instruction indices."""

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
        exception_table: the exception table the translator follows, in
            instruction indices (see :func:`~.versions.models_handler`; a
            range whose handler is a ``CLEANUP_THROW`` goes to the handler
            covering that instruction, where it would re-raise).
        native_count: how many native instructions the code has.
        native_depths: native instruction index -> stack depth of the handler
            of every exception-table entry starting there.
    """

    instructions: tuple[Instruction, ...]
    offset_to_index: dict[int, int]
    exception_table: tuple[ExceptionEntry, ...]
    native_count: int
    native_depths: dict[int, int]

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
    natives = native_instructions(everything)
    groups = []  # (first native, native count, members)
    n = 0
    while n < len(natives):
        count, members = vocabulary(code, natives, n)
        groups.append((n, count, members))
        n += count
    offset_to_index: dict[int, int] = {}
    starts = []
    index = 0
    for first, count, members in groups:
        for native in natives[first : first + count]:
            offset_to_index[native.offset] = index
        starts.append(index)
        index += len(members)
    native_offsets = [ins.offset for ins in natives]
    for ins in everything:  # a jump may target the EXTENDED_ARG prefix of an instruction
        if ins.offset not in offset_to_index:
            following = natives[bisect.bisect_left(native_offsets, ins.offset)].offset
            offset_to_index[ins.offset] = offset_to_index[following]
    lineno = code.co_firstlineno
    out: list[Instruction] = []
    for (first, count, members), start in zip(groups, starts):
        ins = natives[first]
        if ins.positions is not None and ins.positions.lineno is not None:
            lineno = ins.positions.lineno
        for member in members:
            target = offset_to_index[member.jump] if member.jump is not None else None
            out.append(Instruction(len(out), member.opname, member.arg, member.argval, ins.offset, lineno,
                                   target, first, start, start + len(members), member.prelude))
    offsets = [ins.offset for ins in out]
    by_offset = {ins.offset: ins for ins in natives}
    table = []
    depths = {}
    entries = list(dis.Bytecode(code).exception_entries)
    for entry in entries:
        depths[bisect.bisect_left(native_offsets, entry.start)] = entry.depth
        handler = entry
        if not models_handler(by_offset[entry.target]):
            # what passes it by goes where the handler would re-raise it: the entry covering the handler
            handler = next((e for e in entries if by_offset[entry.target].opname == "CLEANUP_THROW"
                            and e.start <= entry.target < e.end and models_handler(by_offset[e.target])), None)
            if handler is None:
                continue
        start = bisect.bisect_left(offsets, entry.start)
        end = bisect.bisect_left(offsets, entry.end)
        table.append(ExceptionEntry(start, end, offset_to_index[handler.target], handler.depth, handler.lasti))
    return DecodedCode(tuple(out), offset_to_index, tuple(table), len(natives), depths)
