"""``torch.func.grad``/``grad_and_value``/``vmap`` of Python functions inside
compiled code: one graph node when the function is pure (its closure tensors
graph inputs), a graph break otherwise."""
import pytest
import torch

import bytegraph
from bytegraph.breaks import Unsupported
from bytegraph.testing import CompileCounter
from tests.helpers import assert_same, check, check_scenario

BACKENDS = [None, "aot_eager", "inductor"]


def _make_loss(w):
    def loss(y):
        return (y.sin() * w).sum()

    return loss


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_of_a_lambda_closing_over_a_tensor(backend):
    def f(x, w):
        return torch.func.grad(lambda y: (y.sin() * w).sum())(x) + 1

    check(f, torch.randn(3), torch.randn(3), backend=backend, fullgraph=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_and_value_with_argnums(backend):
    def f(x, w):
        g, v = torch.func.grad_and_value(lambda a, b: (a * b.cos()).sum(), argnums=(0, 1))(x, w)
        return g[0] * 2, g[1], v

    check(f, torch.randn(4), torch.randn(4), backend=backend, fullgraph=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap_of_a_lambda_and_in_dims(backend):
    def f(xs, ys, y):
        return torch.func.vmap(lambda a, b: a @ b)(xs, ys), torch.vmap(lambda a, b: (a * b).sum(),
                                                                         in_dims=(0, None))(xs.sum(-1), y)

    check(f, torch.randn(4, 2, 3), torch.randn(4, 3, 5), torch.randn(2), backend=backend, fullgraph=True)


def test_a_closure_tensor_is_a_graph_input_not_a_constant():
    loss = _make_loss(torch.randn(3))

    def f(x):
        return torch.func.grad(loss)(x) * 2

    # not check: the closure cell changes between calls, which a per-call copy cannot express
    x, cnt = torch.randn(3), CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt, fullgraph=True)
    assert_same(compiled(x), f(x))
    loss.__closure__[0].cell_contents = torch.randn(3)  # a new tensor in the cell: the graph reads it
    assert_same(compiled(x), f(x))
    loss.__closure__[0].cell_contents.mul_(3)  # new values in place
    assert_same(compiled(x), f(x))
    assert cnt.frame_count == 1  # a graph input, not a guarded constant: no recompile


@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_through_a_grad_of_a_function(backend):
    def f(x, w):
        return (torch.func.grad(lambda y: (y.sin() * w).sum())(x) ** 2).sum()

    check(f, torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True), backend=backend,
          fullgraph=True, backward=True)


def test_constant_closure_values_are_guarded():
    scale = [2.0]

    def f(x):
        k = scale[0]
        return torch.func.grad(lambda y: (y * y * k).sum())(x)

    # not check: the closed-over list changes between calls
    x, cnt = torch.randn(3), CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt, fullgraph=True)
    assert_same(compiled(x), f(x))
    scale[0] = 5.0
    assert_same(compiled(x), f(x))
    assert cnt.frame_count == 2  # the guard on scale[0] failed


def test_a_side_effect_in_the_function_breaks_and_happens_once_per_call():
    calls = []

    def body(t):
        calls.append(1)
        return (t * 2).sum()

    def f(x):
        return torch.func.grad(body)(x) + 1

    # the grad call runs natively, the add is a graph
    check(f, torch.randn(3), graphs=1, breaks=1, gb_types=["unsupported torch.func transform"])
    assert len(calls) == 2  # eager once, compiled once


GLOBAL_W = torch.randn(3)


def _scaled_by_global(y):
    return y.sin() * GLOBAL_W


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_global_tensor_read_in_the_function_is_a_node_argument(backend):
    def f(x):
        return (torch.func.grad(lambda y: (y * GLOBAL_W).sum())(x), torch.func.jacrev(_scaled_by_global)(x),
                torch.vmap(lambda a: _scaled_by_global(a) * 2)(x.expand(2, 3)))

    def run(compile):
        global GLOBAL_W
        torch.manual_seed(0)
        GLOBAL_W, x, compiled, seen = torch.randn(3), torch.randn(3), compile(f), []
        seen.append(compiled(x))
        GLOBAL_W.mul_(3)  # new values in place
        seen.append(compiled(x))
        GLOBAL_W = torch.randn(3)  # a new tensor: the graph reads it, not a constant traced into it
        seen.append(compiled(x))
        return seen

    check_scenario(run, backend=backend, fullgraph=True, graphs=1, breaks=0)


