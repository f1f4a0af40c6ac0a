"""Operations whose meta functions (what the FakeTensor run of a trace uses)
accept floating-point arguments of different dtypes that their kernels
reject (``linear``, ``mm``, ``addmm``, ``mv``, ``layer_norm``,
``index_add``): the graph raises when it runs, though tracing did not. A
graph that wrote an input before raising (the eager backend runs in-place
operations in order) must still leave what eager leaves: the side effects
traced before the operation (a list append, an attribute store, applied
after the graph) and the input written once. The fuzzer found it with a
module whose ``double()`` came between two calls with float32 inputs."""
import pytest
import torch
import torch.nn.functional as F

from tests.helpers import check

OPS = {
    "linear": lambda x, w: F.linear(x, w),
    "linear with bias": lambda x, w: F.linear(x, w, w[0]),
    "mm": lambda x, w: x @ w,
    "addmm": lambda x, w: torch.addmm(w[0], x, w),
    "mv": lambda x, w: x @ w[0],
    "layer_norm": lambda x, w: F.layer_norm(x, (4,), w[0], w[1]),
    "index_add": lambda x, w: x.index_add(0, torch.tensor([0]), w[:1]),
}


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("op", list(OPS))
def test_a_graph_raising_on_mixed_dtypes_after_writing_an_input_keeps_eagers_effects(op, backend):
    def f(x, w, steps, log):
        log.append("before")
        steps.add_(1)
        return OPS[op](x, w) + 1

    check(f, torch.randn(4, 4), torch.randn(4, 4, dtype=torch.float64), torch.zeros(()), [], raises=RuntimeError,
          backend=backend, graphs=1)


def test_mixed_dtypes_that_promote_still_compile_in_one_graph():
    def f(x, w, steps):
        steps.add_(1)
        return x * w + torch.where(x > 0, x, w)

    check(f, torch.randn(4, 4), torch.randn(4, 4, dtype=torch.float64), torch.zeros(()), backend="eager")
