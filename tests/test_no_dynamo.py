"""bytegraph is its own frontend: it never imports or calls TorchDynamo.

Two checks. The source never names ``torch._dynamo`` or ``torch._C._dynamo``
in code (imports, attribute chains, ``import_module`` strings); mentions in
docstrings, comments and skip-list strings are fine. And at run time, with
every built-in backend and a custom one, graph breaks, recompiles and a
backward pass, torch's frontend compiles no frame (its frame counter stays at
zero) and its frame hook is never set (sampled at graph breaks and while
graphs run). torch's FakeTensor code may load ``torch._dynamo.config``; that
compiles nothing. A control run of ``torch.compile`` in the same process
shows both probes do see torch's frontend when it runs.
"""
import ast
import json
import pathlib
import subprocess
import sys

import bytegraph

PACKAGE = pathlib.Path(bytegraph.__file__).parent
FORBIDDEN = ("torch._dynamo", "torch._C._dynamo")


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for an attribute chain on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _uses(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if _forbidden(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            found += [(node.lineno, n) for n in names if _forbidden(n)]
        elif isinstance(node, ast.Attribute):
            name = _dotted(node)
            if name is not None and _forbidden(name):
                found.append((node.lineno, name))
        elif isinstance(node, ast.Call) and _dotted(node.func) in ("importlib.import_module", "__import__"):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and _forbidden(first.value):
                found.append((node.lineno, first.value))
    return found


def test_the_scan_finds_each_kind_of_use():
    source = (
        "import torch._dynamo\nfrom torch._dynamo import config\nfrom torch._C import _dynamo\n"
        "x = torch._dynamo.utils\ny = torch._C._dynamo.eval_frame\nimportlib.import_module('torch._dynamo.config')\n"
        "'torch._dynamo is only a string here'\n"
    )
    assert sorted({line for line, _ in _uses(ast.parse(source))}) == [1, 2, 3, 4, 5, 6]


def test_source_never_uses_torchs_frontend():
    uses = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, name in _uses(ast.parse(path.read_text(), str(path)))
    ]
    assert uses == []


PROGRAM = r"""
import json, torch, bytegraph
from torch import nn
import torch._C._dynamo.eval_frame as eval_frame   # the test's probes, not bytegraph's

hooks = []                         # torch's frame hook, sampled while compiled code runs

def probe():
    hooks.append(eval_frame.get_eval_frame_callback() is not None)

def f(x, n):
    y = torch.relu(x) * n
    probe()                        # a C call: a graph break, run natively between two graphs
    if y.sum() > 0:                # and a data-dependent branch
        y = y + 1
    return y.cos()

def probing_backend(gm, example_inputs):
    def run(*args):
        probe()
        return gm.forward(*args)
    return run

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
for backend in ("eager", "aot_eager", "inductor", probing_backend):
    bytegraph.reset()
    g = bytegraph.compile(f, backend=backend)
    for size in (3, 5, 7):         # recompiles, then automatic dynamic
        x = torch.randn(size, 4)
        assert torch.allclose(g(x, 2), f(x, 2), atol=1e-5)
    m = bytegraph.compile(model, backend=backend)
    m(torch.randn(3, 4)).sum().backward()
    model.zero_grad()

import torch._dynamo.convert_frame as convert_frame
results = {"frames": convert_frame.FRAME_COUNTER, "hooks": list(hooks)}
hooks.clear()
torch.compile(f, backend="eager")(torch.randn(3, 4), 2)
results["control_frames"], results["control_hooks"] = convert_frame.FRAME_COUNTER, hooks
print(json.dumps(results))
"""


def test_torchs_frontend_compiles_no_frame():
    run = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout.strip().splitlines()[-1])
    assert results["frames"] == 0
    assert len(results["hooks"]) > 20 and not any(results["hooks"]), "torch's frame hook was set"
    # control: the same probes see torch.compile
    assert results["control_frames"] > 0 and any(results["control_hooks"])
