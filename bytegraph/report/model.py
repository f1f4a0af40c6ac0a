"""What the HTML report shows, gathered from :data:`bytegraph.runtime.metrics.FRAMES`.

:func:`build` turns the per-frame records into views: one
:class:`FunctionView` per user function (its own frame and the resume
functions that continue it), with its source lines marked by graph breaks and
graphs, each compile's guards in words and decompiled code, each graph's FX
code linked to user lines. Times are in milliseconds.
"""
from __future__ import annotations

import dataclasses
import inspect
import itertools
import linecache
from typing import Any

import torch

from bytegraph.breaks import UserFrame
from bytegraph.bytecode.resume import RESUME_ORIGIN
from bytegraph.guards.describe import GuardWords
from bytegraph.report.decompile import Decompiled, decompile
from bytegraph.runtime import metrics
from bytegraph.runtime.metrics import BreakRecord, CompileRecord, FrameStats


@dataclasses.dataclass
class NodeLine:
    """One line of a graph's FX code: the text, and for a node, where it came from."""

    text: str
    shape: str = ""
    where: UserFrame | None = None
    anchor: str = ""  # the id of the user line in the page, when it is shown


@dataclasses.dataclass
class GraphView:
    number: int  # 0-based over the whole report
    frame: str
    ops: int
    backend_ms: float
    inputs: list[str]
    outputs: list[str]
    lines: list[NodeLine]
    user_lines: set[int]  # lines of the function its nodes came from
    subgraphs: int = 1  # graphs the backend compiled it as (the DDP bucket split makes more)


@dataclasses.dataclass
class CompileView:
    number: int  # 1-based within the frame
    reason: str | None  # the guard failure that caused it (None for the first)
    trace_ms: float
    guards: list[tuple[str, list[str]]]
    guard_count: int
    guard_code: str
    graphs: list[GraphView]
    decompiled: Decompiled


@dataclasses.dataclass
class FrameView:
    anchor: str
    name: str
    filename: str
    lineno: int
    resume: bool
    native: bool
    breaks: list[BreakRecord]
    recompile_reasons: list[str]
    compiles: list[CompileView]
    trace_ms: float
    backend_ms: float

    @property
    def graphs(self) -> list[GraphView]:
        return [g for c in self.compiles for g in c.graphs]

    @property
    def ops(self) -> int:
        return sum(g.ops for g in self.graphs)

    @property
    def guards(self) -> int:
        return self.compiles[-1].guard_count if self.compiles else 0


@dataclasses.dataclass
class SourceLine:
    number: int
    text: str
    anchor: str
    breaks: list[BreakRecord]
    graphs: list[int]  # numbers of the graphs with nodes from this line


@dataclasses.dataclass
class FunctionView:
    anchor: str
    name: str
    filename: str
    lineno: int
    source: list[SourceLine]
    frames: list[FrameView]


@dataclasses.dataclass
class Report:
    functions: list[FunctionView]
    frames: list[FrameView]
    graphs: int
    ops: int
    breaks: int
    recompiles: int
    trace_ms: float
    backend_ms: float
    subgraphs: int = 0  # what the backends compiled the graphs as (more after the DDP bucket split)


def build(frames: dict[int, FrameStats] | None = None) -> Report:
    """The report of ``frames`` (default: everything compiled so far)."""
    stats = list((metrics.FRAMES if frames is None else frames).values())
    counter = itertools.count()  # graph numbers, over the whole report
    by_origin: dict[int, list[FrameStats]] = {}
    for s in stats:
        origin = RESUME_ORIGIN.get(s.code, s.code)
        by_origin.setdefault(id(origin), []).append(s)
    functions, all_frames = [], []
    for n, group in enumerate(by_origin.values()):
        origin = next((s for s in group if s.code not in RESUME_ORIGIN), group[0])
        fn_anchor = f"fn{n}"
        frame_views = [_frame(s, f"{fn_anchor}-fr{i}", counter, fn_anchor) for i, s in enumerate(group)]
        all_frames += frame_views
        functions.append(FunctionView(
            fn_anchor, origin.name, origin.filename, origin.lineno,
            _source(origin, fn_anchor, [b for s in group for b in s.breaks],
                    [g for f in frame_views for g in f.graphs]),
            frame_views,
        ))
    distinct = metrics.distinct_breaks(stats)
    return Report(
        functions, all_frames,
        graphs=sum(len(f.graphs) for f in all_frames),
        ops=sum(f.ops for f in all_frames),
        breaks=len(distinct),
        recompiles=sum(len(f.recompile_reasons) for f in all_frames),
        trace_ms=sum(f.trace_ms for f in all_frames),
        backend_ms=sum(f.backend_ms for f in all_frames),
        subgraphs=sum(g.subgraphs for f in all_frames for c in f.compiles for g in c.graphs),
    )


