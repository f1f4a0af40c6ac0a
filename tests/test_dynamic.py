"""Dynamic shapes, symbolic scalars and scalar capture: compiled vs eager, with
the number of compiles each policy promises."""
import pytest
import torch
from torch.fx.experimental.symbolic_shapes import ConstraintViolationError

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter, same
from tests.helpers import check


def elementwise(x):
    return torch.relu(x * 2).sum(dim=-1)


def test_automatic_dynamic_compiles_twice_for_many_sizes():
    check(elementwise, calls=[(torch.randn(n, 4),) for n in range(3, 9)], graphs=2)  # static, then dim 0 dynamic
    (stats,) = metrics.FRAMES.values()
    assert stats.recompile_reasons == ["tensor 'x' size mismatch at index 0: expected 3, got 4"]


def test_dynamic_true_compiles_once():
    check(elementwise, calls=[(torch.randn(n, 4),) for n in range(3, 9)], dynamic=True)


def test_dynamic_false_recompiles_every_size():
    check(elementwise, calls=[(torch.randn(n, 4),) for n in range(3, 6)], dynamic=False, graphs=3)


def test_symbolic_arithmetic_and_view_stay_in_one_graph():
    def f(x):
        rows = x.shape[0]
        y = x.view(-1, x.size(1) * 2)
        return y * rows + x.numel(), rows * 2 + 1

    cnt = CompileCounter()
    check(f, calls=[(torch.randn(n, 3),) for n in (4, 6, 10)], dynamic=True, backend=cnt)
    gm = cnt.graphs[0]
    assert any(n.target is torch.ops.aten.sym_size.int for n in gm.graph.nodes)


def test_branch_on_symbolic_size_guards_and_specialises():
    def f(x):
        if x.shape[0] > 4:
            return x * 2
        return x - 1

    check(f, calls=[(torch.randn(n),) for n in (3, 5, 6, 2, 4)], dynamic=True, graphs=2)  # one per side of the branch


def test_int_argument_that_changes_every_call_compiles_at_most_twice():
    def f(x, n):
        return x * n + n

    check(f, calls=[(torch.randn(3), n) for n in range(2, 10)], graphs=2)


def test_assume_static_by_default_off_makes_ints_symbolic_from_the_start():
    def f(x, n):
        return x + n

    with bytegraph.config.patch(assume_static_by_default=False):
        check(f, calls=[(torch.randn(3), n) for n in range(2, 6)])


@pytest.mark.parametrize("setting, values", [("specialize_int", (2, 3, 4, 5)), ("specialize_float", (2.5, 3.5, 4.5))])
def test_specialize_keeps_scalars_constant_even_when_they_change(setting, values):
    """torch.compile's meaning: a specialised int/float is a guarded constant,
    never made symbolic (one compile per value), with dynamic=True as well."""
    def f(x, n):
        return x * n

    for dynamic in (None, True):
        with bytegraph.config.patch(**{setting: True}):
            check(f, calls=[(torch.randn(3), v) for v in values], dynamic=dynamic, graphs=len(values))


@pytest.mark.parametrize("value", [2, 2.5])
def test_dynamic_true_makes_int_and_float_arguments_symbolic(value):
    def f(x, n):
        return x * n + n

    check(f, calls=[(torch.randn(3), value + step) for step in range(3)], dynamic=True)


def test_mark_dynamic_with_range_recompiles_outside_it():
    def marked():  # a factory: the mark is no part of a copy
        x = torch.randn(5, 3)
        bytegraph.mark_dynamic(x, 0, min=2, max=10)
        return (x,)

    check(elementwise, calls=[marked, (torch.randn(9, 3),)])  # 9 is in range
    check(elementwise, calls=[marked, (torch.randn(9, 3),), (torch.randn(12, 3),)], graphs=2)  # 12 is not


