"""One graph per DistributedDataParallel gradient bucket.

DDP overlaps gradient communication with backward: its reducer all-reduces a
bucket of gradients as soon as every gradient in it is ready. A backend such as
AOTAutograd or inductor turns a captured graph into one autograd node, so all
parameter gradients of the graph appear together, when its whole backward has
run, and no bucket can start early. When a graph is compiled for a module that
DDP is running (``DistributedDataParallel._get_active_ddp_module()`` is set:
DDP's forward is calling its wrapped module), :func:`ddp_aware` makes the
backend compile it as a chain of subgraphs whose boundaries fall where buckets
complete, so each bucket's gradients are final when its subgraph's backward
ends (the idea of torch.compile's DDPOptimizer; the plan below is ours).

How the split is made (:func:`plan_partitions`):

1. Every graph input that is a parameter DDP reduces (``requires_grad``, not in
   ``parameters_to_ignore``) is found by identity among the example inputs; its
   *first use* is the position of the first graph node reading it.
2. Its gradient is complete once backward has passed that first use, so
   parameters complete in decreasing order of first use. The buckets are
   DDP's own: the reducer's rebuilt buckets when it has rebuilt them (a graph
   compiled after DDP's first iteration),
   else what DDP's reducer will rebuild them as, computed by DDP's own
   ``torch.distributed._compute_bucket_assignment_by_size`` over the parameters
   in that ready order (greedy by byte size, one open bucket per dtype and
   device, so parameters of different dtypes never share a bucket; a bucket
   closes once it holds at least its cap, ``first_bucket_bytes_cap`` then
   ``bucket_bytes_cap``, or the caps of ``bucket_cap_mb_list`` in turn; a
   parameter of a sparse-gradient Embedding gets a bucket of its own).
3. A bucket is complete at the first use of the parameter of its that
   completes last (the one used first). The graph is cut in front of each
   such node (the earliest one excepted: nodes before it use no reduced
   parameter and join the first subgraph). Subgraph ``k`` thus holds every
   use of the parameters of the buckets completing in it, and its backward
   (which runs before the backward of subgraphs ``< k``) finishes them.

``torch.fx.passes.split_module`` makes the subgraphs; each is compiled by the
user's backend with FakeTensor example inputs (found by running the split graph
on FakeTensors of the mode backends compile under). Graphs that switch grad mode or autocast inside
are not split (a subgraph boundary inside such a region would need the state
carried across), nor are graphs with fewer than two buckets.
``bytegraph.config.optimize_ddp = False`` turns the split off.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch
import torch.fx
from torch.fx.passes.split_module import split_module

from bytegraph import logs
from bytegraph.backends.registry import Backend
from bytegraph.config import config

#: graph nodes that switch global state inside a graph; a graph holding them is not split
_STATE_SWITCHES = frozenset({
    torch._C._set_grad_enabled, torch.amp.autocast_mode._enter_autocast, torch.amp.autocast_mode._exit_autocast,
})


def active_ddp_module() -> torch.nn.Module | None:
    """The DDP module whose forward is running its wrapped module now, or None."""
    if not torch.distributed.is_available():
        return None
    return torch.nn.parallel.DistributedDataParallel._get_active_ddp_module()


def ddp_aware(backend: Backend) -> Backend:
    """``backend``, wrapped to split graphs at DDP's buckets when a DDP forward
    is running its module (and ``config.optimize_ddp`` is on); else ``backend``."""
    ddp = active_ddp_module()
    if ddp is None or not config.optimize_ddp:
        return backend
    params = reduced_parameters(ddp)
    rule = BucketRule(bucket_caps(ddp), sparse_parameters(ddp), reducer_buckets(ddp))
    return BucketSplitBackend(backend, rule, params)


def bucket_caps(ddp: torch.nn.Module) -> list[int]:
    """Byte caps of DDP's rebuilt buckets, in bucket order (the last repeats).

    Taken from DDP's bucket settings: ``bucket_cap_mb_list`` when given, else
    the first-bucket cap then ``bucket_cap_mb`` (both in bytes).
    """
    settings = getattr(ddp, "_bucket_config", None)
    if settings is None:
        return [int(ddp.bucket_bytes_cap)]
    if settings.per_bucket_bytes_caps:
        return list(settings.per_bucket_bytes_caps)
    return [settings.first_bucket_bytes_cap, settings.bucket_bytes_cap]


def reduced_parameters(ddp: torch.nn.Module) -> dict[int, torch.nn.Parameter]:
    """The parameters DDP's reducer all-reduces, by ``id``."""
    ignored = set(getattr(ddp, "parameters_to_ignore", ()))
    return {
        id(p): p for name, p in ddp.module.named_parameters()
        if p.requires_grad and name not in ignored
    }


