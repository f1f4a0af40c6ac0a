"""What the HTML report shows, gathered from :data:`bytegraph.runtime.metrics.FRAMES`.

:func:`build` turns the per-frame records into views, in the user's terms
(:mod:`bytegraph.report.frames`): the graph breaks, each once with the
compiles that met it; the source view of every function that fed a graph or
broke one (:mod:`bytegraph.report.source`); per compiled frame, each
compile's guards summarised by what they protect
(:mod:`bytegraph.guards.summary`), its graphs' FX code with each node linked
to the line that made it, and the generated code (decompiled beside its
``dis`` listing, with the guard function) for the page's "generated details".
Times are in milliseconds.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any

import torch

from bytegraph.breaks import UserFrame
from bytegraph.bytecode.resume import user_label
from bytegraph.guards.source import Source, user_name
from bytegraph.guards.summary import GuardGroup, summarise
from bytegraph.report.decompile import Decompiled, decompile
from bytegraph.report.frames import (
    BreakSummary,
    FrameGroup,
    break_summaries,
    frame_groups,
    reword,
    user_frame_label,
    value_names,
)
from bytegraph.report.source import SourceFile, build_files
from bytegraph.runtime import metrics
from bytegraph.runtime.cache import ResumeFunction
from bytegraph.runtime.metrics import CompileRecord, FrameStats

_DELETIONS = re.compile(r";\s+[\w\s=]+= None$")  # FX's ``;  x = y = None`` after a node's last use


@dataclasses.dataclass
class NodeLine:
    """One line of a graph's FX code: the text, and for a node, where it came from.

    Attributes:
        text: the code (without FX's ``x = None`` deletions).
        shape: the node's value, ``float32[2, s0, 32]``.
        anchor: the id of its row (a node's line only).
        where: the innermost user frame that made it.
        source_anchor: the id of that line in the source view.
        stack: the end of the user stack it was made under, in words (see :func:`_stack_words`).
    """

    text: str
    shape: str = ""
    anchor: str = ""
    where: UserFrame | None = None
    source_anchor: str = ""
    stack: str = ""


@dataclasses.dataclass
class GraphInput:
    """One placeholder: its name in the FX code, its value and where the frame reads it."""

    name: str
    shape: str
    dtype: str
    source: str


@dataclasses.dataclass
class GraphView:
    number: int  # 0-based over the whole report
    frame: str
    ops: int
    backend_ms: float
    inputs: list[GraphInput]
    outputs: list[str]
    lines: list[NodeLine]
    subgraphs: int = 1  # graphs the backend compiled it as (the DDP bucket split makes more)


@dataclasses.dataclass
class CompileView:
    """One compile of a frame: a cache entry.

    Attributes:
        entry: a compile of a folded module entry frame (or its resume function).
        runs_natively_from: lines where the transformed code hands over to the
            original code (a graph break), in order.
        continues_in: labels of the resume functions it calls.
    """

    number: int  # 1-based within the frame
    label: str
    reason: str | None  # the guard failure that caused it, in words (None for the first)
    trace_ms: float
    import_ms: float
    guard_groups: list[GuardGroup]
    guard_count: int
    guard_us: float | None
    guard_code: str
    graphs: list[GraphView]
    decompiled: Decompiled
    entry: bool = False
    runs_natively_from: list[int] = dataclasses.field(default_factory=list)
    continues_in: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class FrameView:
    anchor: str
    label: str
    filename: str
    lineno: int
    resume: bool
    native: bool
    breaks: list[BreakSummary]
    recompiles: list[tuple[str, int]]  # each reason in words, and how many recompiles it caused
    compiles: list[CompileView]  # the entry frame's (folded) first, then the frame's own
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
        own = [c for c in self.compiles if not c.entry]
        return own[-1].guard_count if own else 0

    @property
    def recompile_count(self) -> int:
        return sum(n for _, n in self.recompiles)


@dataclasses.dataclass
class Report:
    files: list[SourceFile]
    frames: list[FrameView]
    breaks: list[BreakSummary]
    graphs: int
    ops: int
    recompiles: int
    trace_ms: float
    backend_ms: float
    subgraphs: int = 0  # what the backends compiled the graphs as (more after the DDP bucket split)

    @property
    def recompile_rows(self) -> list[tuple[FrameView, str, int]]:
        """``(frame, reason, times)`` for every recompile reason of every frame."""
        return [(f, reason, n) for f in self.frames for reason, n in f.recompiles]


def build(frames: dict[int, FrameStats] | None = None) -> Report:
    """The report of ``frames`` (default: everything compiled so far)."""
    groups = frame_groups((metrics.FRAMES if frames is None else frames).values())
    breaks = break_summaries(groups)
    modules: dict[int, torch.fx.GraphModule] = {}  # graph number (over the whole report) -> its module
    views = [_frame(group, f"fr{i}", modules, breaks) for i, group in enumerate(groups)]
    graphs = [g for f in views for g in f.graphs]
    files = build_files(((g.number, modules[g.number], {line.anchor.split("-", 1)[1]: line.anchor
                                                          for line in g.lines if line.anchor}) for g in graphs), breaks)
    anchors = {(f.filename, line.number): line.anchor for f in files for fn in f.functions for line in fn.lines}
    for g in graphs:
        for line in g.lines:
            if line.where is not None:
                line.source_anchor = anchors.get((line.where.filename, line.where.lineno), "")
    return Report(
        files, views, breaks,
        graphs=len(graphs),
        ops=sum(g.ops for g in graphs),
        recompiles=sum(f.recompile_count for f in views),
        trace_ms=sum(f.trace_ms for f in views),
        backend_ms=sum(f.backend_ms for f in views),
        subgraphs=sum(g.subgraphs for g in graphs),
    )


def _frame(group: FrameGroup, anchor: str, modules: dict[int, torch.fx.GraphModule],
           breaks: list[BreakSummary]) -> FrameView:
    compiles = []
    for stats in group.members:
        names = value_names(stats)
        entry = stats is not group.main
        label = group.label if not entry else "module entry" if stats.wraps is not None else user_label(stats.code)
        compiles += [_compile(c, i + 1, modules, group.label, names, label, entry) for i, c in enumerate(stats.compiles)]
    backend = sum(g.compile_seconds - g.import_seconds for s in group.members for g in s.graphs) * 1000
    trace = sum(s.trace_seconds - s.import_seconds for s in group.members) * 1000 - backend
    met = [b for b in breaks if group.label in b.frames]
    return FrameView(anchor, group.label, group.filename, group.lineno, group.resume, group.ran_natively, met,
                     group.recompile_reasons(), compiles, trace, backend)


#: what a compile whose cache entry was dropped (``bytegraph.reset``, a guarded object freed) shows as its code
DROPPED = Decompiled("# the cache entry was dropped: its transformed code is gone", {}, "", True)


def _compile(c: CompileRecord, number: int, modules: dict[int, torch.fx.GraphModule], frame: str,
             names: dict[Source, str], label: str, entry: bool) -> CompileView:
    graphs, labels = [], {}
    for g in c.graphs:
        view = _graph(g, len(modules), frame, names)
        modules[view.number] = g.graph_module
        labels[id(g.compiled)] = f"__compiled_graph_{view.number}"
        graphs.append(view)
    decompiled = decompile(c.code, labels) if c.code is not None else DROPPED
    backend = sum(g.compile_seconds - g.import_seconds for g in c.graphs)
    resumes = [user_label(v.code) for v in decompiled.names.values() if isinstance(v, ResumeFunction)]
    return CompileView(
        number, label, reword(c.reason, names) if c.reason else None,
        (c.seconds - backend - c.import_seconds) * 1000, c.import_seconds * 1000,
        summarise(c.guards, names, c.guard_code, c.guard_seconds), len(c.guards),
        c.guard_seconds * 1e6 if c.guard_seconds is not None else None, c.guard_code, graphs, decompiled,
        entry, decompiled.native_lines, resumes,
    )


def _graph(g: Any, number: int, frame: str, names: dict[Source, str]) -> GraphView:
    gm: torch.fx.GraphModule = g.graph_module
    by_name = {node.name: node for node in gm.graph.nodes}
    renamed = _stack_placeholders(gm, names)
    rename = re.compile(r"\b(" + "|".join(map(re.escape, renamed)) + r")\b") if renamed else None
    lines = []
    for text in gm.code.strip("\n").splitlines()[1:]:  # (the ``def forward(...)`` line: the inputs table)
        if not text.strip():
            continue
        name = text.strip().split(" = ", 1)[0] if " = " in text else ""
        node = by_name.get(name)
        stack = node.meta.get("user_stack", ()) if node is not None else ()
        shown = _DELETIONS.sub("", text[4:] if text.startswith("    ") else text)
        if rename is not None:
            shown = rename.sub(lambda m: renamed[m.group(1)], shown)
        lines.append(NodeLine(
            shown, _shape(node.meta.get("example_value")) if node is not None else "",
            f"g{number}-{name}" if node is not None else "", stack[-1] if stack else None, "",
            _stack_words(stack),
        ))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    output = next((n for n in gm.graph.nodes if n.op == "output"), None)
    outs = [a for a in (output.args[0] if output is not None else ()) if isinstance(a, torch.fx.Node)]
    return GraphView(
        number, frame, g.op_count, (g.compile_seconds - g.import_seconds) * 1000,
        [_input(n, names, renamed.get(n.name, n.name)) for n in placeholders],
        [f"{n.name}: {_shape(n.meta.get('example_value'))}" for n in outs],
        lines, g.subgraphs,
    )


def _stack_words(stack: tuple[UserFrame, ...], most: int = 3) -> str:
    """The last ``most`` frames of a node's user stack that are not nested
    functions (decorators' wrappers): ``GPT2Block.forward line 277 ->
    GPT2Attention.forward line 190``."""
    named = [(user_frame_label(f), f.lineno) for f in stack]
    kept = [(name, line) for name, line in named if "<locals>" not in name] or named[-1:]
    return " \u2192 ".join(f"{name} line {line}" for name, line in kept[-most:])


def _stack_placeholders(gm: torch.fx.GraphModule, names: dict[Source, str]) -> dict[str, str]:
    """Placeholders of a resume function's stack values (``l____stack0``) ->
    a name from the expression that made the value (``self_gate_x``), unused in the graph."""
    taken = {node.name for node in gm.graph.nodes}
    out = {}
    for node in gm.graph.nodes:
        source = node.meta.get("source") if node.op == "placeholder" else None
        if source is None or not user_name(source).startswith("<stack value"):
            continue
        words = user_name(source, names).rsplit(" (line", 1)[0]
        base = re.sub(r"\W+", "_", words).strip("_").lower() or "value"
        name, n = base if base[0].isalpha() else f"v_{base}", 1
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        taken.add(name)
        out[node.name] = name
    return out


def _input(node: torch.fx.Node, names: dict[Source, str], shown: str) -> GraphInput:
    value = node.meta.get("example_value")
    source = node.meta.get("source")
    where = user_name(source, names) if source is not None else ""
    if isinstance(value, torch.Tensor):
        kind = type(value).__name__ if type(value) not in (torch.Tensor, torch.nn.Parameter) else ""
        shape = "[" + ", ".join(str(s) for s in value.shape) + "]"
        return GraphInput(shown, shape + (f" {kind}" if kind and "Fake" not in kind else ""),
                          str(value.dtype).removeprefix("torch."), where)
    return GraphInput(shown, _shape(value), "", where)


def _shape(value: Any) -> str:
    """``f32[s0, 3]`` for a (fake) tensor, the type and value for a scalar."""
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        return f"{dtype}[{', '.join(str(s) for s in value.shape)}]"
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return f"{type(value).__name__} {value}"
    if isinstance(value, (int, float, bool)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_shape(v) for v in value) + ")"
    return type(value).__name__ if value is not None else ""
