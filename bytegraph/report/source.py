"""The source view: every function whose code fed a graph or broke one.

Each FX node records the user stack it was made under (``meta["user_stack"]``:
:class:`~bytegraph.breaks.UserFrame` s with their code objects, outermost
first), so a node belongs to every line on that stack: the line of
``forward`` that calls ``self.attn(...)``, the line of ``Attention.forward``
that calls ``self.qkv(x)``, and the line of ``Linear.forward`` that calls
``F.linear``. :func:`build_files` gathers, per function (its original code:
a resume function's lines are its function's), each line's graphs and its
ops, counted both ways: ``ops``, the nodes made under the line (calls
included), and ``own``, the nodes made by the line itself; graph breaks mark
the line they happened at and, as "break inside", the lines that called into
it. Functions are grouped per file, files ordered by the ops made in them,
the user's own files (outside site-packages and the standard library) first.
"""
from __future__ import annotations

import dataclasses
import inspect
import linecache
import os
import sysconfig
import types
from typing import Any, Iterable

import torch

from bytegraph.bytecode.resume import RESUME_ORIGIN
from bytegraph.report.frames import BreakSummary


@dataclasses.dataclass
class SourceLine:
    """One line of a traced function.

    Attributes:
        number: its line number in the file.
        text: the line.
        anchor: the id of its row in the page.
        ops: graph nodes made under it (by the line or by what it calls).
        own: graph nodes the line made itself.
        graphs: ``(graph number, id of its first node made under the line)``.
        breaks: graph breaks that happened at this line.
        breaks_inside: graph breaks in functions this line called.
        folded: for a row standing for lines left out (a library function's
            lines that fed nothing), how many; 0 for a line.
    """

    number: int
    text: str
    anchor: str
    ops: int = 0
    own: int = 0
    graphs: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    breaks: list[BreakSummary] = dataclasses.field(default_factory=list)
    breaks_inside: list[BreakSummary] = dataclasses.field(default_factory=list)
    folded: int = 0

    @property
    def marked(self) -> bool:
        return bool(self.ops or self.breaks or self.breaks_inside)


@dataclasses.dataclass
class SourceFunction:
    """One traced function: its lines, from its ``def``; ``ops``, the graph
    nodes made under any of its lines."""

    name: str
    lineno: int
    lines: list[SourceLine]
    ops: int = 0

    @property
    def own(self) -> int:
        return sum(line.own for line in self.lines)

    @property
    def breaks(self) -> int:
        return sum(len(line.breaks) for line in self.lines)


@dataclasses.dataclass
class SourceFile:
    """The traced functions of one file."""

    filename: str
    anchor: str
    functions: list[SourceFunction]
    user: bool  # the user's own file (not a library's)
    ops: int = 0  # nodes made under a line of this file
    own: int = 0  # nodes made by lines of this file

    @property
    def breaks(self) -> int:
        return sum(f.breaks for f in self.functions)


@dataclasses.dataclass
class _Line:
    """What is gathered for one (code, line) before the file is read."""

    nodes: dict[int, None] = dataclasses.field(default_factory=dict)  # id(node), in order
    own: int = 0
    graphs: dict[int, str] = dataclasses.field(default_factory=dict)
    breaks: list[BreakSummary] = dataclasses.field(default_factory=list)
    breaks_inside: list[BreakSummary] = dataclasses.field(default_factory=list)


def build_files(graphs: Iterable[tuple[int, torch.fx.GraphModule, dict[str, str]]],
                breaks: list[BreakSummary]) -> list[SourceFile]:
    """The source view of ``graphs`` (``(graph number, module, node name ->
    anchor of its row)``) and ``breaks``."""
    by_code: dict[types.CodeType, dict[int, _Line]] = {}

    def line(frame: Any) -> _Line | None:
        code = getattr(frame, "code", None)
        if code is None or frame.lineno is None:
            return None
        code = RESUME_ORIGIN.get(code, code)
        return by_code.setdefault(code, {}).setdefault(frame.lineno, _Line())

    for number, gm, anchors in graphs:
        for node in gm.graph.nodes:
            stack = node.meta.get("user_stack") if node.op in ("call_function", "call_method") else None
            if not stack:
                continue
            for depth, frame in enumerate(stack):
                here = line(frame)
                if here is None or id(node) in here.nodes:
                    continue
                here.nodes[id(node)] = None
                here.own += depth == len(stack) - 1
                here.graphs.setdefault(number, anchors.get(node.name, ""))
    for summary in breaks:
        stack = summary.record.user_stack
        for depth, frame in enumerate(stack):
            here = line(frame)
            if here is not None:
                (here.breaks if depth == len(stack) - 1 else here.breaks_inside).append(summary)
    files: dict[str, list[tuple[types.CodeType, dict[int, _Line]]]] = {}
    for code, lines in by_code.items():
        files.setdefault(code.co_filename, []).append((code, lines))
    out = []
    for filename, codes in files.items():
        functions = _merged([_function(code, lines, f"f{len(out)}")
                             for code, lines in sorted(codes, key=lambda c: c[0].co_firstlineno)])
        counted = {n for _, lines in codes for here in lines.values() for n in here.nodes}
        own = sum(here.own for _, lines in codes for here in lines.values())
        user = is_user_code(filename)
        if not user:
            for fn in functions:
                fn.lines = _folded(fn.lines)
        out.append(SourceFile(filename, f"f{len(out)}", functions, user, len(counted), own))
    out.sort(key=lambda f: (not f.user, -f.own, -f.ops, -f.breaks))
    for i, f in enumerate(out):  # anchors in page order
        _reanchor(f, f"f{i}")
    return out


