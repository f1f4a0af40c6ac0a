"""What ``import bytegraph`` loads: none of torch's heavy optional packages.

Every process that compiles pays its imports before the first output (issue
19), so bytegraph imports torch's backends and exporters only on first use:
``import bytegraph`` must leave inductor, AOTAutograd, torch's own frontend
and the ONNX exporter unloaded. (A trace still loads torch's frontend package
later, because torch's ``FakeTensorMode`` imports ``torch._dynamo.config``,
and that package imports the ONNX exporter; that is torch's cost, paid by
torch.compile too.) The check runs in a fresh interpreter.
"""
import json
import subprocess
import sys

HEAVY = ("torch._inductor", "torch._functorch.aot_autograd", "torch._dynamo", "torch.onnx")

PROGRAM = """
import json, sys, torch
before = set(sys.modules)
import bytegraph
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_import_bytegraph_loads_no_backend_frontend_or_exporter():
    run = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    loaded = json.loads(run.stdout.strip().splitlines()[-1])
    assert any(m.startswith("bytegraph.") for m in loaded)  # the probe sees bytegraph's own modules
    heavy = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == []
