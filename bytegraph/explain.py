"""``bytegraph.explain``: what compiling a call produced, in one object.

Mirrors TorchDynamo's ``explain``: ``bytegraph.explain(fn)(*args, **kwargs)``
compiles ``fn`` afresh (its own caches, backend ``eager``), runs the call once
and returns an :class:`ExplainOutput`. A function or module that is already
compiled is explained as what it wraps.
"""
from __future__ import annotations

import dataclasses
import types
from typing import Any, Callable

import torch

from bytegraph.api import compile as bytegraph_compile
from bytegraph.guards.describe import describe_guards
from bytegraph.runtime import metrics
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
        break_reasons: each break's gb_type, reason text and user stack.
        ops_per_graph: for each graph, the targets of its call nodes.
        guards: the guards of every compiled frame in words, one line per
            value (``x: float32 tensor of shape (s0, 3); s0 >= 2``; see
            :mod:`bytegraph.guards.describe`).
        compile_times: seconds spent converting each frame (tracing, guards,
            codegen and backend).
        recompile_reasons: why frames were compiled again during the call.
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
            lines.append("Break reasons:")
            for n, br in enumerate(self.break_reasons, 1):
                lines.append(f"  {n}. [{br.gb_type}] {br.reason}")
                lines += [f"       {frame}" for frame in br.user_stack]
        for n, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"Ops in graph {n}: {', '.join(ops) if ops else '(none)'}")
        for n, count in enumerate(self.subgraph_counts, 1):
            if count > 1:
                lines.append(f"Graph {n} split into {count} subgraphs at DDP buckets")
        if self.recompile_reasons:
            lines.append("Recompile reasons:")
            lines += [f"  {r}" for r in self.recompile_reasons]
        lines.append(f"Guards ({len(self.guards)}):")
        lines += [f"  {g}" for g in self.guards]
        lines.append("Compile times (s): " + ", ".join(f"{t:.3f}" for t in self.compile_times))
        return "\n".join(lines)


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
        with metrics.recording() as rec:
            result = bytegraph_compile(fn, backend="eager")(*args, **kwargs)
        graphs = [g.graph_module for c in rec.compiles for g in c.graphs]
        breaks = metrics.distinct(rec.breaks)
        subgraph_counts = [g.subgraphs for c in rec.compiles for g in c.graphs]
        ops = [
            [_target_name(n.target) for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
            for gm in graphs
        ]
        return ExplainOutput(
            graphs=graphs,
            graph_count=len(graphs),
            graph_break_count=len(breaks),
            break_reasons=breaks,
            ops_per_graph=ops,
            guards=[line for c in rec.compiles for line in describe_guards(c.guards)],
            compile_times=[c.seconds for c in rec.compiles],
            recompile_reasons=list(rec.recompile_reasons),
            result=result,
            subgraph_counts=subgraph_counts,
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
