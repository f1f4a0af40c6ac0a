"""The DDP bucket split of one graph (bytegraph/backends/ddp.py), in one process:
bucket packing checked against DDP's own C++ assignment, and the split's
invariant (every use of a bucket's parameters lies in or after the subgraph
whose backward completes it). The split is under test, not a program's values."""
import pytest
import torch
import torch.distributed as dist

import bytegraph
from bytegraph.backends.ddp import BucketRule, plan_partitions

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="needs torch.distributed")


class Tied(torch.nn.Module):
    """Linear layers of mixed sizes; the first layer's weight is used again at the
    end. With ``mixed``, the middle layer is float64 (DDP never puts parameters
    of different dtypes in one bucket)."""

    def __init__(self, mixed=False):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 32, dtype=torch.float64 if mixed else None)
        self.c = torch.nn.Linear(32, 8)

    def forward(self, x):
        h = torch.relu(self.a(x))
        h = torch.relu(self.b(h.to(self.b.weight.dtype))).to(x.dtype)
        return self.c(h) @ self.a.weight


def _trace(model, x):
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, example_inputs))
        return gm.forward

    bytegraph.compile(model, backend=backend)(x)
    return seen[0]


@pytest.mark.parametrize("mixed", [False, True], ids=["float32", "float32+float64"])
@pytest.mark.parametrize("caps", [[200, 600], [64], [10**9]])
def test_plan_matches_ddp_bucketing_and_keeps_uses_after_their_cut(caps, mixed):
    model = Tied(mixed)
    gm, example_inputs = _trace(model, torch.randn(2, 8))
    params = {id(p): p for p in model.parameters()}
    plan = plan_partitions(gm, example_inputs, params, BucketRule(caps))

    by_name = {n.name: v for n, v in zip([n for n in gm.graph.nodes if n.op == "placeholder"], example_inputs)}
    order = [by_name[name] for bucket in plan.buckets for name in bucket]
    assert sorted(map(id, order)) == sorted(params)  # every parameter, once
    expected, _ = dist._compute_bucket_assignment_by_size(order, caps, [False] * len(order))
    sizes = [len(b) for b in plan.buckets]
    assert [len(b) for b in expected] == sizes  # DDP's reducer packs the same buckets

    body = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]
    parts = [plan.partition[n] for n in body]
    assert parts == sorted(parts)  # subgraphs follow graph order
    placeholder = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    cut_of = []
    for bucket in plan.buckets:
        uses = [u for name in bucket for u in placeholder[name].users]
        cut_of.append(min(plan.partition[u] for u in uses))  # where its backward completes
    dtypes = [{by_name[name].dtype for name in bucket} for bucket in plan.buckets]
    assert all(len(d) == 1 for d in dtypes)  # a bucket holds one dtype
    # every subgraph but the first starts where a bucket completes (its backward finishes it)
    assert plan.count == len(set(cut_of))
    index = {n: i for i, n in enumerate(body)}
    completes_at = {min(index[u] for name in bucket for u in placeholder[name].users) for bucket in plan.buckets}
    starts = {min(i for i, p in enumerate(parts) if p == k) for k in range(1, plan.count)}
    assert starts == set(sorted(completes_at)[1:])
    if not mixed:  # one dtype: buckets fill in gradient-ready order, so they complete in order
        assert cut_of == sorted(cut_of, reverse=True)
    if caps == [10**9]:
        assert plan.count == (2 if mixed else 1)  # the float64 bucket completes inside the graph



def test_parameter_placeholder_used_only_by_the_output_is_left_out_of_the_buckets():
    graph = torch.fx.Graph()
    x, w, returned = graph.placeholder("x"), graph.placeholder("w"), graph.placeholder("returned")
    graph.output((graph.call_function(torch.mul, (x, w)), returned))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    params = [torch.nn.Parameter(torch.ones(3)) for _ in range(2)]
    plan = plan_partitions(gm, [torch.ones(3), *params], {id(p): p for p in params}, BucketRule([1]))
    assert plan.buckets == [["w"]] and plan.count == 1
