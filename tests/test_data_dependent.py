"""Values and sizes computed from tensor data: captured as unbacked symbols
(``capture_scalar_outputs``, ``capture_dynamic_output_shape_ops``, and always
under ``fullgraph=True``), boolean masks, ``torch._check``.

Every pattern runs with each backend against eager (values, and gradients
where it has a backward) and checks the number of graphs compiled over all
calls, with the settings off and on. A backend failure fails the test (it
raises ``BackendCompilerFailed``).
"""
import copy

import pytest
import torch

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import same
from tests import assert_bodies
from tests.helpers import clone_inputs

BOTH = {"capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True}
OFF = {"capture_scalar_outputs": False, "capture_dynamic_output_shape_ops": False}
BACKENDS = ["eager", "aot_eager"]


def graphs() -> int:
    return sum(len(s.graphs) for s in metrics.FRAMES.values())


def breaks() -> list[str]:
    return [b.gb_type for s in metrics.FRAMES.values() for b in s.breaks]


def run(fn, calls, backend="eager", fullgraph=False, backward=False):
    """Call ``fn`` compiled and eagerly on equal copies of each argument tuple;
    assert equal results (and input gradients with ``backward``)."""
    compiled = bytegraph.compile(fn, backend=backend, fullgraph=fullgraph)
    for args in calls:
        eager_args, compiled_args = clone_inputs(args), clone_inputs(args)
        expected, actual = fn(*eager_args), compiled(*compiled_args)
        assert same(actual, expected)
        if backward:
            expected.sum().backward()
            actual.sum().backward()
            for e, a in zip(eager_args, compiled_args):
                if isinstance(e, torch.Tensor) and e.requires_grad:
                    assert same(a.grad, e.grad)
        for e, a in zip(eager_args, compiled_args):  # mutated inputs agree too
            assert same(a, e)


# ---- patterns ------------------------------------------------------------------------------------

def mask_get(x):
    return x[x > 0] * 2


def mask_set_scalar(x):
    y = x * 1
    y[y > 0] = 0.0
    return y + 1


def mask_imul(x):
    y = x * 1
    y[y > 0] *= 2
    return y + 1


def mask_set_from_other(x, v):
    y = x * 1
    m = y < 0
    y[m] = v[m]
    return y * 2


def nonzero(x):
    return x[torch.nonzero(x > 0).squeeze(1)] + 1


def masked_select(x):
    return torch.masked_select(x, x > 0) * 2


def unique(x):
    return torch.unique(x).float() * 2


def item_math(x):
    return x * x.sum().item() + 1


def int_full(x, t):
    return torch.full((int(t),), 2.0) * x.sum()


def int_range(x, t):
    n = int(t)
    return x * n + torch.arange(n).sum()


def tolist(x):
    a, b = x[:2].tolist()
    return x * a + b


def float_math(x):
    return x / float(x.max())


def check_item(x):
    v = x.sum().item()
    torch._check(v > -1000)
    return x * v


def r(*shape):
    return torch.randn(*shape)


def pos(k, n=8):
    """``n`` values of which the first ``k`` are positive (a mask of ``k`` elements)."""
    return torch.cat([torch.rand(k) + 0.5, -torch.rand(n - k) - 0.5])


MASKED = [(pos(5),), (pos(3),), (pos(6),)]


#: name -> (fn, calls, graphs with the settings off, graphs with both on). Off, an int or a data-dependent size
#: handed to the resume function after the break is symbolic from its first compile; a float is specialised first.
PATTERNS = {
    "mask_get": (mask_get, MASKED, 2, 1),
    "mask_set_scalar": (mask_set_scalar, MASKED, 1, 1),
    "mask_imul": (mask_imul, MASKED, 2, 1),
    "mask_set_from_other": (mask_set_from_other, [(pos(5), r(8)), (pos(3), r(8)), (pos(6), r(8))], 2, 1),
    "nonzero": (nonzero, MASKED, 2, 1),
    "masked_select": (masked_select, MASKED, 2, 1),
    "unique": (unique, [(torch.tensor([3, 1, 3, 2]),), (torch.tensor([5, 5, 1, 0]),)], 1, 1),
    "item_math": (item_math, [(r(4),), (r(4),), (r(4),)], 3, 1),
    "int_full": (int_full, [(r(3), torch.tensor(k)) for k in (2, 3, 4, 5)], 1, 1),
    "int_range": (int_range, [(r(3), torch.tensor(k)) for k in (2, 3, 4, 5)], 1, 1),
    "tolist": (tolist, [(r(4),), (r(4),), (r(4),)], 3, 1),
    "float_math": (float_math, [(r(4),), (r(4),), (r(4),)], 3, 1),
    "check_item": (check_item, [(r(4),), (r(4),), (r(4),)], 3, 1),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern_settings_off(name, backend):
    fn, calls, off, _ = PATTERNS[name]
    with bytegraph.config.patch(**OFF):
        run(fn, calls, backend)
    assert graphs() == off


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern_settings_on_the_default(name, backend):
    fn, calls, _, on = PATTERNS[name]
    run(fn, calls, backend)
    assert graphs() == on
    assert not breaks()


@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern_fullgraph_captures_whatever_the_settings(name):
    fn, calls, _, on = PATTERNS[name]
    with bytegraph.config.patch(**OFF):
        run(fn, calls, "eager", fullgraph=True)
    assert graphs() == on


@pytest.mark.parametrize("name", ["mask_imul", "nonzero", "item_math"])
def test_pattern_inductor(name):
    fn, calls, off, on = PATTERNS[name]
    with bytegraph.config.patch(**OFF):
        run(fn, calls[:1], "inductor")
    bytegraph.reset()
    with bytegraph.config.patch(**BOTH):
        run(fn, calls[:1], "inductor")
    assert graphs() == 1


# ---- gradients through masks ---------------------------------------------------------------------

def mask_imul_input_grad(x):
    y = x * 1
    y[y > 0] *= 2
    return y


@pytest.mark.parametrize("backend", BACKENDS + ["inductor"])
@pytest.mark.parametrize("settings", [OFF, BOTH], ids=["off", "on"])
def test_mask_assignment_backward_never_fails_in_the_backend(backend, settings):
    # the backward of y[mask] = values selects grad[mask] (nonzero): a backend needs an unbacked size
    # even when the trace did not; it gets one instead of raising BackendCompilerFailed
    with bytegraph.config.patch(**settings):
        run(mask_imul_input_grad, [(r(6).requires_grad_(),)], backend, backward=True)


# ---- torch._check ----------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_check_on_captured_scalar_is_asserted_when_the_graph_runs(backend):
    def f(x):
        v = x.sum().item()
        torch._check(v > 0)
        return x * v

    with bytegraph.config.patch(capture_scalar_outputs=True):
        compiled = bytegraph.compile(f, backend=backend)
        assert same(compiled(torch.ones(3)), f(torch.ones(3)))
        with pytest.raises(RuntimeError):
            f(-torch.ones(3))
        with pytest.raises(RuntimeError):
            compiled(-torch.ones(3))
    assert graphs() == 1


def test_check_is_size_lets_a_captured_int_size_a_tensor():
    def f(x):
        n = int(x.sum())
        torch._check_is_size(n)
        return torch.zeros(n) + 1

    with bytegraph.config.patch(capture_scalar_outputs=True):
        run(f, [(torch.ones(3),), (torch.full((3,), 2.0),)])
    assert graphs() == 1


def test_check_of_a_false_constant_raises_as_in_eager():
    def f(x):
        torch._check(x.dim() == 3)
        return x + 1

    with pytest.raises(RuntimeError):
        bytegraph.compile(f, backend="eager")(torch.ones(2))


# ---- assert statements on data -------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS + ["inductor"])
@pytest.mark.parametrize("fn", [assert_bodies.assert_all_positive, assert_bodies.assert_not_any_negative,
                                assert_bodies.assert_on_captured_scalar], ids=lambda f: f.__name__)
def test_assert_on_data_is_checked_when_the_graph_runs(fn, backend):
    """An assert on a one-element tensor or a captured scalar stays in the graph
    (fullgraph), and a failing one raises eager's AssertionError and message,
    after eager's side effects before it."""
    compiled = bytegraph.compile(fn, backend=backend, fullgraph=True)
    good = torch.rand(4) + 0.5
    expected_value = fn(good.clone())
    assert_bodies.LOG.clear()  # the same log length at each call (it is guarded): no recompile
    assert same(compiled(good.clone()), expected_value)
    bad = good - 10
    with pytest.raises(AssertionError) as expected:
        fn(bad.clone())
    assert_bodies.LOG.clear()
    with pytest.raises(AssertionError) as actual:
        compiled(bad.clone())
    assert str(actual.value) == str(expected.value)
    assert assert_bodies.LOG == (["before"] if fn is assert_bodies.assert_all_positive else [])
    assert graphs() == 1 and not breaks()


def test_assert_with_grad_keeps_eagers_gradient():
    x = torch.rand(5, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    bytegraph.compile(assert_bodies.assert_then_sum, backend="aot_eager")(x2).backward()
    assert_bodies.assert_then_sum(x).backward()
    assert same(x2.grad, x.grad)
    assert graphs() == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_failing_assert_after_an_augmented_assignment_writes_the_input_once(backend):
    compiled = bytegraph.compile(assert_bodies.assert_after_augmented_assignment, backend=backend)
    eager_x, compiled_x = torch.tensor([-5.0, 2.0]), torch.tensor([-5.0, 2.0])
    with pytest.raises(AssertionError, match="not positive"):
        assert_bodies.assert_after_augmented_assignment(eager_x)
    with pytest.raises(AssertionError, match="not positive"):
        compiled(compiled_x)
    assert same(compiled_x, eager_x)  # [-4., 3.]: the rerun does not add 1 again


@pytest.mark.parametrize("backend", BACKENDS)
def test_failing_assert_after_writing_an_inference_tensor_writes_it_once(backend):
    """An inference tensor has no version counter to show the write: it is
    restored from its copy before the frame reruns natively."""
    compiled = bytegraph.compile(assert_bodies.write_then_assert_negative, backend=backend)
    with torch.inference_mode():
        eager_x, compiled_x = torch.ones(2), torch.ones(2)
        with pytest.raises(AssertionError, match="not negative"):
            assert_bodies.write_then_assert_negative(eager_x)
        with pytest.raises(AssertionError, match="not negative"):
            compiled(compiled_x)
    assert same(compiled_x, eager_x)  # [2., 2.]


class _NormModule(torch.nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.norm = norm

    forward = assert_bodies.NormThenAssert.forward


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("norm", [torch.nn.BatchNorm1d, torch.nn.InstanceNorm1d])
def test_failing_assert_after_a_norm_layer_updates_running_stats_once(backend, norm):
    """Batch/instance norm write their running statistics without moving a
    version counter; a failing check after them must not update them twice."""
    eager = _NormModule(norm(3, track_running_stats=True) if norm is torch.nn.InstanceNorm1d else norm(3))
    module = copy.deepcopy(eager)
    compiled = bytegraph.compile(module, backend=backend)
    x = torch.linspace(0, 1, 24).reshape(2, 3, 4)
    assert same(compiled(x), eager(x))
    with pytest.raises(AssertionError, match="negative input"):
        eager(x - 10)
    with pytest.raises(AssertionError, match="negative input"):
        compiled(x - 10)
    for name, buffer in eager.named_buffers():
        assert same(dict(module.named_buffers())[name], buffer), name
    assert graphs() == 1


@pytest.mark.parametrize("fn, value", [(assert_bodies.assert_item_truthy, 0.0),
                                       (assert_bodies.assert_item_not_nan, float("nan"))],
                         ids=["truth of a float", "nan self-equality"])
def test_assert_on_a_captured_float_behaves_as_in_eager(fn, value):
    """``assert n`` on a captured float is its truth (not a bool to check in the
    graph), and ``n == n`` is not folded to True as for a real number."""
    with bytegraph.config.patch(**BOTH):
        compiled = bytegraph.compile(fn, backend="eager")
        good = torch.ones(2)
        assert same(compiled(good), fn(good))
        bad = torch.tensor([value])
        with pytest.raises(AssertionError) as expected:
            fn(bad)
        with pytest.raises(AssertionError) as actual:
            compiled(bad)
    assert str(actual.value) == str(expected.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_failing_assert_inside_autocast_leaves_autocast_as_eager_does(backend):
    """The graph enters autocast and fails before its exit: the state it found
    is put back (eager's ``__exit__`` runs on the way out of the block)."""
    compiled = bytegraph.compile(assert_bodies.assert_inside_autocast, backend=backend)
    assert same(compiled(torch.eye(2)), assert_bodies.assert_inside_autocast(torch.eye(2)))
    with pytest.raises(AssertionError, match="not positive"):
        compiled(torch.eye(2) * float("nan"))
    assert not torch.is_autocast_enabled("cpu")
    assert torch.get_autocast_dtype("cpu") == torch.bfloat16  # the default, as before the call
    assert same(compiled(torch.eye(2)), assert_bodies.assert_inside_autocast(torch.eye(2)))


def test_assert_on_several_elements_raises_as_in_eager():
    with pytest.raises(RuntimeError, match="ambiguous"):
        bytegraph.compile(assert_bodies.assert_several_elements, backend="eager")(torch.ones(3))


def test_python_branch_on_a_captured_scalar_is_still_a_break():
    def f(x):
        if x.sum().item() > 0:
            return x + 1
        return x - 1

    with bytegraph.config.patch(**BOTH):
        run(f, [(torch.ones(3),), (-torch.ones(3),)])
    assert "data-dependent branching" in breaks()


# ---- hooks on tensors made in the graph ----------------------------------------------------------

SEEN = []


def record(grad):
    SEEN.append(grad.clone())


def hook_scales(x):
    y = x * 2
    y.register_hook(lambda g: g * 3)
    return (y * y).sum()


def hook_sees_earlier_uses(x):
    y = x.sin()
    z = y * x  # a use before the registration: eager's hook sees its gradient too
    y.register_hook(lambda g: g + 1)
    return (z + y.cos()).sum()


def hook_with_side_effect(x):
    y = x * x
    y.register_hook(record)
    return y.sum() * 2


def hook_removed(x):
    y = x * 2
    h = y.register_hook(lambda g: g * 100)
    h.remove()
    return (y * 3).sum()


HOOKS = {"scales": hook_scales, "earlier_uses": hook_sees_earlier_uses, "side_effect": hook_with_side_effect,
         "removed": hook_removed}


@pytest.mark.parametrize("name, backend", [(name, backend) for name in HOOKS for backend in BACKENDS]
                         + [("scales", "inductor"), ("side_effect", "inductor")])
def test_hook_on_intermediate_in_the_graph_gives_eagers_gradient(name, backend):
    SEEN.clear()
    run(HOOKS[name], [(r(4).requires_grad_(),), (r(4).requires_grad_(),)], backend, backward=True)
    assert graphs() == 1
    assert not breaks()
    if name == "side_effect":  # once per backward, with the real gradient: eager's two, then the compiled two
        assert len(SEEN) == 4 and same(SEEN[2], SEEN[0]) and same(SEEN[3], SEEN[1])


def test_hook_with_free_variables_breaks():
    def f(x, scale):
        y = x * 2
        y.register_hook(lambda g: g * scale)
        return y.sum()

    run(f, [(r(4).requires_grad_(), 3.0)], backward=True)
    assert "hook on intermediate tensor" in breaks()


def test_a_backend_refusing_a_captured_value_gets_a_graph_break_instead():
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    def picky(gm, example_inputs):
        if any(free_unbacked_symbols(n.meta.get("example_value")) for n in gm.graph.nodes):
            raise NotImplementedError("this backend takes no data-dependent symbols")
        return gm.forward

    with bytegraph.config.patch(**BOTH):
        compiled = bytegraph.compile(item_math, backend=picky)
        for x in (r(4), r(4)):
            assert same(compiled(x), item_math(x))
    assert breaks() == ["data-dependent tensor method"]


def _full_from_tensor(x, v):
    return torch.full((2, 3), v) + x


def _addcmul_tensor_value(x, y, v):
    return x.addcmul_(y, y, value=v) * 2


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make_args", [
    (_full_from_tensor, lambda: (torch.ones(2, 3), torch.tensor(2.5, dtype=torch.float64))),
    (_addcmul_tensor_value, lambda: (torch.ones(3, dtype=torch.float16), torch.arange(3.0).half(), torch.tensor(0.5))),
])
@pytest.mark.parametrize("settings", [BOTH, OFF], ids=["capture", "no_capture"])
def test_an_operator_that_reads_a_value_inside_its_kernel(backend, fn, make_args, settings):
    # the kernel reads a 0-d tensor's value (a Scalar argument): with capture on,
    # the graph reads it as eager does (t.item(), variables/tensors/scalar_args.py); with
    # capture off it is a data-dependent break; never an internal error
    with bytegraph.config.patch(**settings):
        run(fn, [make_args(), make_args()], backend=backend)
    expected = [] if settings is BOTH else ["data-dependent tensor method"]
    assert breaks() == expected
