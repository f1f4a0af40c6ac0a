"""Bodies of the DDP tests, run in each process by ``dist_helpers.spawn``.

Each body trains the same model eagerly and compiled (in the same process
group, one after the other) and compares losses and every parameter (not
tests/helpers.check: whole training loops across a process group, compared
step by step, with DDP's reducer state read on rank 0).
"""
from __future__ import annotations

import json
import os
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

import bytegraph
from bytegraph.backends.builtin import aot_eager
from bytegraph.report import write_report
from bytegraph.report.text import format_report
from bytegraph.runtime import metrics

STEPS = 3


class MLP(torch.nn.Module):
    """``depth`` Linear(width, width) layers with ReLU, then a Linear to 4 outputs;
    ``unused`` adds a layer forward never calls (for find_unused_parameters);
    layer ``float64_layer`` (if given) is float64, its input and output cast."""

    def __init__(self, width: int = 32, depth: int = 4, unused: bool = False, bias: bool = True,
                 float64_layer: int | None = None):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(width, width, bias=bias, dtype=torch.float64 if i == float64_layer else None)
            for i in range(depth)
        )
        self.head = torch.nn.Linear(width, 4, bias=bias)
        self.unused = torch.nn.Linear(width, width) if unused else None
        self.float64_layer = float64_layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            if i == self.float64_layer:
                x = torch.relu(layer(x.double())).float()
            else:
                x = torch.relu(layer(x))
        return self.head(x)


class CountingBackend:
    """aot_eager, counting the graphs it compiles."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        self.graphs.append(gm)
        return aot_eager(gm, example_inputs)


def batch(step: int, rank: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(8, width, generator=g), torch.randn(8, 4, generator=g)


def make_optimizer(name: str, params: Any) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9)
    return torch.optim.AdamW(params, lr=0.01)


def train(
    rank: int, compile_fn: Callable | None, optimizer: str, ddp_kwargs: dict, width: int = 32,
    depth: int = 4, accumulate: int = 1, bias: bool = True, ddp_out: list | None = None,
    float64_layer: int | None = None, compile_from_step: int = 0, hooked: bool = False,
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Losses of STEPS steps and the parameters after them. With ``accumulate``
    > 1, each step runs that many micro-batches, all but the last under no_sync().
    Steps before ``compile_from_step`` call the DDP module itself. ``hooked``
    gives the module a forward hook that torch marks not to be compiled."""
    torch.manual_seed(0)
    module = MLP(width, depth, unused=ddp_kwargs.get("find_unused_parameters", False), bias=bias,
                 float64_layer=float64_layer)
    if hooked:
        module.register_forward_hook(torch.compiler.disable(lambda m, args, out: out * 2))
    ddp = DDP(module, **ddp_kwargs)
    if ddp_out is not None:
        ddp_out.append(ddp)
    model = compile_fn(ddp) if compile_fn is not None else ddp
    opt = make_optimizer(optimizer, ddp.parameters())
    losses = []
    for step in range(STEPS):
        run = model if step >= compile_from_step else ddp
        opt.zero_grad()
        for micro in range(accumulate):
            x, y = batch(step * accumulate + micro, rank, width)
            if micro < accumulate - 1:
                with ddp.no_sync():
                    loss = torch.nn.functional.mse_loss(run(x), y)
                    loss.backward()
            else:
                loss = torch.nn.functional.mse_loss(run(x), y)
                loss.backward()
            losses.append(loss.detach())
        opt.step()
    return losses, [p.detach().clone() for p in module.parameters()]


def assert_same(eager: tuple, compiled: tuple) -> None:
    """Losses and parameters of two ``train`` results agree (float32 tolerances)."""
    for kind, expected, actual in (("loss", eager[0], compiled[0]), ("parameter", eager[1], compiled[1])):
        assert len(actual) == len(expected)
        for i, (e, a) in enumerate(zip(expected, actual)):
            torch.testing.assert_close(a, e, msg=lambda m, k=kind, i=i: f"{k} {i}: {m}")


