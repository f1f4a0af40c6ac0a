"""Backends: names, the registry, callables, and training through each of
torch's compilers (gradients must match eager). Tests of the backend contract
itself (what a backend receives, what runs, how its failures surface) compile
directly; the rest use check."""
import pytest
import torch
from torch import nn

import bytegraph
from bytegraph.backends.registry import lookup_backend
from bytegraph.testing import CompileCounter, same
from tests.helpers import check


def fn(x, y):
    return torch.sin(x) * y + x.relu().sum()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_named_backends_forward(backend):
    args = (torch.randn(4, 4), torch.randn(4, 4))
    check(fn, calls=[args, args], backend=backend, atol=1e-5)


def test_callable_backend_receives_graph_and_example_inputs():
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, example_inputs))
        return gm.forward

    x, y = torch.randn(3), torch.randn(3)
    compiled = bytegraph.compile(fn, backend=backend)
    assert same(compiled(x, y), fn(x, y))
    ((gm, example_inputs),) = seen
    assert isinstance(gm, torch.fx.GraphModule)
    assert all(isinstance(t, torch.Tensor) for t in example_inputs)
    assert same(gm(*example_inputs)[0], fn(x, y))


def test_backend_output_is_what_runs():
    def doubling_backend(gm, example_inputs):
        def run(*args):
            return tuple(out * 2 for out in gm.forward(*args))
        return run

    x = torch.randn(3)
    compiled = bytegraph.compile(lambda x: x + 1, backend=doubling_backend)
    assert same(compiled(x), (x + 1) * 2)


def test_list_backends():
    names = bytegraph.list_backends()
    assert {"eager", "aot_eager", "inductor"} <= set(names)
    assert names == sorted(names)


def test_register_backend_by_name():
    cnt = CompileCounter()
    bytegraph.register_backend(cnt, name="test_counting_backend")
    assert "test_counting_backend" in bytegraph.list_backends()
    x = torch.randn(3)
    compiled = bytegraph.compile(lambda x: x * 3, backend="test_counting_backend")
    assert same(compiled(x), x * 3)
    assert cnt.frame_count == 1


def test_register_backend_as_decorator():
    calls = []

    @bytegraph.register_backend
    def test_decorated_backend(gm, example_inputs):
        calls.append(gm)
        return gm.forward

    assert "test_decorated_backend" in bytegraph.list_backends()
    x = torch.randn(3)
    assert same(bytegraph.compile(lambda x: x - 1, backend="test_decorated_backend")(x), x - 1)
    assert len(calls) == 1


def test_register_backend_rejects_duplicates_and_non_callables():
    with pytest.raises(ValueError, match="eager"):
        bytegraph.register_backend(lambda gm, inputs: gm.forward, name="eager")
    with pytest.raises(TypeError, match="compiler_fn"):
        bytegraph.register_backend(42, name="not_callable")


def test_unknown_backend_name_raises_value_error():
    with pytest.raises(ValueError, match="no_such_backend"):
        bytegraph.compile(fn, backend="no_such_backend")


def test_backend_of_wrong_type_raises_type_error():
    with pytest.raises(TypeError, match="backend"):
        bytegraph.compile(fn, backend=3)


def test_failing_backend_raises_backend_compiler_failed():
    def broken(gm, example_inputs):
        raise RuntimeError("boom")

    compiled = bytegraph.compile(fn, backend=broken)
    with pytest.raises(bytegraph.BackendCompilerFailed, match="boom"):
        compiled(torch.randn(3), torch.randn(3))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_training_gradients_match_eager(backend):
    # not check_module: an optimizer step on both models between the calls
    torch.manual_seed(0)
    eager_model = MLP()
    model = MLP()
    model.load_state_dict(eager_model.state_dict())
    compiled = bytegraph.compile(model, backend=backend)
    x, target = torch.randn(8, 6), torch.randn(8)

    for step in range(2):
        eager_loss = nn.functional.mse_loss(eager_model(x), target)
        eager_loss.backward()
        loss = nn.functional.mse_loss(compiled(x), target)
        loss.backward()
        assert same(loss, eager_loss, atol=1e-5)
        for (name, p), (_, q) in zip(model.named_parameters(), eager_model.named_parameters()):
            assert p.grad is not None, name
            assert same(p.grad, q.grad, atol=1e-5), name
        with torch.no_grad():  # one SGD step on both, then the next step must agree too
            for p, q in zip(model.parameters(), eager_model.parameters()):
                p -= 0.1 * p.grad
                q -= 0.1 * q.grad
                p.grad = None
                q.grad = None


