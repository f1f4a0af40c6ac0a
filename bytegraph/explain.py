"""``bytegraph.explain``: what compiling a call produced, in one object.

Mirrors TorchDynamo's ``explain``: ``bytegraph.explain(fn)(*args, **kwargs)``
compiles ``fn`` afresh (its own caches, backend ``eager``), runs the call once
and returns an :class:`ExplainOutput`. A function or module that is already
compiled is explained as what it wraps.
"""
from __future__ import annotations

import collections
import dataclasses
import linecache
import types
from typing import Any, Callable

import torch

from bytegraph.api import compile as bytegraph_compile
from bytegraph.guards.summary import GuardGroup, summarise
from bytegraph.report.frames import break_key, frame_groups, reword, user_frame_label, value_names
from bytegraph.runtime import cache, metrics
from bytegraph.runtime.metrics import BreakRecord
from bytegraph.runtime.wrappers import OptimizedModule
from bytegraph.variables.builder import COMPILED_FUNCTION


@dataclasses.dataclass
class ExplainOutput:
    """The graphs, graph breaks and guards of one compiled call.

    Attributes:
        graphs: the captured fx GraphModules, in compile order (resume
            functions included).
        graph_count: ``len(graphs)``.
        graph_break_count: number of graph breaks, each counted once (a
            break inside an inlined callee that then compiles as a frame of
            its own, e.g. a module's ``forward``, is one break, not two).
        break_reasons: each break's gb_type, reason text, explanation, hints
            and user stack.
        ops_per_graph: for each graph, the targets of its call nodes.
        guards: the guards of every compile in words, one line per value
            (``x: float32 tensor of shape (s0, 3); s0 >= 2``; see
            :mod:`bytegraph.guards.describe`), each compile's by what they
            protect (inputs first, global torch state last; see
            :mod:`bytegraph.guards.summary`).
        compile_times: seconds spent converting each frame (tracing, guards,
            codegen and backend).
        compile_frames: the frame of each compile, as the user knows it
            (``f`` or ``f, resumed at line 12``).
        backend_times / import_times: the parts of each compile time spent in
            the backend and importing modules on first use.
        guard_summaries: each compile's guards grouped by what they protect.
        recompile_reasons: why frames were compiled again during the call,
            in words.
        result: what the call returned.
        subgraph_counts: for each graph, how many graphs the backend compiled
            it as (more than 1 when DDP's bucket split cut it, one per bucket group).

    ``op_count`` is torch's explain's figure: the graphs' ``call_function``
    nodes (method calls such as ``x.sin()`` are not counted).
    """

    graphs: list[torch.fx.GraphModule]
    graph_count: int
    graph_break_count: int
    break_reasons: list[BreakRecord]
    ops_per_graph: list[list[str]]
    guards: list[str]
    compile_times: list[float]
    recompile_reasons: list[str]
    result: Any = None
    subgraph_counts: list[int] = dataclasses.field(default_factory=list)
    compile_frames: list[str] = dataclasses.field(default_factory=list)
    backend_times: list[float] = dataclasses.field(default_factory=list)
    import_times: list[float] = dataclasses.field(default_factory=list)
    guard_summaries: list[list[GuardGroup]] = dataclasses.field(default_factory=list)

    @property
    def op_count(self) -> int:
        return sum(n.op == "call_function" for gm in self.graphs for n in gm.graph.nodes)

    def __str__(self) -> str:
        lines = [
            f"Graph count: {self.graph_count}",
            f"Graph break count: {self.graph_break_count}",
            f"Op count: {sum(len(ops) for ops in self.ops_per_graph)}",
        ]
        if self.break_reasons:
            lines.append("Graph breaks (each once):")
            lines += _breaks(self.break_reasons)
        for n, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"Ops in graph {n}: {', '.join(ops) if ops else '(none)'}")
        for n, count in enumerate(self.subgraph_counts, 1):
            if count > 1:
                lines.append(f"Graph {n} split into {count} subgraphs at DDP buckets")
        if self.recompile_reasons:
            lines.append("Recompile reasons (the guard that failed):")
            counts = collections.Counter(self.recompile_reasons)
            lines += [f"  {r}" + (f" (x{n})" if n > 1 else "") for r, n in counts.items()]
        lines.append(f"Guards ({len(self.guards)}):")
        for frame, groups in zip(self.compile_frames, self.guard_summaries):
            lines.append(f"  {frame}:")
            for group in groups:
                cost = f", {group.seconds * 1e6:.2f} us a call" if group.seconds is not None else ""
                lines.append(f"    {group.name} ({len(group.guards)} guard(s){cost}):")
                lines += [f"      {what}: {facts}" for what, facts in group.lines]
        lines.append("Compile times (s), per compile:")
        times = zip(self.compile_frames, self.compile_times, self.backend_times, self.import_times)
        for n, (frame, total, backend, imported) in enumerate(times, 1):
            lines.append(f"  {n}. {frame}: {total:.3f} (tracing {total - backend - imported:.3f}, "
                         f"backend {backend:.3f}, imports {imported:.3f})")
        return "\n".join(lines)