def sparse_parameters(ddp: torch.nn.Module) -> frozenset[int]:
    """``id``s of the parameters DDP expects sparse gradients for (those of an
    ``Embedding``/``EmbeddingBag`` with ``sparse=True``, as DDP decides)."""
    return frozenset(
        id(p) for m in ddp.module.modules()
        if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag)) and m.sparse
        for p in m.parameters(recurse=False)
    )


def reducer_buckets(ddp: torch.nn.Module) -> list[list[int]] | None:
    """The reducer's rebuilt buckets as lists of parameter ``id``s, in bucket
    order, or None before DDP has rebuilt them (its first iteration; with
    ``static_graph``, its second). Read from the reducer's own buckets
    (``GradBucket.parameters()``; getting them allocates a zero tensor per
    bucket, once per compiled graph)."""
    if not getattr(ddp, "_has_rebuilt_buckets", False):
        return None
    return [[id(p) for p in bucket.parameters()] for bucket in ddp.reducer._get_zeros_like_grad_buckets()]


@dataclasses.dataclass(frozen=True)
class BucketRule:
    """What decides DDP's buckets.

    Attributes:
        caps: bucket byte caps in bucket order; the last one repeats.
        sparse: ``id``s of parameters with sparse gradients (a bucket each).
        rebuilt: the reducer's rebuilt buckets (parameter ``id``s), when known;
            they are used as they are.
    """

    caps: list[int]
    sparse: frozenset[int] = frozenset()
    rebuilt: list[list[int]] | None = None

    def assign(self, ready: list[torch.Tensor]) -> list[list[int]]:
        """Buckets of ``ready`` (parameters in the order their gradients
        complete) as lists of positions in ``ready``, in DDP's bucket order."""
        if self.rebuilt is not None:
            position = {id(p): i for i, p in enumerate(ready)}
            buckets = [[position[i] for i in bucket if i in position] for bucket in self.rebuilt]
            return [b for b in buckets if b]
        buckets, _ = torch.distributed._compute_bucket_assignment_by_size(
            ready, self.caps, [id(p) in self.sparse for p in ready], list(range(len(ready)))
        )
        return buckets


@dataclasses.dataclass
class BucketPlan:
    """Where a graph is split.

    Attributes:
        partition: node -> subgraph index (0 first in forward order), for every
            node but placeholders and the output.
        buckets: parameter placeholder names per bucket, in DDP's bucket order
            (the bucket whose gradients complete first comes first).
    """

    partition: dict[torch.fx.Node, int]
    buckets: list[list[str]]

    @property
    def count(self) -> int:
        return 1 + max(self.partition.values(), default=0)


def plan_partitions(
    gm: torch.fx.GraphModule, example_inputs: list, params: dict[int, torch.nn.Parameter], rule: BucketRule
) -> BucketPlan:
    """The subgraph of every node of ``gm`` (see the module docstring for the rule).

    Args:
        gm: the captured graph; its placeholders match ``example_inputs``.
        example_inputs: the graph's inputs (parameters are found among them by identity).
        params: the parameters DDP reduces, by ``id``.
        rule: how DDP buckets them.
    """
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    body = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]
    position = {n: i for i, n in enumerate(body)}
    first_use: list[tuple[int, torch.fx.Node, torch.Tensor]] = []
    for node, value in zip(placeholders, example_inputs):
        uses = [position[u] for u in node.users if u in position]  # (a parameter returned as is has none)
        if uses and params.get(id(value)) is value:
            first_use.append((min(uses), node, value))
    first_use.sort(key=lambda item: -item[0])  # the order gradients complete in backward
    groups = [[first_use[i] for i in bucket] for bucket in rule.assign([value for _, _, value in first_use])]
    buckets = [[node.name for _, node, _ in group] for group in groups]
    cuts = sorted({min(index for index, _, _ in group) for group in groups})[1:]  # (see step 3)
    partition = {node: sum(1 for c in cuts if c <= i) for i, node in enumerate(body)}
    return BucketPlan(partition, buckets)