def _function(code: types.CodeType, gathered: dict[int, _Line], anchor: str) -> SourceFunction:
    """``code``'s source lines with what was gathered for them."""
    try:
        lines, start = inspect.getsourcelines(code)
    except (OSError, TypeError, IndexError):
        lines, start = [], code.co_firstlineno
    start = max(start, 1)
    numbers = range(start, start + len(lines))
    texts = dict(zip(numbers, (text.rstrip("\n") for text in lines)))
    for number in gathered:  # a line outside the block (a decorator's, a one-line lambda's)
        if number not in texts:
            texts[number] = linecache.getline(code.co_filename, number).rstrip("\n")
    out = []
    for number in sorted(texts):
        here = gathered.get(number)
        view = SourceLine(number, texts[number], f"{anchor}-L{number}")
        if here is not None:
            view.ops, view.own = len(here.nodes), here.own
            view.graphs = sorted(here.graphs.items())
            view.breaks, view.breaks_inside = here.breaks, here.breaks_inside
        out.append(view)
    nodes = {n for here in gathered.values() for n in here.nodes}
    return SourceFunction(code.co_qualname, min(texts, default=code.co_firstlineno), out, len(nodes))


def _merged(functions: list[SourceFunction]) -> list[SourceFunction]:
    """Functions whose lines overlap (a nested function and its enclosing one)
    shown once: the outer one's lines, with the inner one's counts."""
    out: list[SourceFunction] = []
    for fn in functions:
        outer = next((o for o in out if o.lines and fn.lineno <= o.lines[-1].number), None)
        if outer is None:
            out.append(fn)
            continue
        rows = {line.number: line for line in outer.lines}
        for line in fn.lines:
            row = rows.get(line.number)
            if row is None:
                rows[line.number] = line
            elif line.ops or line.breaks or line.breaks_inside:
                row.ops, row.own = max(row.ops, line.ops), row.own + line.own
                row.graphs = sorted({**dict(line.graphs), **dict(row.graphs)}.items())
                row.breaks += line.breaks
                row.breaks_inside += line.breaks_inside
        outer.lines = [rows[n] for n in sorted(rows)]
        outer.ops = max(outer.ops, fn.ops)
    return out


#: lines kept around a marked line of a library function; longer runs of unmarked lines are folded
_CONTEXT = 1


def _folded(lines: list[SourceLine]) -> list[SourceLine]:
    """A library function's lines with each run of unmarked lines (two or
    more) far from a marked one left out, as one row saying how many (its
    ``def`` line stays)."""
    marked = [i for i, line in enumerate(lines) if line.marked]
    keep = {0} | {j for i in marked for j in range(i - _CONTEXT, i + _CONTEXT + 1)}
    out: list[SourceLine] = []
    run: list[SourceLine] = []
    for i, line in enumerate([*lines, None]):
        if line is not None and i not in keep:
            run.append(line)
            continue
        if len(run) == 1:
            out += run
        elif run:
            out.append(SourceLine(run[0].number, "", f"{run[0].anchor}-folded", folded=len(run)))
        run = []
        if line is not None:
            out.append(line)
    return out


def _reanchor(f: SourceFile, anchor: str) -> None:
    f.anchor = anchor
    for fn in f.functions:
        for line in fn.lines:
            line.anchor = f"{anchor}-L{line.number}" + ("-folded" if line.folded else "")


_LIBRARY_DIRS = tuple(
    os.path.normpath(p) + os.sep for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib",
                                                                                   "platlib")} if p
)


def is_user_code(filename: str) -> bool:
    """Whether ``filename`` is the user's own code: not in site-packages or
    the standard library (torch, transformers and ``functools`` are libraries)."""
    path = os.path.normpath(os.path.abspath(filename))
    return not (path.startswith(_LIBRARY_DIRS) or f"{os.sep}site-packages{os.sep}" in path
                or f"{os.sep}dist-packages{os.sep}" in path)
