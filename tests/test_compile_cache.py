"""Graphs compiled by inductor are found in torch's compile caches by a later process.

Inductor's FX graph cache and AOTAutograd's cache key their entries on the
graph and guard them with the ShapeEnv of the TracingContext; without one they
bypass themselves. The program below (static graphs under no_grad and with
grad, then dynamic ones) runs twice, each time in a fresh process on one shared ``TORCHINDUCTOR_CACHE_DIR``: the first run fills the caches
(misses), the second must find every graph there (hits, no miss, no bypass),
read from torch's own counters. Every output is compared with eager.
"""
import json
import os
import subprocess
import sys

import pytest

PROGRAM = r"""
import json, torch, bytegraph
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

def step(x):
    y = model(x).relu()
    print("", end="")           # a graph break: two graphs
    return (y * 2).sum()

compiled = bytegraph.compile(step, backend="inductor")
x = torch.randn(3, 4)
with torch.no_grad():           # forward only
    assert torch.allclose(compiled(x), step(x), atol=1e-5)
loss = compiled(x)              # a training step: forward and backward graphs (recompiles for grad mode)
loss.backward()
grads = [p.grad.clone() for p in model.parameters()]
model.zero_grad()
step(x).backward()
assert all(torch.allclose(g, p.grad, atol=1e-5) for g, p in zip(grads, model.parameters()))
with torch.no_grad():           # another batch size: recompiles with a symbolic batch dim (symbols in the key)
    x5 = torch.randn(5, 4)
    assert torch.allclose(compiled(x5), step(x5), atol=1e-5)
from bytegraph.runtime import metrics
from torch._dynamo.utils import counters   # torch's own counters, read by the test (not by bytegraph)
print(json.dumps({"graphs": sum(len(s.graphs) for s in metrics.FRAMES.values()),
                  "counters": {k: counters[g][k] for g in ("inductor", "aot_autograd") for k in counters[g]
                               if "cache" in k}}))
"""


def _run(cache_dir) -> dict:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache_dir))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    run = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_second_process_hits_inductor_and_aot_autograd_caches(tmp_path):
    first = _run(tmp_path)
    c = first["counters"]
    graphs = first["graphs"]
    assert graphs == 6  # two graphs per grad mode, and two with a symbolic batch size
    # the first process compiles every graph: AOTAutograd misses, inductor misses (forward, and backward graphs)
    assert c.get("autograd_cache_miss", 0) == graphs and c.get("autograd_cache_hit", 0) == 0
    assert c.get("fxgraph_cache_miss", 0) >= graphs and c.get("fxgraph_cache_bypass", 0) == 0
    second = _run(tmp_path)
    c2 = second["counters"]
    assert second["graphs"] == graphs
    assert c2.get("autograd_cache_hit", 0) == graphs
    assert c2.get("autograd_cache_miss", 0) == 0 and c2.get("autograd_cache_bypass", 0) == 0
    assert c2.get("fxgraph_cache_hit", 0) >= graphs
    assert c2.get("fxgraph_cache_miss", 0) == 0 and c2.get("fxgraph_cache_bypass", 0) == 0