class BucketSplitBackend:
    """A backend that compiles a graph as one subgraph per DDP bucket with ``inner``.

    Called like any backend: ``(gm, example_inputs) -> callable``. The result
    takes the graph's inputs and returns its outputs, running the compiled
    subgraphs in order.
    """

    def __init__(self, inner: Backend, rule: BucketRule, params: dict[int, torch.nn.Parameter]):
        self.inner = inner
        self.rule = rule
        self.params = params
        self.__name__ = f"ddp_split({getattr(inner, '__name__', type(inner).__name__)})"

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        if any(n.target in _STATE_SWITCHES for n in gm.graph.nodes):
            return self.inner(gm, example_inputs)
        plan = plan_partitions(gm, example_inputs, self.params, self.rule)
        if logs.enabled("graph"):
            logs.get("graph").info(
                "DDP buckets (caps %s bytes%s): %s -> %d subgraphs", self.rule.caps,
                ", the reducer's rebuilt ones" if self.rule.rebuilt is not None else "", plan.buckets, plan.count
            )
        if plan.count < 2:
            return self.inner(gm, example_inputs)
        split = split_module(gm, None, lambda node: plan.partition[node], keep_original_order=True, tuple_return=True)
        _CompileSubgraphs(split, self.inner).run(*_fake_inputs(example_inputs))
        return SplitGraph(split, plan.count)


class SplitGraph:
    """What :class:`BucketSplitBackend` returns for a split graph: called like
    the graph, it runs the compiled subgraphs in order.

    Attributes:
        subgraph_count: how many subgraphs the graph was compiled as (reports
            count them: ``CompiledGraph.subgraphs``).
    """

    def __init__(self, split: torch.fx.GraphModule, count: int):
        self.split = split
        self.subgraph_count = count

    def __call__(self, *args: Any) -> Any:
        return self.split.forward(*args)


def _fake_inputs(example_inputs: list) -> list:
    """The graph's inputs as FakeTensors of the mode the backend compiles under
    (the TracingContext's, whose memo already holds them), SymInts as they are."""
    fake_mode = torch._guards.TracingContext.get().fake_mode
    return [fake_mode.from_tensor(v) if isinstance(v, torch.Tensor) else v for v in example_inputs]


class _CompileSubgraphs(torch.fx.Interpreter):
    """Runs the split graph on FakeTensors; at each subgraph, compiles it with
    the backend on the FakeTensors it receives and puts the compiled callable in
    its place."""

    def __init__(self, split: torch.fx.GraphModule, backend: Backend):
        super().__init__(split)
        self.backend = backend
        self.fake_mode = torch._guards.TracingContext.get().fake_mode

    def call_module(self, target: Any, args: tuple, kwargs: dict) -> Any:
        submodule = self.fetch_attr(target)
        with torch._guards.tracing(torch._guards.TracingContext(self.fake_mode)):
            compiled = self.backend(submodule, list(args))
        if not callable(compiled):
            raise TypeError(f"backend returned {type(compiled).__name__} for a DDP subgraph, not a callable")
        with self.fake_mode:
            result = submodule(*args, **kwargs)
        setattr(self.module, target, _Compiled(compiled))
        return result


class _Compiled(torch.nn.Module):
    """A compiled subgraph standing where its GraphModule was in the split graph."""

    def __init__(self, compiled: Callable):
        super().__init__()
        self.compiled = compiled

    def forward(self, *args: Any) -> Any:
        return self.compiled(*args)