def test_writing_a_global_tensor_in_place_breaks():
    def f(x):
        return torch.vmap(lambda a: a * GLOBAL_W.add_(0).sum())(x)

    check(f, torch.randn(2, 3), graphs=0, breaks=1, gb_types=["unsupported torch.func transform"])


GLOBAL_MODEL = torch.nn.Linear(3, 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_global_modules_parameters_read_in_the_function_are_node_arguments(backend):
    def f(x):
        return (torch.func.grad(lambda y: GLOBAL_MODEL(y).sin().sum())(x),
                torch.func.vmap(lambda a: GLOBAL_MODEL(a) * 2)(x.expand(2, 3)), GLOBAL_MODEL.bias * 1)

    def run(compile):
        global GLOBAL_MODEL
        torch.manual_seed(0)
        saved, compiled, seen = GLOBAL_MODEL, compile(f), []
        GLOBAL_MODEL = torch.nn.Linear(3, 2)  # each run its own
        try:
            for step in range(3):
                if step == 1:
                    with torch.no_grad():
                        GLOBAL_MODEL.weight.mul_(2)  # new values in place
                if step == 2:
                    GLOBAL_MODEL = torch.nn.Linear(3, 2)  # another instance: its parameters, not the first's
                outputs = compiled(torch.randn(3))
                sum(o.sum() for o in outputs).backward()  # gradients reach the parameters
                seen.append((outputs, GLOBAL_MODEL.weight.grad, GLOBAL_MODEL.bias.grad))
            return seen
        finally:
            GLOBAL_MODEL = saved

    check_scenario(run, backend=backend, fullgraph=True, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_parameters_read_through_a_module_the_function_closes_over_are_node_arguments(backend):
    def run(compile):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)

        def f(x):
            return torch.func.grad(lambda y: model(y).sin().sum())(x), torch.func.vmap(lambda a: model(a))(x.expand(2, 3))

        compiled, seen = compile(f), []
        for step in range(3):
            if step == 1:
                with torch.no_grad():
                    model.weight.mul_(2)  # new values in place
            if step == 2:
                model.bias = torch.nn.Parameter(torch.randn(2))  # another parameter at the same place
            outputs = compiled(torch.randn(3))
            sum(o.sum() for o in outputs).backward()  # gradients reach the parameters
            seen.append((outputs, model.weight.grad, model.bias.grad))
        return seen

    # the new bias is read from its place on each call, as any graph input
    check_scenario(run, backend=backend, fullgraph=True, graphs=1, breaks=0)


class _TransformInForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))

    def forward(self, x):
        return torch.func.vmap(torch.func.grad(lambda y: self.net(y).sum()))(x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_transform_in_forward_reading_selfs_submodule(backend):
    def run(compile):
        torch.manual_seed(0)
        first, second = _TransformInForward(), _TransformInForward()
        results = []
        for module in (first, first, second):  # another instance: the node holds the module, a recompile
            compiled = compile(module)
            out = compiled(torch.randn(5, 3))
            out.sum().backward()
            results.append((out, [p.grad for p in module.parameters()]))
        return results

    check_scenario(run, backend=backend, fullgraph=True, graphs=2, breaks=0)


def test_random_draw_breaks():
    def f(x):
        return torch.func.grad(lambda y: (y * torch.rand(3)).sum())(x)

    # same draws: check seeds both
    check(f, torch.randn(3), graphs=0, breaks=1, gb_types=["unsupported torch.func transform"])


@pytest.mark.parametrize("randomness", ["same", "different"])
def test_a_random_draw_breaks_whatever_vmaps_randomness(randomness):
    def f(x):
        return torch.vmap(lambda y: y * torch.rand(()), randomness=randomness)(x)

    # the draws are eager's own: check seeds both sides
    check(f, torch.randn(3, 2), graphs=0, breaks=1, gb_types=["unsupported torch.func transform"])


@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_vmap_out_dims_and_chunk_size(backend):
    def f(x, y):
        return (torch.vmap(lambda a, b: (a * b, a.sum()), in_dims=(1, None), out_dims=(1, 0), chunk_size=2)(x, y),
                torch.func.vmap(lambda a: a.cos(), 0, 1)(x))

    check(f, torch.randn(3, 4), torch.randn(3), backend=backend, fullgraph=True, graphs=1, breaks=0)


def test_print_breaks():
    def f(x):
        def body(y):
            print("in body")
            return y.sum()

        return torch.func.grad(body)(x)

    check(f, torch.randn(3), graphs=0, breaks=1, gb_types=["unsupported torch.func transform"])


def test_a_list_closure_breaks():
    def f(x):
        acc = [x]
        return torch.func.vmap(lambda a: a * acc[0].sum())(x)

    check(f, torch.randn(2, 3), graphs=0, breaks=1, gb_types=["unsupported torch.func transform"])


def test_assigning_a_closed_over_variable_breaks():
    def f(x):
        n = 0

        def body(y):
            nonlocal n
            n += 1
            return y.sum()

        return torch.func.grad(body)(x), n

    check(f, torch.randn(3), graphs=0, breaks=1, gb_types=["unsupported torch.func transform"])


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

    # the clone is a graph
    check(writes_input, torch.randn(2, 3), graphs=1, breaks=1, gb_types=["unsupported torch.func transform"])
    check(writes_own, torch.randn(2, 3), fullgraph=True)


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

    with torch.no_grad():  # grad mode is on inside the transform, off in the trace
        check(f, torch.randn(3), graphs=0, breaks=2, gb_types=["unsupported torch.func transform"] * 2)
    assert len(seen) == 2  # eager and compiled: once each, none at trace time


def test_a_callee_reading_requires_grad_breaks_and_its_side_effect_happens_once_per_call():
    seen = []

    def log_if_tracked(y):  # not the transformed function itself: a function it calls
        if y.requires_grad:  # True under grad, False on the trace's stand-in
            seen.append(1)
        return y.sin()

    def f(x):
        return torch.func.grad(lambda y: log_if_tracked(y).sum())(x)

    check(f, torch.randn(3), graphs=0, breaks=1, gb_types=["unsupported torch.func transform"])
    assert len(seen) == 2  # eager and compiled: once each, none while compiling


@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_grad_of_a_function_taking_a_grad(backend):
    def f(x):
        return torch.func.grad(lambda y: torch.func.grad(lambda z: (z.sin() * z).sum())(y).sum())(x)

    check(f, torch.randn(4), backend=backend, fullgraph=True)


@pytest.mark.parametrize("dynamic", [False, True])
def test_transforms_with_dynamic_shapes(dynamic):
    def f(x, w):
        n = x.shape[0]
        return torch.func.grad(lambda y: (y.sin() * w).sum())(x), torch.vmap(lambda a: a * n)(x.unsqueeze(0))

    for size in (3, 5, 7):
        check(f, torch.randn(size), torch.randn(size), dynamic=dynamic, fullgraph=True)


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

    check(f, calls=[(torch.randn(n),) for n in (3, 5, 7)], backend=linting_backend, dynamic=True, fullgraph=True)
    assert len(compiled_graphs) == 1


@pytest.mark.parametrize("dynamic", [None, True])  # the ShapeEnv started by the body's item(), or there before
def test_reading_a_value_breaks(dynamic):
    def f(x):
        return torch.func.grad(lambda y: y.sum() * y.max().item())(x)

    check(f, torch.randn(3), graphs=0, breaks=1, gb_types=["unsupported torch.func transform"], dynamic=dynamic)


@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_vmap_writing_its_batched_arguments_in_place(backend):
    def f(y, z):
        a, b = y.clone(), z.clone()

        def g(p, q):
            return p.acos_(), q.mul_(2)

        c, d = torch.vmap(g)(a, b)
        return a is c, b is d, a is b, a + 1, b * 1

    check(f, torch.rand(4, 2), torch.rand(4, 3), backend=backend, fullgraph=True)


def test_vmap_writing_an_unbatched_argument_breaks():
    def f(x, w):
        return torch.vmap(lambda a, b: b.add_(a.sum()), in_dims=(0, None))(x, w)

    x, w = torch.randn(2, 3), torch.randn(3)
    check(f, x, w, raises=RuntimeError, graphs=0, breaks=1, gb_types=["unsupported torch.func transform"])
    with pytest.raises(Unsupported, match="unsupported torch.func transform"):
        bytegraph.compile(f, backend="eager", fullgraph=True)(x, w)


def test_a_transformed_function_live_across_a_graph_break_is_rebuilt(capsys):
    def f(x, w):
        g = torch.vmap(lambda a: a * w, in_dims=1)
        print("untraceable")  # a graph break while g is live
        return g(x) + 1

    # nothing to compute before the break; rebuilt, g is torch's own wrapper function, which the
    # resume function calls natively (a second break); the add after it is one graph
    check(f, torch.randn(2, 3), torch.randn(2), graphs=1, breaks=2, gb_types=["print", "call to skipped function"])
