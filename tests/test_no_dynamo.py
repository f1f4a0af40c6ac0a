"""bytegraph is its own frontend: it never imports or calls TorchDynamo to compile.

Two checks. The source never names ``torch._dynamo`` or ``torch._C._dynamo``
in code (imports, attribute chains, ``import_module`` strings); mentions in
docstrings, comments and skip-list strings are fine. The one exception is
``bytegraph/compat.py``, which serves torch.compile's user surface: it reaches
torch's frontend package only through its helpers ``_loaded(part)`` /
``_frontend(part)``, for the modules of :data:`COMPAT_MAY_USE` only, and
uses of those modules only the attributes listed there (settings, the stance,
the registered ids, the ``OptimizedModule`` class, the backend registry, and
the entry points it replaces under ``bytegraph run``).

And at run time, with every built-in backend and a custom one, graph breaks,
recompiles, a backward pass, a compiled module (an instance of torch's
``OptimizedModule`` class too) and its ``dynamo_ctx``, and torch's entry points
served by ``bytegraph run``, torch's frontend compiles no frame (its frame counter
stays at zero), its frame hook is never set (sampled at graph breaks and while
graphs run), and none of torch's ``OptimizedModule`` methods or compile contexts
is called. torch's FakeTensor code may load ``torch._dynamo.config``; that
compiles nothing. A control run of ``torch.compile`` in the same process shows
the probes do see torch's frontend when it runs.
"""
import ast
import json
import pathlib
import subprocess
import sys

import bytegraph

PACKAGE = pathlib.Path(bytegraph.__file__).parent
FORBIDDEN = ("torch._dynamo", "torch._C._dynamo")
COMPAT = PACKAGE / "compat.py"

#: what compat.py may use of torch's frontend: module (``torch._dynamo.<part>``) -> attributes
COMPAT_MAY_USE = {
    "config": {"_config", "_is_default"},          # which settings the program changed (read with getattr)
    "eval_frame": {"_stance", "OptimizedModule"},  # the stance; the class compiled modules subclass
    "trace_rules": {"_allowed_callable_ids", "_nonstrict_trace_callable_ids"},  # allow_in_graph's ids
    "backends.registry": {"lookup_backend"},     # torch's backends by name
    "decorators": {"error_on_graph_break", "ErrorOnGraphBreakDecoratorContextManager"},  # its break regions
    "": set(),                                     # the entry points replaced (ENTRY_POINTS, by setattr)
}


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
        if path != COMPAT
        for line, name in _uses(ast.parse(path.read_text(), str(path)))
    ]
    assert uses == []


def _compat_uses(tree: ast.AST) -> dict[str, set[str]]:
    """Per module part reached through ``_loaded``/``_frontend``, the attributes
    compat.py reads on the name it binds the module to (in each function)."""
    used: dict[str, set[str]] = {}
    for function in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        bound: dict[str, str] = {}  # (a name bound in one function is read in that one only)
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and (
                isinstance(node.value.func, ast.Name) and node.value.func.id in ("_loaded", "_frontend")
            ):
                part = node.value.args[0]
                assert isinstance(part, ast.Constant), "compat.py names each frontend module literally"
                for target in node.targets:  # a local, or a global holding the module
                    bound[target.id] = part.value
                used.setdefault(part.value, set())
        for node in ast.walk(function):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
                used[bound[node.value.id]].add(node.attr)
    return used


def test_compat_uses_only_what_it_may_of_torchs_frontend():
    tree = ast.parse(COMPAT.read_text())
    assert _uses(tree) == []  # no import or attribute chain: only the two helpers reach the package
    used = _compat_uses(tree)
    assert set(used) <= set(COMPAT_MAY_USE)
    for part, attrs in used.items():
        assert attrs <= COMPAT_MAY_USE[part], (part, attrs - COMPAT_MAY_USE[part])
    # the helpers are reached by name only in the functions the scan read
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id in ("_loaded", "_frontend")]
    assigned = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)]
    assert all(call in assigned for call in calls), "each frontend module is bound to a name, then read"


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

# torch's OptimizedModule methods and compile contexts: none may run for bytegraph's modules
import torch._dynamo.eval_frame as torch_eval_frame
torch_calls = []

def spy(owner, name):
    original = getattr(owner, name)
    def spied(*args, **kwargs):
        torch_calls.append(f"{owner.__name__}.{name}")
        return original(*args, **kwargs)
    setattr(owner, name, spied)

for name in ("__call__", "__init__", "_initialize", "__setstate__", "_call_lazy_check", "__reduce__"):
    spy(torch_eval_frame.OptimizedModule, name)
spy(torch_eval_frame._TorchDynamoContext, "__call__")

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
for backend in ("eager", "aot_eager", "inductor", probing_backend):
    bytegraph.reset()
    g = bytegraph.compile(f, backend=backend)
    for size in (3, 5, 7):         # recompiles, then automatic dynamic
        x = torch.randn(size, 4)
        assert torch.allclose(g(x, 2), f(x, 2), atol=1e-5)
    m = bytegraph.compile(model, backend=backend)
    assert isinstance(m, torch_eval_frame.OptimizedModule)
    m(torch.randn(3, 4)).sum().backward()
    step = m.dynamo_ctx(lambda x: model(x).sum())  # as Lightning compiles training_step
    step(torch.randn(3, 4)).backward()
    model.zero_grad()

# torch's entry points as `bytegraph run` serves them
from bytegraph.dropin import serving_torch_compile
with serving_torch_compile():
    model.compile(backend="eager")                 # nn.Module.compile calls torch.compile
    model(torch.randn(3, 4))
    torch.compile(f, backend="aot_eager")(torch.randn(3, 4), 2)
    torch._dynamo.explain(f)(torch.randn(3, 4), 2)
    torch._dynamo.optimize("eager")(f)(torch.randn(3, 4), 2)
    torch.compiler.reset()
model._compiled_call_impl = None
assert torch_calls == [], torch_calls

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
