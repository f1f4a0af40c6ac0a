"""A ``torch.func`` transform of a transformed function (``vmap(grad(f))``,
``grad(grad(f))``, ``jacrev(jacfwd(f))``...) inside compiled code: one graph
node rebuilding the whole chain, as torch.compile captures it whole
(fullgraph); the innermost function is proven pure by the inner transform's
own call in the outer speculative trace."""
import gc

import pytest
import torch
from torch.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp, vmap

from tests.helpers import assert_same, check

BACKENDS = [None, "aot_eager"]


def t(*shape):
    return torch.randn(*shape)


@pytest.mark.parametrize("backend", BACKENDS)
def test_per_sample_gradients_vmap_of_grad(backend):
    def f(xs, w):
        per_sample = vmap(grad(lambda x, w: (x.sin() * w).sum(), argnums=1), in_dims=(0, None))(xs, w)
        values = vmap(grad_and_value(lambda x: (x * w).sum()))(xs)
        return per_sample, values

    check(f, t(4, 3), t(3), backend=backend, fullgraph=True, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_second_derivatives(backend):
    def f(x, w):
        return grad(grad(lambda y: (y.sin() * w[0]).sum()))(x[0]), jacrev(jacfwd(lambda y: y.sin() * w))(x)

    check(f, t(3), t(3), backend=backend, fullgraph=True, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap_of_jacrev(backend):
    def f(xs, w):
        return vmap(jacrev(lambda y: y.sin() * w))(xs), vmap(jacrev(lambda a, b: a * b, argnums=(0, 1)))(xs, xs)

    check(f, t(2, 3), t(3), backend=backend, fullgraph=True, graphs=1, breaks=0)


@pytest.mark.parametrize("inner", [hessian, lambda f: jacfwd(grad(f)), jacfwd])
def test_vmap_of_forward_mode_over_a_closure_breaks_and_leaves_torch_working(inner):
    def f(xs, w):
        return vmap(inner(lambda y: (y.cos() * w).sum()))(xs) + 1

    # torch's forward-mode kernels fail on FakeTensors here (torch.compile captures it); the call runs natively,
    # the add is a graph
    check(f, t(2, 3), t(3), graphs=1, breaks=1, gb_types=["operator error at trace time"])
    gc.collect()  # what the failed FakeTensor run left behind is released
    x = t(3)  # and this thread's dispatcher state is as it was: eager still works
    assert_same(jacfwd(torch.sin)(x), torch.diag(x.cos()))


@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_of_a_function_with_aux(backend):
    def f(x):
        hess, aux = jacfwd(jacrev(lambda y: ((y.sin() * y).sum(), y.cos()), has_aux=True), has_aux=True)(x)
        return hess, aux

    check(f, t(3), backend=backend, fullgraph=True, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_call_transforms_of_transformed_functions(backend):
    def f(x, v):
        out, tangent = jvp(grad(lambda y: (y.sin() ** 2).sum()), (x,), (v,))
        g, vjp_fn = vjp(jacrev(lambda y: y.exp() * y), x)
        return out, tangent, g, vjp_fn(v.expand(3, 3))

    check(f, t(3), t(3), backend=backend, fullgraph=True, graphs=1, breaks=0)


def test_backward_through_vmap_of_grad():
    def f(xs, w):
        return vmap(grad(lambda x: (x.sin() * w).sum()))(xs).pow(2).sum()

    check(f, t(4, 3).requires_grad_(), t(3).requires_grad_(), fullgraph=True, graphs=1, breaks=0, backward=True)


def test_a_side_effect_in_the_innermost_function_breaks_and_happens_as_in_eager():
    calls = []

    def body(y):
        calls.append(1)
        return y.sin().sum()

    def f(xs):
        return vmap(grad(body))(xs) + 1

    # the vmap call runs natively (its function rebuilt: vmap of grad of body); the add is a graph
    check(f, t(2, 3), graphs=1, breaks=1, gb_types=["unsupported torch.func transform"])
    assert len(calls) == 2  # eager once, compiled once: vmap runs body once on a batch


def test_a_random_draw_in_the_innermost_function_breaks():
    def f(x):
        return jacrev(jacfwd(lambda y: y * torch.rand(3), randomness="same"))(x)

    # same draws: check seeds both
    check(f, t(3), graphs=0, breaks=1, gb_types=["unsupported torch.func transform"])


def _squared_error(p, x, target):
    return ((x @ p["w"] + p["b"] - target) ** 2).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_per_sample_gradients_of_a_parameter_dict(backend):
    def f(p, xs, targets):
        grads = vmap(grad(_squared_error), in_dims=(None, 0, 0))(p, xs, targets)
        return grads["w"] * 2, grads, grad(_squared_error)(p, xs[0], targets[0])

    check(f, {"w": t(3, 2), "b": t(2)}, t(4, 3), t(4, 2), backend=backend, fullgraph=True, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap_over_dict_and_tuple_arguments(backend):
    def f(p, x):
        return vmap(lambda q, y: (q["w"] * y[0], {"s": y[1].sum()}))(p, (x, x.cos()))

    # the stand-in of a dict or tuple: each leaf selected at its in_dim
    check(f, {"w": t(2, 3)}, t(2, 3), backend=backend, fullgraph=True, graphs=1, breaks=0)
