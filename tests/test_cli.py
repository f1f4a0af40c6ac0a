"""``bytegraph run``: the script runs with torch.compile served by bytegraph,
and the report separates import time from trace and backend time."""
import os
import re
import subprocess
import sys

SCRIPT = """
import torch

def f(x):
    return torch.relu(x) + 1

def g(x):
    return x.sin() * 2

x = torch.randn(3)
assert torch.equal(torch.compile(f, backend="eager")(x), f(x))
assert torch.equal(torch.compile(g, backend="eager")(x), g(x))
print("script done")
"""


def test_run_reports_imports_apart_from_trace_and_backend(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-m", "bytegraph", "run", str(script)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "script done" in run.stdout
    out = run.stderr  # the report
    assert "2 frame(s), 2 graph(s)" in out
    line = next(l for l in out.splitlines() if l.startswith("imports:"))
    total = float(re.match(r"imports: ([0-9.]+) s \(", line).group(1))
    groups = dict(g.split(": ", 1) for g in line[line.index("(") + 1:-1].split("; "))
    parts = {label: {n: float(s) for n, s in (item.rsplit(" ", 2)[:2] for item in text.split(", "))}
             for label, text in groups.items()}
    # torch and bytegraph at start-up (the CLI imports bytegraph first); the first FakeTensorMode on first use
    assert list(parts["start-up"]) == ["torch", "bytegraph"]
    assert list(parts["first use"]) == ["FakeTensorMode's config modules"]
    assert abs(sum(v for p in parts.values() for v in p.values()) - total) < 0.02
    lines = out.splitlines()
    at = next(i for i, l in enumerate(lines) if l.split()[:2] == ["frame", "graphs"])  # the frame table
    header, first, second = (l.split() for l in lines[at:at + 3])
    assert header[-2:] == ["import", "ms"]
    # the first FakeTensorMode is made in the first frame's conversion: its import time is charged there only
    assert float(first[-1]) > 0 and float(second[-1]) == 0.0