def test_loss_computed_inside_compiled_function():
    def step(m, x, target):
        return nn.functional.mse_loss(m(x), target)

    check(step, MLP(), torch.randn(8, 6), torch.randn(8), backward=True)  # and each side's model's gradients


def test_backend_that_returns_no_callable_fails_with_its_name():
    def forgetful(gm, example_inputs):
        gm.graph  # forgot to return gm.forward

    with pytest.raises(bytegraph.BackendCompilerFailed, match="forgetful.*not a callable"):
        bytegraph.compile(lambda x: x + 1, backend=forgetful)(torch.ones(2))


def test_register_backend_refuses_a_name_that_is_not_a_string():
    with pytest.raises(TypeError, match="name"):
        bytegraph.register_backend(lambda gm, ex: gm.forward, name=5)
    assert "eager" in bytegraph.list_backends()


def _tracing_fake_mode():
    return torch._guards.TracingContext.try_get().fake_mode


def test_backend_compiles_under_a_fake_mode_with_a_shape_env_and_static_inputs():
    # torch's compile caches (inductor's FX graph cache, AOTAutograd's) bypass themselves without a ShapeEnv
    seen = []

    def backend(gm, example_inputs):
        mode = _tracing_fake_mode()
        # AOTAutograd converts the real inputs with static_shapes=False; sizes must stay the traced ones
        fakes = [mode.from_tensor(t, static_shapes=False) for t in example_inputs]
        seen.append((mode.shape_env, fakes, example_inputs))
        return gm.forward

    x, y = torch.randn(3, 4), torch.randn(3, 4)
    compiled = bytegraph.compile(fn, backend=backend)
    assert same(compiled(x, y), fn(x, y))
    ((shape_env, fakes, inputs),) = seen
    assert shape_env is not None
    assert [tuple(f.shape) for f in fakes] == [tuple(t.shape) for t in inputs]
    assert all(isinstance(s, int) for f in fakes for s in (*f.shape, *f.stride(), f.storage_offset()))
    assert not shape_env.var_to_val  # no symbol was made


def test_dynamic_trace_hands_its_own_shape_env_to_the_backend():
    envs = []

    def backend(gm, example_inputs):
        envs.append(_tracing_fake_mode().shape_env)
        return gm.forward

    compiled = bytegraph.compile(fn, backend=backend, dynamic=True)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    assert same(compiled(x, y), fn(x, y))
    (env,) = envs
    assert env is not None and env.var_to_val  # the trace's symbols


def test_backend_that_never_reads_the_fake_mode_does_not_pay_for_it(monkeypatch):
    from bytegraph.graph.output_graph import OutputGraph

    made = []
    original = OutputGraph.backend_fake_mode
    monkeypatch.setattr(OutputGraph, "backend_fake_mode", lambda self: made.append(1) or original(self))
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    assert same(bytegraph.compile(fn, backend="eager")(x, y), fn(x, y))
    assert made == []
    assert same(bytegraph.compile(fn, backend="aot_eager")(x, y), fn(x, y))
    assert made == [1]


def test_eager_noexcept_runs_the_graph_like_eager():
    # torch.compile's debugging backend name (CPython's ported tests compile with it)
    check(fn, torch.randn(4, 4), torch.randn(4, 4), backend="eager_noexcept", fullgraph=True)


def test_eager_noexcept_graph_that_raises_gives_eagers_exception():
    # the graph raises on the data (index out of range: no graph break, the index is a graph input);
    # the frame reruns natively, as eager (x.sin()[i] was no test of it: indexing by a tensor breaks)
    def gather(x, i):
        return torch.index_select(x.sin(), 0, i) + 1

    check(gather, torch.randn(3), torch.tensor([7]), backend="eager_noexcept", raises=IndexError)
    # the backend's own wrapping, which the frame's native rerun hides from the caller
    direct = lookup_backend("eager_noexcept")
    gm = torch.fx.symbolic_trace(lambda x, i: x[i])
    x, i = torch.randn(3), torch.tensor(7)
    with pytest.raises(RuntimeError, match="eager_noexcept: the captured graph raised IndexError"):
        direct(gm, [x, i])(x, i)
