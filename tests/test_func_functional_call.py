"""``torch.func.functional_call`` inside compiled code: one graph node calling
the real function on the module (its identity guarded), on its own and under
transforms (the torch.func ensembling and per-sample-gradient recipes), as
torch.compile captures it whole (fullgraph); a module whose forward reads
tensors not given, or with tied tensors, is a graph break."""
import pytest
import torch
from torch.func import functional_call, grad, stack_module_state, vmap

from tests.helpers import check

BACKENDS = [None, "aot_eager"]


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.register_buffer("shift", torch.randn(2))

    def forward(self, x, scale=1.0):
        return self.lin(x) * scale + self.shift


def _state(model):
    return {k: v.detach().clone() for k, v in model.named_parameters()}, dict(model.named_buffers())


@pytest.mark.parametrize("backend", BACKENDS)
def test_functional_call_with_dicts_and_kwargs(backend):
    model = Net()
    params, buffers = _state(model)

    def f(p, b, x):
        return functional_call(model, (p, b), (x,)), functional_call(model, {**p, **b}, x, {"scale": 2.0})

    check(f, params, buffers, torch.randn(4, 3), backend=backend, fullgraph=True, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_per_sample_gradients_with_functional_call(backend):
    model = Net()
    params, buffers = _state(model)

    def loss(p, b, x, target):
        return ((functional_call(model, (p, b), (x.unsqueeze(0),)) - target) ** 2).sum()

    def f(p, b, xs, targets):
        return vmap(grad(loss), in_dims=(None, None, 0, 0))(p, b, xs, targets)

    check(f, params, buffers, torch.randn(5, 3), torch.randn(5, 2), backend=backend, fullgraph=True, graphs=1,
          breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_ensembling_with_functional_call(backend):
    models = [Net() for _ in range(3)]
    params, buffers = stack_module_state(models)
    base = models[0]

    def f(p, b, x):
        return vmap(lambda q, c, y: functional_call(base, (q, c), (y,)), in_dims=(0, 0, None))(p, b, x)

    check(f, {k: v.detach() for k, v in params.items()}, buffers, torch.randn(4, 3), backend=backend,
          fullgraph=True, graphs=1, breaks=0)


def test_backward_through_functional_call_reaches_the_given_tensors():
    model = Net()

    def f(p, b, x):
        return functional_call(model, (p, b), (x,)).pow(2).sum()

    params = {k: v.detach().clone().requires_grad_() for k, v in model.named_parameters()}
    check(f, params, dict(model.named_buffers()), torch.randn(4, 3), fullgraph=True, graphs=1, breaks=0,
          backward=True)


def test_another_module_recompiles():
    models = [Net(), Net()]

    def f(m, p, x):
        return functional_call(m, p, (x,))

    # the module is held by the node: its identity is guarded (one graph per module)
    check(f, calls=[(m, {**_state(m)[0], **_state(m)[1]}, torch.randn(2, 3)) for m in models], graphs=2)


def test_a_tensor_left_out_or_of_another_shape_breaks():
    model = Net()
    params, _ = _state(model)

    def left_out(p, x):
        # the buffer, and the bias, are the module's own: constants to a tracing backend
        return functional_call(model, p, (x,)) + 1, functional_call(model, {"lin.weight": p["lin.weight"]}, (x,),
                                                                    strict=False)

    def other_shape(x):
        return functional_call(model, {"lin.weight": torch.ones(2, 2)}, (x,))

    check(left_out, params, torch.randn(4, 3), graphs=1, breaks=2, gb_types=["unsupported torch.func transform"] * 2)
    check(other_shape, torch.randn(4, 3), raises=RuntimeError, graphs=1, breaks=1,
          gb_types=["unsupported torch.func transform"])


def test_tied_tensors_break():
    model = Net()
    model.lin2 = model.lin  # the same parameters under two names

    def f(p, x):
        return functional_call(model, p, (x,))

    check(f, {"lin.weight": torch.randn(2, 3), "lin.bias": torch.randn(2), "shift": torch.randn(2)},
          torch.randn(4, 3), graphs=0, breaks=1, gb_types=["unsupported torch.func transform"])
