"""``torch.func.grad``/``grad_and_value``/``vmap`` of Python functions inside
compiled code: one graph node when the function is pure (its closure tensors
graph inputs), a graph break otherwise."""
import pytest
import torch

import bytegraph
from bytegraph.breaks import Unsupported
from tests.helpers import check_compiled, check_fullgraph

BACKENDS = [None, "aot_eager", "inductor"]


def _make_loss(w):
    def loss(y):
        return (y.sin() * w).sum()

    return loss


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_of_a_lambda_closing_over_a_tensor(backend):
    def f(x, w):
        return torch.func.grad(lambda y: (y.sin() * w).sum())(x) + 1

    check_fullgraph(f, torch.randn(3), torch.randn(3), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_and_value_with_argnums(backend):
    def f(x, w):
        g, v = torch.func.grad_and_value(lambda a, b: (a * b.cos()).sum(), argnums=(0, 1))(x, w)
        return g[0] * 2, g[1], v

    check_fullgraph(f, torch.randn(4), torch.randn(4), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap_of_a_lambda_and_in_dims(backend):
    def f(xs, ys, y):
        return torch.func.vmap(lambda a, b: a @ b)(xs, ys), torch.vmap(lambda a, b: (a * b).sum(),
                                                                         in_dims=(0, None))(xs.sum(-1), y)

    check_fullgraph(f, torch.randn(4, 2, 3), torch.randn(4, 3, 5), torch.randn(2), backend=backend)


def test_a_closure_tensor_is_a_graph_input_not_a_constant():
    loss = _make_loss(torch.randn(3))

    def f(x):
        return torch.func.grad(loss)(x) * 2

    x = torch.randn(3)
    compiled = bytegraph.compile(f, backend="eager", fullgraph=True)
    assert torch.allclose(compiled(x), f(x))
    loss.__closure__[0].cell_contents = torch.randn(3)  # a new tensor in the cell: the graph reads it
    assert torch.allclose(compiled(x), f(x))
    loss.__closure__[0].cell_contents.mul_(3)  # new values in place
    assert torch.allclose(compiled(x), f(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_through_a_grad_of_a_function(backend):
    def f(x, w):
        return (torch.func.grad(lambda y: (y.sin() * w).sum())(x) ** 2).sum()

    x, w = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    expected = torch.autograd.grad(f(x, w), (x, w))
    compiled = bytegraph.compile(f, backend=backend or "eager", fullgraph=True)
    actual = torch.autograd.grad(compiled(x, w), (x, w))
    assert all(torch.allclose(a, e) for a, e in zip(actual, expected))


def test_constant_closure_values_are_guarded():
    scale = [2.0]

    def f(x):
        k = scale[0]
        return torch.func.grad(lambda y: (y * y * k).sum())(x)

    x = torch.randn(3)
    compiled = bytegraph.compile(f, backend="eager", fullgraph=True)
    assert torch.allclose(compiled(x), f(x))
    scale[0] = 5.0
    assert torch.allclose(compiled(x), f(x))


def _breaks(fn, *args):
    return [b.gb_type for b in bytegraph.explain(fn)(*args).break_reasons]


def test_a_side_effect_in_the_function_breaks_and_happens_once_per_call():
    calls = []

    def body(t):
        calls.append(1)
        return (t * 2).sum()

    def f(x):
        return torch.func.grad(body)(x) + 1

    x = torch.randn(3)
    check_compiled(f, x, graphs=None)
    assert len(calls) == 2  # eager once, compiled once
    assert _breaks(f, x)[0] == "unsupported torch.func transform"


def test_reading_a_global_tensor_breaks():
    def f(x):
        return torch.func.grad(lambda y: (y * GLOBAL_W).sum())(x)

    x = torch.randn(3)
    check_compiled(f, x, graphs=None)
    assert _breaks(f, x)[0] == "unsupported torch.func transform"


GLOBAL_W = torch.randn(3)


def test_random_draw_breaks():
    def f(x):
        return torch.func.grad(lambda y: (y * torch.rand(3)).sum())(x)

    assert _breaks(f, torch.randn(3))[0] == "unsupported torch.func transform"


def test_print_breaks():
    def f(x):
        def body(y):
            print("in body")
            return y.sum()

        return torch.func.grad(body)(x)

    x = torch.randn(3)
    check_compiled(f, x, graphs=None)
    assert "unsupported torch.func transform" in _breaks(f, x)


def test_a_list_closure_breaks():
    def f(x):
        acc = [x]
        return torch.func.vmap(lambda a: a * acc[0].sum())(x)

    x = torch.randn(2, 3)
    check_compiled(f, x, graphs=None)
    assert _breaks(f, x)[0] == "unsupported torch.func transform"


def test_assigning_a_closed_over_variable_breaks():
    def f(x):
        n = 0

        def body(y):
            nonlocal n
            n += 1
            return y.sum()

        return torch.func.grad(body)(x), n

    x = torch.randn(3)
    check_compiled(f, x, graphs=None)
    assert "unsupported torch.func transform" in _breaks(f, x)


def test_writing_a_closure_tensor_in_place_breaks_but_writing_its_own_tensors_traces():
    def writes_input(x):
        w = x.clone()
        return torch.vmap(lambda a: a * w.mul_(2).sum())(x), w

    def writes_own(x):
        def body(a):
            b = a * 2
            b.add_(1)
            return b.sum()

        return torch.func.grad(body)(x)

    x = torch.randn(2, 3)
    check_compiled(writes_input, x, graphs=None)
    assert "unsupported torch.func transform" in _breaks(writes_input, x)
    check_fullgraph(writes_own, x)


def test_reading_autograd_state_breaks():
    seen = []

    def body(y):
        if y.requires_grad:  # True under grad whatever the input: the trace cannot tell
            seen.append(1)
        return y.sum()

    def helper(y):
        if torch.is_grad_enabled():
            return y.sum()
        return y.sum() * 0

    def f(x):
        return torch.func.grad(body)(x), torch.func.grad(lambda y: helper(y))(x)

    x = torch.randn(3)
    with torch.no_grad():  # grad mode is on inside the transform, off in the trace
        check_compiled(f, x, graphs=None)
        assert _breaks(f, x) == ["unsupported torch.func transform"] * 2
    assert len(seen) == 3  # eager, compiled and explained: once each, none at trace time


def test_a_callee_reading_requires_grad_breaks_and_its_side_effect_happens_once_per_call():
    seen = []

    def log_if_tracked(y):  # not the transformed function itself: a function it calls
        if y.requires_grad:  # True under grad, False on the trace's stand-in
            seen.append(1)
        return y.sin()

    def f(x):
        return torch.func.grad(lambda y: log_if_tracked(y).sum())(x)

    x = torch.randn(3)
    check_compiled(f, x, graphs=None)
    assert _breaks(f, x) == ["unsupported torch.func transform"]
    assert len(seen) == 3  # eager, compiled and explained: once each, none while compiling


@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_grad_of_a_function_taking_a_grad(backend):
    def f(x):
        return torch.func.grad(lambda y: torch.func.grad(lambda z: (z.sin() * z).sum())(y).sum())(x)

    check_fullgraph(f, torch.randn(4), backend=backend)


@pytest.mark.parametrize("dynamic", [False, True])
def test_transforms_with_dynamic_shapes(dynamic):
    def f(x, w):
        n = x.shape[0]
        return torch.func.grad(lambda y: (y.sin() * w).sum())(x), torch.vmap(lambda a: a * n)(x.unsqueeze(0))

    for size in (3, 5, 7):
        check_fullgraph(f, torch.randn(size), torch.randn(size), dynamic=dynamic, graphs=None)


def test_sizes_read_in_the_function_leave_the_graph_whole():
    # the speculative trace reads x's symbolic size (a cached sym_size node): the graph must not
    # keep using the node it took back
    compiled_graphs = []

    def linting_backend(gm, example_inputs):
        gm.graph.lint()  # every argument defined before its use
        compiled_graphs.append(gm)
        return gm.forward

    def f(x):
        g = torch.func.grad(lambda y: (y * y.shape[0]).sum())(x)
        return g + x.shape[0]

    compiled = bytegraph.compile(f, backend=linting_backend, dynamic=True, fullgraph=True)
    for size in (3, 5, 7):
        x = torch.randn(size)
        assert torch.allclose(compiled(x), f(x))
    assert len(compiled_graphs) == 1


def test_reading_a_value_breaks():
    def f(x):
        return torch.func.grad(lambda y: y.sum() * y.max().item())(x)

    x = torch.randn(3)
    check_compiled(f, x, graphs=None)
    assert "unsupported torch.func transform" in _breaks(f, x)


@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_vmap_writing_its_batched_arguments_in_place(backend):
    def f(y, z):
        a, b = y.clone(), z.clone()

        def g(p, q):
            return p.acos_(), q.mul_(2)

        c, d = torch.vmap(g)(a, b)
        return a is c, b is d, a is b, a + 1, b * 1

    check_fullgraph(f, torch.rand(4, 2), torch.rand(4, 3), backend=backend)


def test_vmap_writing_an_unbatched_argument_breaks():
    def f(x, w):
        return torch.vmap(lambda a, b: b.add_(a.sum()), in_dims=(0, None))(x, w)

    x, w = torch.randn(2, 3), torch.randn(3)
    with pytest.raises(RuntimeError):
        f(x, w.clone())
    with pytest.raises(RuntimeError):
        bytegraph.compile(f, backend="eager")(x, w.clone())
    with pytest.raises(Unsupported, match="unsupported torch.func transform"):
        bytegraph.compile(f, backend="eager", fullgraph=True)(x, w.clone())


def test_a_transformed_function_live_across_a_graph_break_is_rebuilt(capsys):
    def f(x, w):
        g = torch.vmap(lambda a: a * w, in_dims=1)
        print("untraceable")  # a graph break while g is live
        return g(x) + 1

    x, w = torch.randn(2, 3), torch.randn(2)
    check_compiled(f, x, w, graphs=1)  # nothing to compute before the break; the resume function one graph
    # rebuilt, g is torch's own wrapper function, which the resume function calls natively
    assert _breaks(f, x, w) == ["print", "call to skipped function"]