def same_on_all_ranks(tensors: list[torch.Tensor]) -> None:
    """DDP keeps replicas identical: every rank holds rank 0's parameters."""
    for t in tensors:
        reference = t.clone()
        dist.broadcast(reference, src=0)
        torch.testing.assert_close(t, reference)


def compare_training(rank: int, world: int, optimizer: str, ddp_kwargs: dict, out: str | None,
                     accumulate: int = 1, wrap: str = "outer", bias: bool = True, **model: Any) -> None:
    """Eager DDP vs bytegraph-compiled DDP: same losses and parameters after STEPS steps.

    ``wrap="outer"`` compiles the DDP module, ``"inner"`` wraps a compiled module
    in DDP, ``"step"`` compiles a function that calls the DDP module. Rank 0
    writes to ``out`` the number of graphs compiled and the buckets DDP's
    reducer rebuilt after its first iteration (its parameter indices).
    ``model``: more arguments of ``train`` (``float64_layer``, ``compile_from_step``, ``hooked``).
    """
    eager = train(rank, None, optimizer, ddp_kwargs, accumulate=accumulate, bias=bias, **model)
    backend = CountingBackend()
    if wrap == "outer":
        compile_fn = lambda ddp: bytegraph.compile(ddp, backend=backend)  # noqa: E731
    elif wrap == "step":
        compile_fn = lambda ddp: bytegraph.compile(lambda x: ddp(x), backend=backend)  # noqa: E731
    else:
        def compile_fn(ddp: DDP) -> DDP:
            ddp.module = bytegraph.compile(ddp.module, backend=backend)
            return ddp
    ddps: list = []
    bytegraph.reset()
    compiled = train(rank, compile_fn, optimizer, ddp_kwargs, accumulate=accumulate, bias=bias, ddp_out=ddps,
                     **model)
    assert_same(eager, compiled)
    same_on_all_ranks(compiled[1])
    if out is not None:
        graphs = len(backend.graphs)  # (before explain: with wrap="inner" it runs the compiled module again)
        report = format_report().splitlines()[0]
        page = write_report(os.path.join(os.path.dirname(out), f"report{rank}.html"))
        with open(page) as f:
            page_says_split = "compiled as 5 after the DDP bucket split" in f.read()
        subgraphs = [g.subgraphs for stats in metrics.FRAMES.values() for g in stats.graphs]
        with torch.no_grad():  # what explain says of the same DDP module (a fresh compile)
            explained = bytegraph.explain(ddps[0])(batch(0, rank, 32)[0])
    if rank == 0 and out is not None:
        rebuilt = ddps[0]._get_ddp_logging_data().get("rebuilt_per_bucket_param_indices", "")
        with open(out, "w") as f:
            json.dump({"graphs": graphs, "ddp_buckets": rebuilt, "subgraphs": subgraphs,
                       "report": report, "explain_counts": explained.subgraph_counts, "page": page_says_split,
                       "explain": str(explained)}, f)


def bucket_order(rank: int, world: int, optimize_ddp: bool, out: str) -> None:
    """Record, in step 2 of training (after DDP rebuilt its buckets), when each
    bucket's all-reduce was launched relative to the end of backward (the
    gradient of the input, the last thing backward computes)."""
    width, depth = 32, 4
    torch.manual_seed(0)
    module = MLP(width, depth, bias=False)
    ddp = DDP(module, bucket_cap_mb=512 / 2**20)  # one weight per bucket
    events: list[str] = []

    def hook(state, bucket):  # no annotations: DDP checks them, and this module's are strings
        events.append(f"bucket{bucket.index()}")
        return default_hooks.allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, hook)
    backend = CountingBackend()
    model = bytegraph.compile(ddp, backend=backend)
    with bytegraph.config.patch(optimize_ddp=optimize_ddp):
        for step in range(2):
            events.clear()
            x, y = batch(step, rank, width)
            x.requires_grad_(True)
            x.register_hook(lambda g: events.append("input_grad"))
            torch.nn.functional.mse_loss(model(x), y).backward()
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"events": events, "graphs": len(backend.graphs)}, f)
