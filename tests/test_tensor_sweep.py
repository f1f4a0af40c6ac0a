"""Sweep of the Tensor surface: every public attribute and every public method
that eager can call with no arguments on a small float tensor, compiled with
``fullgraph=False`` and compared with eager (result and the input afterwards).

Each entry is classified as answered at trace time (no graph op), run in a
graph, or broken (by its first gb_type), and checked against its route in
``variables/tensors/surface.py``: names routed to a break must break, names
answered from metadata must not; the totals are printed at the end of the
module's run, with or without ``-s``. A sweep with a classification of its own
(which route each name takes), not check: each entry runs on its own fresh
input per side and counts by its first gb_type.
"""
import collections
import warnings

import numpy
import pytest
import torch

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter, same
from bytegraph.variables.tensors.tensor import attribute_route, method_route
from bytegraph.variables.tensors.surface import CAPTURABLE_METHODS


def _example() -> torch.Tensor:
    return torch.randn(3, 3, generator=torch.Generator().manual_seed(1))


def _surface() -> list[tuple[str, bool]]:
    """(name, is_attribute) for the public names eager answers on a 3x3 float tensor."""
    entries = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in sorted(n for n in dir(torch.Tensor) if not n.startswith("_")):
            x = _example()
            try:
                value = getattr(x, name)
                if callable(value):
                    value()
            except Exception:
                continue  # needs arguments, or is not defined for this tensor
            entries.append((name, not callable(value)))
    return entries


SURFACE = _surface()
RESULTS: dict[str, str] = {}


def _compile_probe(name: str, is_attribute: bool):
    """``def probe(x): return x.<name>`` (or ``x.<name>()``), a fresh code object."""
    namespace: dict = {}
    exec(f"def probe(x):\n    return x.{name}{'' if is_attribute else '()'}\n", namespace)
    return namespace["probe"]


def _comparable(value, x: torch.Tensor):
    """``value`` in a form ``same`` compares: dense tensors for other layouts,
    addresses relative to the input's, storages by type and size."""
    if isinstance(value, torch.Tensor) and value.layout != torch.strided:
        return value.to_dense()
    if isinstance(value, (torch.UntypedStorage, torch.TypedStorage)):
        return type(value), value.nbytes()
    if isinstance(value, numpy.ndarray):
        return torch.from_numpy(value)
    if isinstance(value, tuple) and type(value) is not tuple and not isinstance(value, torch.Size):
        return tuple(_comparable(v, x) for v in value)  # torch.return_types
    return value


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    yield
    counts = collections.Counter(RESULTS.values())
    in_graph = counts["trace time"] + counts["graph"]
    broke = {k: v for k, v in counts.items() if k not in ("trace time", "graph")}
    line = (f"tensor surface sweep: {len(RESULTS)} entries, {in_graph} in-graph ({counts['trace time']} answered at "
            f"trace time with no graph op, {counts['graph']} as graph ops), {sum(broke.values())} broke: "
            + ", ".join(f"{k} {v}" for k, v in sorted(broke.items(), key=lambda kv: -kv[1])))
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled():  # shown with or without -s
        print(f"\n{line}")


@pytest.mark.parametrize("name,is_attribute", SURFACE, ids=[n for n, _ in SURFACE])
def test_sweep(name, is_attribute):
    probe = _compile_probe(name, is_attribute)
    cnt = CompileCounter()
    compiled = bytegraph.compile(probe, backend=cnt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x_eager, x_compiled = _example(), _example()
        torch.manual_seed(0)
        expected = probe(x_eager)
        torch.manual_seed(0)
        actual = compiled(x_compiled)
        if name in ("data_ptr", "const_data_ptr"):
            expected, actual = expected - x_eager.data_ptr(), actual - x_compiled.data_ptr()
        assert same(_comparable(actual, x_compiled), _comparable(expected, x_eager)), (actual, expected)
        assert same(_comparable(x_compiled, x_compiled), _comparable(x_eager, x_eager))
    breaks = [b.gb_type for stats in metrics.FRAMES.values() for b in stats.breaks]
    RESULTS[name] = breaks[0] if breaks else ("graph" if cnt.frame_count else "trace time")
    route = attribute_route(name) if is_attribute else method_route(name)  # what tensors/surface.py promises
    if route == "data-dependent" and name in CAPTURABLE_METHODS:  # captured by default (capture_scalar_outputs)
        assert not breaks, f"Tensor.{name}: a capturable data-dependent method, but it broke: {breaks}"
    elif route in ("break", "data-dependent"):
        assert breaks, f"Tensor.{name}: route {route!r}, but it was traced"
    elif route in ("static", "sourced"):
        assert not breaks, f"Tensor.{name}: route {route!r}, but it broke: {breaks}"
