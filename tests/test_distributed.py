"""DDP compiled by bytegraph in real gloo processes (2 ranks, CPU, localhost).

Each test spawns its processes (``dist_helpers.spawn``), bounded in time, and
compares the compiled training run with the eager one inside the workers.
"""
import functools
import json

import pytest
import torch.distributed as dist

from tests import collective_bodies, ddp_bodies, dtensor_bodies, fsdp_bodies
from tests.dist_helpers import spawn

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")


def _read(path):
    with open(path) as f:
        return json.load(f)


def test_ddp_sgd_matches_eager_one_graph_per_bucket(tmp_path):
    out = str(tmp_path / "result.json")
    # bias-free Linear(32, 32) x4 + Linear(32, 4): a 512-byte cap puts each weight in a bucket of its own
    spawn(functools.partial(ddp_bodies.compare_training, bias=False), "sgd", {"bucket_cap_mb": 512 / 2**20}, out)
    result = _read(out)
    print(result)
    assert len(result["ddp_buckets"].split(",")) == 5  # what DDP's reducer made
    assert result["graphs"] == 5
    # one captured graph, compiled as 5; the run report and explain say so
    assert result["subgraphs"] == [5] and "1 graph(s) compiled as 5 after the DDP bucket split" in result["report"]
    assert result["page"]  # the HTML report's totals
    assert result["explain_counts"] == [5] and "Graph 1 split into 5 subgraphs at DDP buckets" in result["explain"]


@pytest.mark.slow
@pytest.mark.parametrize("compile_from_step", [0, 1], ids=["compiled_first", "compiled_after_rebuild"])
def test_ddp_split_buckets_by_dtype_as_ddp_does(tmp_path, compile_from_step):
    # bias-free Linear(32, 32) x4 (the third float64) + Linear(32, 4); gradients
    # complete head, layer 3, 2, 1, 0. With a 6000-byte cap DDP buckets each
    # dtype on its own, so the float64 weight (8192 bytes) is a bucket of its own.
    # Compiled first, the split computes DDP's buckets; compiled in step 2 (after
    # the reducer rebuilt its buckets), it reads the reducer's
    out = str(tmp_path / "result.json")
    kwargs = {"bias": False, "float64_layer": 2, "compile_from_step": compile_from_step}
    spawn(functools.partial(ddp_bodies.compare_training, **kwargs), "adamw", {"bucket_cap_mb": 6000 / 2**20}, out)
    result = _read(out)
    print(result)
    buckets = [[int(i) for i in bucket.split()] for bucket in result["ddp_buckets"].split(",")]
    assert all((2 in bucket) == (bucket == [2]) for bucket in buckets)  # the float64 weight is alone
    # parameter i is layer i's weight: a bucket completes at its first layer, one graph each
    assert result["graphs"] == len({min(bucket) for bucket in buckets}) == 3


@pytest.mark.slow
@pytest.mark.parametrize("wrap", ["outer", "inner"])
def test_ddp_module_with_hook_torch_marks_not_to_compile(tmp_path, wrap):
    # the hook runs natively around the compiled forward; the module's native
    # call from there (and explain's compile of DDP over an OptimizedModule) runs
    # the module, never the compiled call again (it recursed without end)
    out = str(tmp_path / "result.json")
    kwargs = {"bias": False, "hooked": True, "wrap": wrap}
    spawn(functools.partial(ddp_bodies.compare_training, **kwargs), "sgd", {"bucket_cap_mb": 512 / 2**20}, out)
    result = _read(out)
    assert result["graphs"] == 5 and result["subgraphs"] == [5]  # still split, one graph per bucket


@pytest.mark.slow
@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
@pytest.mark.parametrize("wrap", ["outer", "inner", "step"])
def test_ddp_training_matches_eager(tmp_path, optimizer, wrap):
    out = str(tmp_path / "result.json")
    spawn(functools.partial(ddp_bodies.compare_training, wrap=wrap), optimizer, {"bucket_cap_mb": 4224 / 2**20}, out)
    assert _read(out)["graphs"] >= 2


