"""Values and sizes computed from tensor data: captured as unbacked symbols
(``capture_scalar_outputs``, ``capture_dynamic_output_shape_ops``, and always
under ``fullgraph=True``), boolean masks, ``torch._check``.

Every pattern runs with each backend against eager (values, and gradients
where it has a backward) and checks the number of graphs compiled over all
calls, with the settings off and on. A backend failure fails the test (it
raises ``BackendCompilerFailed``).
"""

import pytest
import torch

import bytegraph
from bytegraph.testing import same
from tests import assert_bodies
from tests.helpers import CountingBackend, assert_same, break_types, check, check_module

BOTH = {"capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True}
OFF = {"capture_scalar_outputs": False, "capture_dynamic_output_shape_ops": False}
BACKENDS = ["eager", "aot_eager"]


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


#: name -> (fn, calls, graphs with the settings off, the break with them off, graphs with both on). Off, the
#: data-dependent operator or method breaks once; an int or a data-dependent size handed to the resume
#: function after the break is symbolic from its first compile; a float is specialised first.
#: ``torch.unique`` is torch's Python (``boolean_dispatch`` over ``_unique_impl``), traced: off, the break at
#: ``_unique2`` leaves a graph in each torch frame on the way out that holds an operation.
OPERATOR, METHOD = "data-dependent operator", "data-dependent tensor method"
PATTERNS = {
    "mask_get": (mask_get, MASKED, 2, OPERATOR, 1),
    "mask_set_scalar": (mask_set_scalar, MASKED, 1, None, 1),
    "mask_imul": (mask_imul, MASKED, 2, OPERATOR, 1),
    "mask_set_from_other": (mask_set_from_other, [(pos(5), r(8)), (pos(3), r(8)), (pos(6), r(8))], 2, OPERATOR, 1),
    "nonzero": (nonzero, MASKED, 2, OPERATOR, 1),
    "masked_select": (masked_select, MASKED, 2, OPERATOR, 1),
    "unique": (unique, [(torch.tensor([3, 1, 3, 2]),), (torch.tensor([5, 5, 1, 0]),)], 2, OPERATOR, 1),
    "item_math": (item_math, [(r(4),), (r(4),), (r(4),)], 3, METHOD, 1),
    "int_full": (int_full, [(r(3), torch.tensor(k)) for k in (2, 3, 4, 5)], 1, METHOD, 1),
    "int_range": (int_range, [(r(3), torch.tensor(k)) for k in (2, 3, 4, 5)], 1, METHOD, 1),
    "tolist": (tolist, [(r(4),), (r(4),), (r(4),)], 3, METHOD, 1),
    "float_math": (float_math, [(r(4),), (r(4),), (r(4),)], 3, METHOD, 1),
    "check_item": (check_item, [(r(4),), (r(4),), (r(4),)], 3, METHOD, 1),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern_settings_off(name, backend):
    fn, calls, off, gb_type, _ = PATTERNS[name]
    with bytegraph.config.patch(**OFF):
        check(fn, calls=calls, backend=backend, graphs=off, breaks=1 if gb_type else 0,
              gb_types=[gb_type] if gb_type else [])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern_settings_on_the_default(name, backend):
    fn, calls, _, _, on = PATTERNS[name]
    check(fn, calls=calls, backend=backend, graphs=on)


@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern_fullgraph_captures_whatever_the_settings(name):
    fn, calls, _, _, on = PATTERNS[name]
    with bytegraph.config.patch(**OFF):
        check(fn, calls=calls, backend="eager", fullgraph=True, graphs=on)


@pytest.mark.parametrize("name", ["mask_imul", "nonzero", "item_math"])
def test_pattern_inductor(name):
    fn, calls, _, gb_type, _ = PATTERNS[name]
    with bytegraph.config.patch(**OFF):  # the graphs before and after the break
        check(fn, calls=calls[:1], backend="inductor", graphs=2, breaks=1, gb_types=[gb_type])
    with bytegraph.config.patch(**BOTH):
        check(fn, calls=calls[:1], backend="inductor")


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
        if settings is BOTH:
            check(mask_imul_input_grad, r(6).requires_grad_(), backend=backend, backward=True)
        else:  # the graphs before and after the break, each compiled once
            check(mask_imul_input_grad, r(6).requires_grad_(), backend=backend, backward=True,
                  graphs=2, breaks=1, gb_types=["data-dependent operator"])


# ---- torch._check ----------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_check_on_captured_scalar_is_asserted_when_the_graph_runs(backend):
    def f(x):
        v = x.sum().item()
        torch._check(v > 0)
        return x * v

    with bytegraph.config.patch(capture_scalar_outputs=True):
        check(f, torch.ones(3), backend=backend)
        check(f, -torch.ones(3), backend=backend, raises=RuntimeError)  # the check fails inside the graph


def test_check_is_size_lets_a_captured_int_size_a_tensor():
    def f(x):
        n = int(x.sum())
        torch._check_is_size(n)
        return torch.zeros(n) + 1

    with bytegraph.config.patch(capture_scalar_outputs=True):
        check(f, calls=[(torch.ones(3),), (torch.full((3,), 2.0),)], backend="eager")


def test_check_of_a_false_constant_raises_as_in_eager():
    def f(x):
        torch._check(x.dim() == 3)
        return x + 1

    check(f, torch.ones(2), raises=RuntimeError, graphs=0, breaks=1, gb_types=["unsupported runtime check"])


# ---- assert statements on data -------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS + ["inductor"])
@pytest.mark.parametrize("fn", [assert_bodies.assert_all_positive, assert_bodies.assert_not_any_negative,
                                assert_bodies.assert_on_captured_scalar], ids=lambda f: f.__name__)
def test_assert_on_data_is_checked_when_the_graph_runs(fn, backend):
    """An assert on a one-element tensor or a captured scalar stays in the graph
    (fullgraph), and a failing one raises eager's AssertionError and message,
    after eager's side effects before it."""
    # not check: the function logs to a module global, cleared before each side here
    cnt = CountingBackend(backend)
    compiled = bytegraph.compile(fn, backend=cnt, fullgraph=True)
    good = torch.rand(4) + 0.5
    expected_value = fn(good.clone())
    assert_bodies.LOG.clear()  # the same log length at each call (it is guarded): no recompile
    assert_same(compiled(good.clone()), expected_value)
    bad = good - 10
    with pytest.raises(AssertionError) as expected:
        fn(bad.clone())
    assert_bodies.LOG.clear()
    with pytest.raises(AssertionError) as actual:
        compiled(bad.clone())
    assert str(actual.value) == str(expected.value)
    assert assert_bodies.LOG == (["before"] if fn is assert_bodies.assert_all_positive else [])
    assert cnt.frame_count == 1 and not break_types()


def test_assert_with_grad_keeps_eagers_gradient():
    check(assert_bodies.assert_then_sum, torch.rand(5, requires_grad=True), backend="aot_eager", backward=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_failing_assert_after_an_augmented_assignment_writes_the_input_once(backend):
    # check compares x after each side: [-4., 3.], the rerun does not add 1 again
    check(assert_bodies.assert_after_augmented_assignment, torch.tensor([-5.0, 2.0]), backend=backend,
          raises=AssertionError, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_failing_assert_after_writing_an_inference_tensor_writes_it_once(backend):
    """An inference tensor has no version counter to show the write: it is
    restored from its copy before the frame reruns natively."""
    with torch.inference_mode():  # a factory: a copy of an inference tensor is none; check compares x: [2., 2.]
        check(assert_bodies.write_then_assert_negative, make=lambda: (torch.ones(2),), backend=backend,
              raises=AssertionError, graphs=1, breaks=0)


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
    model = _NormModule(norm(3, track_running_stats=True) if norm is torch.nn.InstanceNorm1d else norm(3))
    x = torch.linspace(0, 1, 24).reshape(2, 3, 4)
    check_module(model, x, backend=backend)
    # check_module compares the running statistics after each side
    check_module(model, x - 10, backend=backend, raises=AssertionError, graphs=1, breaks=0)


@pytest.mark.parametrize("fn, value", [(assert_bodies.assert_item_truthy, 0.0),
                                       (assert_bodies.assert_item_not_nan, float("nan"))],
                         ids=["truth of a float", "nan self-equality"])
def test_assert_on_a_captured_float_behaves_as_in_eager(fn, value):
    """``assert n`` on a captured float is its truth (not a bool to check in the
    graph), and ``n == n`` is not folded to True as for a real number."""
    with bytegraph.config.patch(**BOTH):
        # the truth of the float, and n == n on one, decide in Python: a break, with a graph before it and
        # one after; a failing assert then raises in the resume function, which runs natively from there
        truth = fn is assert_bodies.assert_item_truthy
        gb_type = "data-dependent branching" if truth else "data-dependent float folded"
        check(fn, torch.ones(2), backend="eager", graphs=2, breaks=1, gb_types=[gb_type])
        check(fn, torch.tensor([value]), backend="eager", raises=AssertionError, graphs=1, breaks=3,
              gb_types=[gb_type, "assertion failure", "uncaught exception"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_failing_assert_inside_autocast_leaves_autocast_as_eager_does(backend):
    """The graph enters autocast and fails before its exit: the state it found
    is put back (eager's ``__exit__`` runs on the way out of the block)."""
    good, bad = (torch.eye(2),), (torch.eye(2) * float("nan"),)
    check(assert_bodies.assert_inside_autocast, calls=[good], backend=backend)
    check(assert_bodies.assert_inside_autocast, calls=[bad], backend=backend, raises=AssertionError, graphs=1, breaks=0)
    assert not torch.is_autocast_enabled("cpu")
    assert torch.get_autocast_dtype("cpu") == torch.bfloat16  # the default, as before the call
    check(assert_bodies.assert_inside_autocast, calls=[good], backend=backend)


def test_assert_on_several_elements_raises_as_in_eager():
    check(assert_bodies.assert_several_elements, torch.ones(3), raises=RuntimeError, graphs=1, breaks=1,
          gb_types=["data-dependent branching"])


def test_python_branch_on_a_captured_scalar_is_still_a_break():
    def f(x):
        if x.sum().item() > 0:
            return x + 1
        return x - 1

    with bytegraph.config.patch(**BOTH):
        check(f, calls=[(torch.ones(3),), (-torch.ones(3),)], graphs=3, breaks=1, gb_types=["data-dependent branching"])


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
    check(HOOKS[name], calls=[(r(4).requires_grad_(),), (r(4).requires_grad_(),)], backend=backend, backward=True)
    if name == "side_effect":  # once per backward, with the real gradient: eager's two, then the compiled two
        assert len(SEEN) == 4 and same(SEEN[2], SEEN[0]) and same(SEEN[3], SEEN[1])


def test_hook_with_free_variables_breaks():
    def f(x, scale):
        y = x * 2
        y.register_hook(lambda g: g * scale)
        return y.sum()

    check(f, r(4).requires_grad_(), 3.0, backward=True, graphs=2, breaks=1, gb_types=["hook on intermediate tensor"])


def test_a_backend_refusing_a_captured_value_gets_a_graph_break_instead():
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    def picky(gm, example_inputs):
        if any(free_unbacked_symbols(n.meta.get("example_value")) for n in gm.graph.nodes):
            raise NotImplementedError("this backend takes no data-dependent symbols")
        return gm.forward

    with bytegraph.config.patch(**BOTH):
        check(item_math, calls=[(r(4),), (r(4),)], backend=picky, graphs=4, breaks=1,
              gb_types=["data-dependent tensor method"])


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
    expected = [] if settings is BOTH else ["data-dependent tensor method"]
    with bytegraph.config.patch(**settings):
        check(fn, calls=[make_args(), make_args()], backend=backend, breaks=len(expected), gb_types=expected)


# ---- branches the ShapeEnv decides with no guard --------------------------------------------------
# The kind: bool() of a data-dependent int/bool that holds (or fails) for every value its unbacked
# symbols may take is decided while tracing, with no break and no guard; one it cannot prove breaks.

def numel_plus_never_zero(x):  # numel() >= 0, so numel() + 3 is never 0 (GATConv's edge_update)
    idx = torch.nonzero(x > 0)
    if idx.numel() + 3:
        return x + idx.sum()
    return x - 1


def numel_negative_never(x):  # a size is never negative: the branch is statically False
    idx = torch.nonzero(x > 0)
    if idx.size(0) < 0:
        return x - 1
    return x * 2


def after_check(x):  # torch._check records u >= 1, so u > 0 is True
    u = (x > 0).sum().item()
    torch._check(u >= 1)
    if u > 0:
        return x * 3
    return x


def unprovable(x):  # whether nonzero() found anything depends on the data: a break
    idx = torch.nonzero(x > 0)
    if idx.numel():
        return x + 1
    return x - 1


def fresh_mixed():
    return (torch.tensor([1.0, -2.0, 3.0, -4.0]),)


@pytest.mark.parametrize("fn", [numel_plus_never_zero, numel_negative_never, after_check])
def test_branch_the_shape_env_proves_needs_no_break(fn):
    with bytegraph.config.patch(**BOTH):
        check(fn, make=fresh_mixed, backend="eager", graphs=1, breaks=0)


def test_branch_the_shape_env_cannot_prove_still_breaks():
    with bytegraph.config.patch(**BOTH):
        check(unprovable, make=fresh_mixed, backend="eager", graphs=2, breaks=1, gb_types=["data-dependent branching"])


def iterate_masked(x):  # the loop's length is a data-dependent row count: a break, never an internal error
    total = x.sum() * 0
    for row in x[x > 0]:
        total = total + row
    return total


def test_iterating_a_data_dependent_number_of_rows_breaks():
    with bytegraph.config.patch(**BOTH):
        check(iterate_masked, make=fresh_mixed, backend="eager", graphs=2, breaks=1,
              gb_types=["data-dependent branching"])
