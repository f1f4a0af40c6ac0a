"""DDP compiled by bytegraph in real gloo processes (2 ranks, CPU, localhost).

Each test spawns its processes (``dist_helpers.spawn``), bounded in time, and
compares the compiled training run with the eager one inside the workers.
"""
import functools
import json

import pytest
import torch.distributed as dist

from tests import ddp_bodies
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