def _frame(s: FrameStats, anchor: str, counter: Any, fn_anchor: str) -> FrameView:
    compiles = [_compile(c, i + 1, counter, s.name, fn_anchor) for i, c in enumerate(s.compiles)]
    backend = sum(g.compile_seconds for g in s.graphs) * 1000
    return FrameView(
        anchor, s.name, s.filename, s.lineno, s.code in RESUME_ORIGIN, s.ran_natively, list(s.breaks),
        list(s.recompile_reasons), compiles, s.trace_seconds * 1000 - backend, backend,
    )


def _compile(c: CompileRecord, number: int, counter: Any, frame: str, fn_anchor: str) -> CompileView:
    graphs = []
    labels = {}
    for g in c.graphs:
        view = _graph(g, next(counter), frame, fn_anchor)
        labels[id(g.compiled)] = f"__compiled_graph_{view.number}"
        graphs.append(view)
    return CompileView(
        number, c.reason, c.seconds * 1000 - sum(g.compile_seconds for g in c.graphs) * 1000,
        GuardWords(c.guards).grouped(), len(c.guards), c.guard_code, graphs, decompile(c.code, labels),
    )


def _graph(g: Any, number: int, frame: str, fn_anchor: str) -> GraphView:
    gm: torch.fx.GraphModule = g.graph_module
    by_name = {node.name: node for node in gm.graph.nodes}
    lines, user_lines = [], set()
    for text in gm.code.strip("\n").splitlines():
        name = text.strip().split(" = ", 1)[0] if " = " in text else ""
        node = by_name.get(name)
        stack = node.meta.get("user_stack", ()) if node is not None else ()
        where = stack[-1] if stack else None
        anchor = ""
        if stack:
            user_lines.add(stack[0].lineno)
            anchor = f"{fn_anchor}-L{stack[0].lineno}"
        shape = _shape(node.meta.get("example_value")) if node is not None else ""
        lines.append(NodeLine(text, shape, where, anchor))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    output = next((n for n in gm.graph.nodes if n.op == "output"), None)
    outs = [a for a in (output.args[0] if output is not None else ()) if isinstance(a, torch.fx.Node)]
    return GraphView(
        number, frame, g.op_count, g.compile_seconds * 1000,
        [f"{n.name}: {_shape(n.meta.get('example_value'))}" for n in placeholders],
        [f"{n.name}: {_shape(n.meta.get('example_value'))}" for n in outs],
        lines, user_lines, g.subgraphs,
    )


def _shape(value: Any) -> str:
    """``f32[s0, 3]`` for a (fake) tensor, the type and value for a scalar."""
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        return f"{dtype}[{', '.join(str(s) for s in value.shape)}]"
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return f"{type(value).__name__} {value}"
    if isinstance(value, (int, float, bool)):
        return f"{type(value).__name__} {value!r}"
    return type(value).__name__ if value is not None else ""


def _source(stats: FrameStats, fn_anchor: str, breaks: list[BreakRecord], graphs: list[GraphView]) -> list[SourceLine]:
    """The function's source lines, each with the graph breaks and graphs it is part of.
    A frame reported under another name (an OptimizedModule's entry frame, shown
    as the module's ``forward``) shows the source at that name's location."""
    code = stats.code
    try:
        if stats.filename == code.co_filename and stats.lineno == code.co_firstlineno:
            lines, start = inspect.getsourcelines(code)
        else:
            start = stats.lineno
            lines = inspect.getblock(linecache.getlines(stats.filename)[start - 1:])
    except (OSError, TypeError, IndexError, SyntaxError):
        text = linecache.getline(stats.filename, stats.lineno)
        lines, start = ([text] if text else []), stats.lineno
    start = max(start, 1)
    views = []
    for i, text in enumerate(lines):
        number = start + i
        here = [b for b in breaks if _line_in(b, stats.filename) == number]
        views.append(SourceLine(number, text.rstrip("\n"), f"{fn_anchor}-L{number}", here,
                                [g.number for g in graphs if number in g.user_lines]))
    return views


def _line_in(record: BreakRecord, filename: str) -> int | None:
    """The line of the compiled function (the outermost frame of the break's
    user stack) where the break happened."""
    frames = [f for f in record.user_stack if f.filename == filename]
    return frames[0].lineno if frames else None
