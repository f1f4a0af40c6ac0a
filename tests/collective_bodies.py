"""Bodies of the collective tests, run in each process by ``dist_helpers.spawn``."""
from __future__ import annotations

import json

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import bytegraph
from bytegraph.backends.builtin import aot_eager
from bytegraph.runtime import metrics


def reduce_then_scale(x):
    return funcol.all_reduce(x * 2, "sum", dist.group.WORLD) + 1


def gather_then_scatter(x):
    gathered = funcol.all_gather_tensor(x, 0, dist.group.WORLD)
    return gathered.sum() + funcol.reduce_scatter_tensor(gathered, "avg", 0, dist.group.WORLD)


def broadcast_by_ranks(x):
    return funcol.broadcast(x.sin(), 1, [0, 1]) * 3


def inplace_all_reduce(x):
    y = x * 2
    dist.all_reduce(y)
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    return y + 1


def async_all_reduce(x):
    y = x * 2
    work = dist.all_reduce(y, async_op=True)
    work.wait()
    return y + 1


def inplace_broadcast(x):
    y = x * 2
    dist.broadcast(y, src=0)
    return y + 1


def grad_through_all_reduce(x):
    return (funcol.all_reduce(x.tanh(), "sum", dist.group.WORLD) ** 2).sum()


CASES = [reduce_then_scale, gather_then_scatter, broadcast_by_ranks, inplace_all_reduce,
         async_all_reduce, inplace_broadcast, grad_through_all_reduce]


def compare_all(rank: int, world: int, fullgraph: dict[str, bool], out: str) -> None:
    """:func:`compare` for every case; rank 0 writes ``{name: {"graphs", "breaks"}}`` to ``out``."""
    found = {fn.__name__: compare(fn, fullgraph[fn.__name__]) for fn in CASES}
    if rank == 0:
        with open(out, "w") as f:
            json.dump(found, f)


def compare(fn, fullgraph: bool) -> dict[str, int]:
    """Eager vs compiled (aot_eager) ``fn``: same result, same mutation of the
    input, same input gradient. Returns the graph and graph-break counts."""
    name = fn.__name__
    counts = {"graphs": 0}

    def backend(gm, example_inputs):
        counts["graphs"] += 1
        return aot_eager(gm, example_inputs)

    results = []
    for compiled in (False, True):
        x = (torch.arange(8.0).reshape(4, 2) + dist.get_rank()).requires_grad_(name.startswith("grad"))
        arg = x if x.requires_grad else x.clone()
        f = bytegraph.compile(fn, backend=backend, fullgraph=fullgraph) if compiled else fn
        with metrics.recording() as recorder:
            out_value = f(arg)
        grad = torch.autograd.grad(out_value, x)[0] if x.requires_grad else None
        if isinstance(out_value, funcol.AsyncCollectiveTensor):  # eager's lazy result: the same values
            out_value = out_value.wait()
        results.append((out_value, arg.detach(), grad, [b.gb_type for b in recorder.breaks]))
    (e_out, e_arg, e_grad, _), (c_out, c_arg, c_grad, breaks) = results
    assert type(c_out) is torch.Tensor
    torch.testing.assert_close(c_out, e_out)
    torch.testing.assert_close(c_arg, e_arg)
    if e_grad is not None:
        torch.testing.assert_close(c_grad, e_grad)
    return {"graphs": counts["graphs"], "breaks": breaks}  # the graph breaks' gb_types