def test_mark_dynamic_then_specialising_raises_like_torch():
    def f(x):
        if x.size(0) == 5:
            return x + 1
        return x

    x = torch.randn(5, 2)
    bytegraph.mark_dynamic(x, 0)
    with pytest.raises(ConstraintViolationError):  # not check: torch.compile's error, which eager has not
        bytegraph.compile(f, backend="eager")(x)


def test_size_outside_the_marked_range_raises_as_torch_compile():
    def f(x):
        return x.sum()

    # not check: torch.compile's error, which eager has not
    compiled = bytegraph.compile(f, backend="eager")
    x = torch.ones(3)
    bytegraph.mark_dynamic(x, 0, min=2, max=8)
    assert same(compiled(x), f(x))
    y = torch.ones(9)
    bytegraph.mark_dynamic(y, 0, min=2, max=8)
    with pytest.raises(ConstraintViolationError, match="9 not in range"):
        compiled(y)


def test_maybe_mark_dynamic_allows_specialisation():
    def f(x):
        if x.size(0) == 5:
            return x + 1
        return x

    def marked():
        x = torch.randn(5, 2)
        bytegraph.maybe_mark_dynamic(x, 0)
        return (x,)

    check(f, make=marked)


def test_mark_static_overrides_dynamic_true():
    def static(n):
        def make():
            x = torch.randn(n, 2)
            bytegraph.mark_static(x, 0)
            return (x,)
        return make

    check(elementwise, calls=[static(3), static(4)], dynamic=True, graphs=2)


def test_mark_dynamic_rejects_bad_arguments():
    with pytest.raises(TypeError, match="t must be a torch.Tensor"):
        bytegraph.mark_dynamic([1, 2], 0)
    with pytest.raises(ValueError, match="out of range"):
        bytegraph.mark_dynamic(torch.randn(2), 3)
    with pytest.raises(ValueError, match="min"):
        bytegraph.mark_dynamic(torch.randn(2), 0, min=5, max=3)


def test_size_one_is_specialised():
    # torch's rule: sizes 0 and 1 are never symbolic (broadcasting behaves differently)
    check(elementwise, calls=[(torch.randn(n, 3),) for n in (1, 4, 7)], dynamic=True, graphs=2)


def test_item_with_capture_is_one_graph():
    def f(x):
        v = x.sum().item()
        return x * v

    with bytegraph.config.patch(capture_scalar_outputs=True):
        check(f, calls=[(torch.randn(4),) for _ in range(3)])


def test_item_without_capture_is_a_reported_break():
    def f(x):
        return x * x.sum().item()

    with bytegraph.config.patch(capture_scalar_outputs=False):
        check(f, torch.randn(4), graphs=2, breaks=1, gb_types=["data-dependent tensor method"])


def test_captured_item_used_in_python_control_flow_breaks():
    def f(x):
        v = x.sum().item()
        if v > 0:
            return x + 1
        return x - 1

    with bytegraph.config.patch(capture_scalar_outputs=True):
        check(f, calls=[(torch.ones(3),), (-torch.ones(3),)], graphs=3, breaks=1, gb_types=["data-dependent branching"])


def test_tolist_with_capture():
    def f(x):
        a, b = x.tolist()
        return x * a + b

    with bytegraph.config.patch(capture_scalar_outputs=True):
        check(f, torch.tensor([2.0, 3.0]))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_dynamic_graphs_through_compiling_backends(backend):
    def f(x):
        return (x.view(-1, x.size(1) * 2) * 3).sum(0) + x.shape[0]

    check(f, calls=[(torch.randn(n, 4),) for n in (4, 6, 8)], backend=backend, dynamic=True)


def test_same_tensor_twice_vs_two_tensors_is_guarded():
    def f(a, b):
        a.add_(1)
        return b * 2

    z = torch.ones(3)  # aliased: b sees a's update, as in eager
    check(f, calls=[(torch.ones(3), torch.ones(3)), (z, z)], graphs=2)