def _breaks(records: list[BreakRecord]) -> list[str]:
    """Each graph break once, with how many times it was met, its explanation, hints and user stack."""
    counts = collections.Counter(break_key(b) for b in records)
    lines, seen = [], set()
    for br in records:
        key = break_key(br)
        if key in seen:
            continue
        seen.add(key)
        met = f" (met {counts[key]} times)" if counts[key] > 1 else ""
        where = br.user_stack[-1] if br.user_stack else None
        place = f" at {where.filename}:{where.lineno}" if where is not None else ""
        lines.append(f"  {len(seen)}. [{br.gb_type}] {br.context}{place}{met}")
        if br.explanation:
            lines.append(f"       Explanation: {br.explanation}")
        lines += [f"       Hint: {hint}" for hint in br.hints]
        for frame in br.user_stack:
            lines.append(f'       File "{frame.filename}", line {frame.lineno}, in {user_frame_label(frame)}')
            text = linecache.getline(frame.filename, frame.lineno).strip() if frame.lineno else ""
            if text:
                lines.append(f"         {text}")
    return lines


def explain(fn: Callable | torch.nn.Module) -> Callable[..., ExplainOutput]:
    """``explain(fn)(*args, **kwargs)`` compiles and runs ``fn`` once and
    returns an :class:`ExplainOutput` describing the compilation.

    Raises:
        TypeError: when ``fn`` is not a function, method or ``nn.Module``.
    """
    if not callable(fn):
        raise TypeError(f"bytegraph.explain: fn must be a function or nn.Module, got {type(fn).__name__}")

    fn = uncompiled(fn)

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        with metrics.recording() as rec, cache.isolated():
            result = bytegraph_compile(fn, backend="eager")(*args, **kwargs)
        graphs = [g.graph_module for c in rec.compiles for g in c.graphs]
        breaks = metrics.distinct(rec.breaks)
        subgraph_counts = [g.subgraphs for c in rec.compiles for g in c.graphs]
        ops = [
            [_target_name(n.target) for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
            for gm in graphs
        ]
        labels = {id(s): g.label if s is g.main else f"{g.label} (module entry)"
                  for g in frame_groups(metrics.FRAMES.values()) for s in g.members}
        summaries = [summarise(c.guards, value_names(s), c.guard_code, c.guard_seconds)
                     for c, s in zip(rec.compiles, rec.compiled_frames)]
        return ExplainOutput(
            graphs=graphs,
            graph_count=len(graphs),
            graph_break_count=len(breaks),
            break_reasons=breaks,
            ops_per_graph=ops,
            guards=[f"{what}: {facts}" for groups in summaries for group in groups for what, facts in group.lines],
            compile_times=[c.seconds for c in rec.compiles],
            recompile_reasons=[reword(r, value_names(s)) for r, s in zip(rec.recompile_reasons, rec.recompiled_frames)],
            result=result,
            subgraph_counts=subgraph_counts,
            compile_frames=[labels.get(id(s), s.name) for s in rec.compiled_frames],
            backend_times=[sum(g.compile_seconds - g.import_seconds for g in c.graphs) for c in rec.compiles],
            import_times=[c.import_seconds for c in rec.compiles],
            guard_summaries=summaries,
        )

    return run


def uncompiled(fn: Callable | torch.nn.Module) -> Callable | torch.nn.Module:
    """What a compiled function or module wraps (``fn`` itself when it is not compiled)."""
    while True:
        if isinstance(fn, OptimizedModule):
            fn = fn._orig_mod
        elif hasattr(fn, COMPILED_FUNCTION):
            fn = getattr(fn, COMPILED_FUNCTION)
        elif isinstance(fn, types.MethodType) and hasattr(fn.__func__, COMPILED_FUNCTION):
            fn = types.MethodType(getattr(fn.__func__, COMPILED_FUNCTION), fn.__self__)
        else:
            return fn


def _target_name(target: Any) -> str:
    if isinstance(target, str):
        return target
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return f"torch.ops.{target}"  # "torch.ops.mylib.twice.default"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))
    return f"{module}.{name}" if module and module != "builtins" else name