@pytest.mark.slow
@pytest.mark.parametrize("ddp_kwargs", [
    {"static_graph": True}, {"find_unused_parameters": True}, {"gradient_as_bucket_view": True},
], ids=["static_graph", "find_unused_parameters", "gradient_as_bucket_view"])
def test_ddp_options_match_eager(tmp_path, ddp_kwargs):
    spawn(ddp_bodies.compare_training, "adamw", {"bucket_cap_mb": 4224 / 2**20, **ddp_kwargs}, None)


@pytest.mark.slow
def test_ddp_no_sync_accumulation_matches_eager(tmp_path):
    spawn(functools.partial(ddp_bodies.compare_training, accumulate=2), "sgd", {"bucket_cap_mb": 4224 / 2**20}, None)


@pytest.mark.slow
def test_bucket_allreduces_start_before_backward_ends(tmp_path):
    out = str(tmp_path / "result.json")
    spawn(ddp_bodies.bucket_order, True, out)
    split = _read(out)
    spawn(ddp_bodies.bucket_order, False, out)
    whole = _read(out)
    print(split, whole)
    assert split["graphs"] == 5 and whole["graphs"] == 1
    # 5 buckets, one weight each: with the split, the 4 that do not hold the first
    # layer's weight are launched before backward reaches the input
    assert split["events"].index("input_grad") == 4 and len(split["events"]) == 6
    # one graph: no bucket is ready before the graph's whole backward has run
    assert whole["events"].index("input_grad") == 0


# graphs / graph breaks of each case of collective_bodies; the in-place
# collectives other than a synchronous all_reduce break (they run natively),
# and so does waiting on the work handle an async one returns
INPLACE, OPAQUE = "in-place collective", "unsupported call"
COLLECTIVE_CASES = {
    "reduce_then_scale": (1, []), "gather_then_scatter": (1, []), "broadcast_by_ranks": (1, []),
    "inplace_all_reduce": (1, []), "grad_through_all_reduce": (1, []),
    "async_all_reduce": (2, [INPLACE, "unsupported descriptor", OPAQUE]), "inplace_broadcast": (2, [INPLACE]),
}


@pytest.mark.slow
def test_collectives_match_eager(tmp_path):
    out = str(tmp_path / "result.json")
    fullgraph = {name: not breaks for name, (_, breaks) in COLLECTIVE_CASES.items()}
    spawn(collective_bodies.compare_all, fullgraph, out)
    expected = {name: {"graphs": g, "breaks": b} for name, (g, b) in COLLECTIVE_CASES.items()}
    assert _read(out) == expected


@pytest.mark.slow
def test_dtensor_functions_match_eager(tmp_path):
    out = str(tmp_path / "result.json")
    spawn(dtensor_bodies.compare_all, out)
    # fullgraph=True throughout; two graphs each: the input's placements change once
    # (from_local_round_trip takes a plain tensor: one graph)
    assert _read(out) == {"from_local_round_trip": 1, "arithmetic": 2, "gather_then_add": 2,
                          "grad_of_replicated_square": 2}


SKIPPED = "call to skipped function"


@pytest.mark.slow
def test_fsdp2_training_matches_eager(tmp_path):
    out = str(tmp_path / "result.json")
    spawn(fsdp_bodies.compare_all, out, timeout=300)
    found = _read(out)
    print(found)
    # FSDP's hooks run natively (torch marks them not to be compiled): around the
    # compiled forward of a compiled FSDP module, no graph break (torch.compile:
    # per layer 2 graphs, root only 1, neither with a break). Compiled at the root
    # over sharded blocks, each block's hook breaks inside the root's loop: the
    # block's forward compiles as a frame of its own and the loop resumes in a
    # resume function, whose last one holds the head (torch.compile breaks at the
    # first block's hook and skips the root's frame: 2 graphs, its Block.forward)
    for optimizer in ("sgd", "adamw"):
        assert found[f"per_layer-{optimizer}"] == {"graphs": 3, "breaks": [], "break_count": 0}
        assert found[f"root_only-{optimizer}"] == {"graphs": 1, "breaks": [], "break_count": 0}
        assert found[f"root-{optimizer}"] == {"graphs": 4, "breaks": [SKIPPED], "break_count": 3}