# ---- dynamic int arguments used as Python values -------------------------------------
# After a second distinct value an int argument is a SymInt input. A Python-level
# use of its value (an index, a count, a branch...) specialises it: the trace must
# guard on the value, or later calls silently reuse the one seen when it traced.

ITEMS = [10, 20, 30, 40]
TABLE = {0: 5, 1: 6, 2: 7, 3: 8}


def _range_loop(x, n):
    for i in range(n):
        x = x + i
    return x


def _list_insert(x, n):
    items = [1, 2, 3]
    items.insert(n, 9)
    return x + items[1]


INT_USES = {
    "list_index": lambda x, n: x + ITEMS[n],
    "tuple_index": lambda x, n: x + tuple(ITEMS)[n],
    "str_index": lambda x, n: x + ord("abcd"[n]),
    "index_method": lambda x, n: x + ITEMS.index(ITEMS[n]),
    "range_sum": lambda x, n: x + sum(range(n)),
    "range_len": lambda x, n: x + len(range(n)),
    "range_loop": _range_loop,
    "enumerate_start": lambda x, n: x + sum(i for i, _ in enumerate([1], start=n)),
    "in_list": lambda x, n: x + (1 if n in [3] else 0),
    "in_tuple": lambda x, n: x + (n in (0, 2)),
    "truthiness": lambda x, n: x + 1 if n else x - 1,
    "not": lambda x, n: x + (not n),
    "bool": lambda x, n: x + bool(n),
    "dict_key_built": lambda x, n: x + {n: 1, 2: 9}[2],
    "dict_lookup": lambda x, n: x + TABLE[n],
    "dict_contains": lambda x, n: x + (n in TABLE),
    "set_of_int": lambda x, n: x + len({n, 1}),
    "hash": lambda x, n: x + hash(n) % 5,
    "list_slice": lambda x, n: x + sum(ITEMS[:n]),
    "str_slice": lambda x, n: x + len("abcd"[n:]),
    "tensor_slice": lambda x, n: x[:n] * 2,
    "fstring": lambda x, n: x + int(f"{n}7"),
    "fstring_width": lambda x, n: x + len(f"{n:>{n}}"),
    "str": lambda x, n: x + len(str(n) * 2),
    "min_const": lambda x, n: x + min(n, 2),
    "min_three": lambda x, n: x + min(n, 2, 1),
    "max_as_index": lambda x, n: x + ITEMS[max(n, 1)],
    "round": lambda x, n: x + round(n),
    "list_repeat": lambda x, n: x + len([0] * n),
    "list_repeat_left": lambda x, n: x + sum(n * [1, 2]),
    "str_repeat": lambda x, n: x + len("ab" * n),
    "list_insert": _list_insert,
    "compare_const": lambda x, n: x * 2 if n < 2 else x,
}


#: graphs and graph breaks over the seven calls below, where not (4, []): n=1 is static, then each
#: value a Python use specialises (2, 3, 0) is an entry of its own. A truth test guards n != 0 only
#: (1, then 2 for every nonzero, then 0); a SymInt that stays symbolic is one dynamic entry after the
#: static one; a use that breaks (a str of the value, a dict key, list repetition...) compiles the
#: graphs on both sides of the break, and breaks again where the resume function's entry is new.
INT_USE_COUNTS = {
    "truthiness": (3, []), "not": (3, []), "bool": (3, []), "compare_const": (3, []), "tensor_slice": (3, []),
    "min_const": (2, []),
    "dict_key_built": (3, ["unsupported dict key"]), "dict_contains": (3, ["unsupported dict key"]),
    "dict_lookup": (4, ["unsupported graph argument"]), "set_of_int": (6, ["unsupported dict key"]),
    "str_slice": (6, ["unsupported method call"]), "fstring": (6, ["str of traced value"]),
    "str": (6, ["str of traced value"]), "fstring_width": (9, ["str of traced value"] * 4),
    "list_repeat": (6, ["unsupported builtin call"]), "list_repeat_left": (6, ["unsupported builtin call"]),
}


