"""A static trace that meets a value to capture starts its ShapeEnv where it
stands (``OutputGraph.start_shape_env``) instead of tracing the frame again;
in a trace with a ShapeEnv, torch's Python dispatcher runs only the operations
that may meet a symbol (``fake_calls.needs_python_dispatcher``).

What the trace read before the ShapeEnv started keeps its guards (a size change
of such an input recompiles); each kind of capture (a scalar, a data-dependent
size, a kernel reading an index tensor) and each kind of input before it (a
tensor, a parameter, a Python number) is compared with eager.
"""

import pytest
import torch
import torch.nn.functional as F

from bytegraph.graph import output_graph
from tests.helpers import check, check_module, t


def scalar_after_inputs(x, y, k):
    a = x * k                      # inputs read before the capture
    n = a.sum().item()             # the ShapeEnv starts here
    return y * n + a, n


def size_after_inputs(x, y):
    a = x.cos()
    rows = (a > 0.5).nonzero()     # a data-dependent size
    return a[rows.squeeze(-1)] + y.sum(), F.pad(rows.float(), (1, 1))


def index_tensor_kernel(x, points):
    a = x + 1
    return [p * 2 for p in torch.tensor_split(a, points)]  # reads the split points' values


@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_inputs_read_before_the_shape_env_keep_their_guards(backend):
    check(scalar_after_inputs, calls=[(t(3), t(3), 2), (t(4), t(4), 2), (t(4), t(4), 3)], graphs=3,
          backend=backend)
    check(size_after_inputs, calls=[(t(6), t(2)), (t(7), t(2)), (t(7), t(3))], graphs=3, backend=backend)
    check(index_tensor_kernel, calls=[(t(8), torch.tensor([2, 5])), (t(9), torch.tensor([1, 5]))], graphs=2,
          backend=backend)


def test_parameters_read_before_the_shape_env():
    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)

        def forward(self, x):
            h = self.proj(x)
            return h / (1.0 + h.abs().max().item())

    check_module(Gate(), t(2, 4))


def test_a_capture_does_not_trace_the_frame_again(monkeypatch):
    traces = []
    init = output_graph.OutputGraph.__init__

    def counting(self, *args, **kwargs):
        traces.append(self)
        init(self, *args, **kwargs)

    monkeypatch.setattr(output_graph.OutputGraph, "__init__", counting)
    check(scalar_after_inputs, t(3), t(3), 2)
    assert len(traces) == 1
    assert traces[0].shape_env is not None


def test_python_dispatcher_only_where_a_symbol_may_be_met(monkeypatch):
    runs = []
    call = output_graph.call_on_fakes

    def recording(fake_mode, dispatcher, kind, target, args, kwargs):
        if fake_mode.shape_env is not None:
            runs.append((getattr(target, "__name__", target), dispatcher))
        return call(fake_mode, dispatcher, kind, target, args, kwargs)

    monkeypatch.setattr(output_graph, "call_on_fakes", recording)

    def fn(x):
        n = x.sum().item()
        return x.cos() * n, x.sin()

    check(fn, t(3))
    assert ("cos", False) in runs and ("sin", False) in runs  # static tensors, no symbol
    assert any(dispatcher for name, dispatcher in runs if name in ("mul", "__mul__"))  # a SymFloat argument