@pytest.mark.parametrize("name", INT_USES)
def test_dynamic_int_used_as_python_value_matches_eager(name):
    graphs, breaks = INT_USE_COUNTS.get(name, (4, []))
    # dynamic from the second call on
    check(INT_USES[name], calls=[(torch.zeros(4), n) for n in (1, 2, 3, 0, 2, 1, 3)], graphs=graphs,
          breaks=len(breaks), gb_types=breaks)


def test_dynamic_int_index_guards_the_value_it_specialised():
    def f(x, n):
        return x + ITEMS[n]

    check(f, calls=[(torch.zeros(2), n) for n in (1, 2, 3, 0, 2, 3)], graphs=4)  # n=1 static, then one per value
    (stats,) = metrics.FRAMES.values()
    assert stats.recompile_reasons[1:] == [f"symbolic shape guard failed: L['n'] == {v}" for v in (2, 3)]


def test_truth_of_dynamic_int_guards_nonzero_not_the_value():
    def f(x, n):
        if n:
            return x + 1
        return x - 1

    check(f, calls=[(torch.zeros(2), n) for n in (1, 2, 5, 0, 7, 0)], graphs=3)  # n=1 static; n != 0; n == 0
    (stats,) = metrics.FRAMES.values()
    assert not stats.ran_natively  # guard production used to crash here


def test_dynamic_int_in_symbolic_arithmetic_does_not_specialise():
    def f(x, n):
        return x[:n] * min(n, 2)

    check(f, calls=[(torch.arange(5.0), n) for n in (1, 2, 3, 4, 3)], graphs=2)


def test_failure_building_guards_runs_the_frame_natively(monkeypatch):
    def broken(*args, **kwargs):
        raise IndexError("list index out of range")

    def f(x, n):
        return x + n

    monkeypatch.setattr("bytegraph.convert.shape_env_guards", broken)
    with bytegraph.config.patch(raise_on_internal_error=False):  # the bug used to escape to the caller here
        # the first call compiles; the second's guards fail to build: an internal error, native from then on
        check(f, calls=[(torch.zeros(2), n) for n in (1, 2, 3)], graphs=1, breaks=1, gb_types=["internal error"])
    (stats,) = metrics.FRAMES.values()
    assert stats.ran_natively
    with pytest.raises(bytegraph.breaks.InternalError, match="building the guards"):
        bytegraph.compile(f, backend="eager")(torch.zeros(2), 1)


def test_a_float_that_changes_recompiles_once():
    # the ShapeEnv's float guards call math.isnan: the guard function must see math
    def f(x, t):
        return x * t

    check(f, calls=[(torch.ones(2), t) for t in (0.1, 0.2, 0.3, 0.4, 0.5)], graphs=2)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_captured_scalars_feed_later_ops_with_each_backend(backend):
    def f(x, t):
        a, b = x[:2].tolist()
        return x / x.max().item() + x * t.item() + a * b

    with bytegraph.config.patch(capture_scalar_outputs=True):
        check(f, calls=[(torch.arange(1.0, 5.0), torch.tensor(t)) for t in (0.5, 2.0)], backend=backend)


def test_composite_ops_take_symbolic_sizes():
    # F.pad's kernel needs the Python dispatcher to accept SymInts (as under torch.compile)
    def f(x):
        return torch.nn.functional.pad(x, (0, (4 - x.shape[-1] % 4) % 4)).reshape(-1, 4)

    check(f, calls=[(torch.ones(2, n),) for n in (5, 6, 9)], dynamic=True, fullgraph=True)


def test_a_size_outside_the_marked_range_recompiles_dynamic():
    def marked():
        x = torch.randn(7, 3)
        bytegraph.mark_dynamic(x, 0, min=2, max=8)
        return (x,)

    check(lambda x: x.sum(0) * x.shape[0], calls=[marked] + [(torch.randn(n, 3),) for n in (2, 5, 9, 10, 11)], graphs=2)
