"""Graph breaks and errors: unsupported code runs natively (the rest stays
compiled) with eager results and a recorded break; user exceptions surface as
in eager; fullgraph raises."""

import pytest
import torch

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter
from tests import assert_bodies
from tests.helpers import assert_same, check


def with_print(x):
    y = x * 2
    print("value computed")
    return y + 1


def with_item(x):
    return x * x.sum().item()


def with_tensor_branch(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


def with_int_conversion(x):
    return x * int(x.max())


def with_tolist(x):
    return [v * 2 for v in x.tolist()]


@pytest.mark.parametrize(
    "fn, gb_type, graphs",
    [
        (with_print, "print", 2),  # before and after the print
        # the sum, then the product, which is specialised on the item's (float) value, then symbolic
        (with_item, "data-dependent tensor method", 3),
        (with_tensor_branch, "data-dependent branching", 3),  # the condition, then each branch
        (with_int_conversion, "data-dependent tensor method", 2),  # the int, read from data, is symbolic at once
        # no tensor work around the break; the resume function receives the list (and, before 3.12,
        # the comprehension's function, guarded by its code), whose floats turn symbolic when they
        # change (automatic dynamic), so the second call's products are a graph
        (with_tolist, "data-dependent tensor method", 1),
    ],
)
def test_unsupported_code_runs_natively_and_records_the_break(fn, gb_type, graphs, capsys):
    with bytegraph.config.patch(capture_scalar_outputs=False):  # on (the default), item() and tolist() are traced
        check(fn, calls=[(torch.ones(4),), (-torch.ones(4),)], graphs=graphs, breaks=1, gb_types=[gb_type])
    stats = metrics.FRAMES[id(fn.__code__)]
    assert not stats.ran_natively  # compiled around the break, not given up on
    (record,) = stats.breaks
    assert record.user_stack and record.user_stack[-1].filename == __file__


def test_print_output_is_produced_once(capsys):
    check(with_print, torch.randn(2), graphs=2, breaks=1, gb_types=["print"])
    assert capsys.readouterr().out == "value computed\n" * 2  # once on each side


def test_break_inside_an_inlined_function_records_the_inner_frame():
    def inner(x):
        print("inner")
        return x + 1

    def outer(x):
        return inner(x * 2) * 3

    check(outer, torch.randn(3), graphs=3, breaks=1, gb_types=["print"])
    (record,) = metrics.FRAMES[id(outer.__code__)].breaks
    assert record.gb_type == "print"
    assert [f.name for f in record.user_stack] == ["outer", "inner"]


def test_side_effects_before_a_break_happen_once():
    def f(x, log):
        log.append("start")
        y = x + 1
        print("break here")
        log.append("end")
        return y

    # x + 1 before the print, nothing after it; check compares each side's log: ["start", "end"]
    check(f, torch.randn(2), [], graphs=1, breaks=1, gb_types=["print"])


def test_capture_scalar_outputs_is_not_required_for_correctness():
    check(with_item, torch.randn(4))


# ---- user exceptions ------------------------------------------------------------


def raises_value_error(x):
    if x.dim() == 1:
        raise ValueError("bad input")
    return x


def missing_key(x):
    return x + {"a": 1}["b"]


def bad_index(x):
    return x + [1, 2][5]


def zero_division(x):
    n = 0
    return x * (1 / n)


def shape_mismatch(x):
    return x @ torch.ones(5, 2)


def missing_attribute(x):
    return x.no_such_method()


def bad_call(x):
    return torch.relu(x, x, x)


def unbound_local(x):
    if x.dim() == 7:
        y = x
    return y  # noqa: F821


def exception_in_inlined_callee(x):
    def helper(v):
        raise KeyError("from helper")

    return helper(x)


@pytest.mark.parametrize(
    "fn, error",
    [(raises_value_error, ValueError), (missing_key, KeyError), (bad_index, IndexError),
     (zero_division, ZeroDivisionError), (shape_mismatch, RuntimeError), (missing_attribute, AttributeError),
     (assert_bodies.assert_is_a_matrix, AssertionError), (bad_call, TypeError), (unbound_local, UnboundLocalError),
     (exception_in_inlined_callee, KeyError)],
)
def test_user_exceptions_surface_as_in_eager(fn, error):
    # the exception is met while tracing: the frame runs natively from there (nothing was computed
    # before it); a shape mismatch is found by the graph's matmul after its ones() are a graph
    graphs = 1 if fn is shape_mismatch else 0
    gb = {shape_mismatch: ["operator error at trace time"], bad_call: ["operator error at trace time"],
          unbound_local: ["user error"], assert_bodies.assert_is_a_matrix: ["assertion failure", "uncaught exception"],
          }.get(fn, ["uncaught exception"])
    x = torch.randn(3)  # the first call (tracing) and a later one behave the same
    check(fn, calls=[(x,), (x,)], raises=error, graphs=graphs, breaks=len(gb), gb_types=gb)


def _raised(fn, *args, handling=False, **kwargs):
    """The exception ``fn(*args, **kwargs)`` raises (while handling one of the caller's, with ``handling``)."""
    try:
        if handling:
            try:
                raise KeyError("the caller's")
            except KeyError:
                fn(*args, **kwargs)
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - compared below
        return e
    raise AssertionError("no exception")


@pytest.mark.parametrize("handling", [False, True], ids=["plain", "while_handling"])
@pytest.mark.parametrize("warm", [False, True], ids=["first_call", "cached"])
@pytest.mark.parametrize("call", [
    ((torch.ones(3), torch.tensor([5])), {}),  # the graph raises; the frame reruns natively
    ((torch.ones(3),), {}),  # the arguments do not bind: eager's TypeError
    ((torch.ones(3), torch.tensor([1])), {"j": 1}),
], ids=["graph_raises", "missing_argument", "unknown_keyword"])
def test_an_exception_from_the_native_run_has_eagers_context(call, warm, handling):
    # the native run happened inside bytegraph's own except clause: the user's exception carried
    # GraphRaised (or the binding TypeError) as its __context__
    def f(x, i):
        return x[i] + 1

    args, kwargs = call
    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    if warm:
        compiled(torch.ones(3), torch.tensor([1]))
    actual = _raised(compiled, *args, handling=handling, **kwargs)
    expected = _raised(f, *args, handling=handling, **kwargs)
    assert_same(actual, expected)  # the type, message, cause and context chain
    binds = len(args) == 2 and not kwargs  # a call that does not bind compiles nothing
    assert cnt.frame_count == (1 if warm or binds else 0)


def test_exception_in_compiled_graph_at_run_time():
    def f(x, idx):
        return x[idx]

    # not check for the second call: one compiled function, a call that works, then one that raises
    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    x = torch.randn(4)
    assert_same(compiled(x, torch.tensor([1, 3])), f(x, torch.tensor([1, 3])))
    with pytest.raises(IndexError):
        f(x, torch.tensor([1, 9]))
    with pytest.raises(IndexError):
        compiled(x, torch.tensor([1, 9]))
    assert cnt.frame_count == 1


# ---- fullgraph --------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn, gb_type",
    [(with_print, "print"), (with_tensor_branch, "data-dependent branching")],
)
def test_fullgraph_raises_unsupported(fn, gb_type):
    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt, fullgraph=True)
    with pytest.raises(bytegraph.Unsupported) as info:
        compiled(torch.randn(3))
    assert info.value.gb_type == gb_type
    assert info.value.user_stack and info.value.user_stack[-1].filename == __file__
    assert gb_type in str(info.value)
    assert cnt.frame_count == 0


def test_fullgraph_captures_item_whatever_the_settings():
    # as torch.compile: under fullgraph a data-dependent scalar is a symbol, never a failing break
    with bytegraph.config.patch(capture_scalar_outputs=False):
        check(with_item, calls=[(torch.randn(3),), (torch.randn(3),)], fullgraph=True)


def test_fullgraph_compiles_code_without_breaks():
    def f(x):
        return (x * 2).relu()

    check(f, torch.randn(3), fullgraph=True)


def test_fullgraph_reports_user_errors_as_graph_breaks():
    # as torch.compile(fullgraph=True) does ("Observed exception"): the error is
    # met while tracing, before any code runs
    compiled = bytegraph.compile(missing_key, backend="eager", fullgraph=True)
    with pytest.raises(bytegraph.Unsupported) as info:
        compiled(torch.randn(3))
    assert info.value.gb_type == "uncaught exception"
    assert "KeyError" in info.value.context


def test_error_inside_no_grad_block_restores_grad_mode():
    def f(x, idx):
        with torch.no_grad():
            y = x[idx]
        return y * 2

    # not check: a call that works, then one that raises, on one compiled function
    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    x = torch.randn(4, requires_grad=True)
    assert_same(compiled(x, torch.tensor([1])), f(x, torch.tensor([1])))
    try:
        with pytest.raises(IndexError):
            compiled(x, torch.tensor([9]))
        assert torch.is_grad_enabled()  # as after eager's ``with`` block
    finally:
        torch.set_grad_enabled(True)
    assert cnt.frame_count == 1


def test_error_after_plain_set_grad_enabled_leaves_mode_as_eager():
    def f(x, idx):
        torch.set_grad_enabled(False)
        y = x[idx]
        torch.set_grad_enabled(True)
        return y

    # not check: f leaves the global grad mode switched when it raises; eager's is compared
    x = torch.randn(4, requires_grad=True)
    compiled = bytegraph.compile(f, backend="eager")
    compiled(x, torch.tensor([1]))
    try:
        with pytest.raises(IndexError):
            f(x, torch.tensor([9]))
        eager_mode = torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        with pytest.raises(IndexError):
            compiled(x, torch.tensor([9]))
        assert torch.is_grad_enabled() == eager_mode
    finally:
        torch.set_grad_enabled(True)


def test_tensor_work_in_try_except_keeps_eager_exception_handling():
    def f(x, idx):
        try:
            y = x[idx]
        except IndexError:
            y = x * 0
        return y

    x = torch.randn(4)  # the second call raises inside the try: the graph reruns the frame natively
    check(f, calls=[(x, torch.tensor([1])), (x, torch.tensor([9]))], fullgraph=True, reruns=1)


def test_with_block_is_not_a_try_statement():
    def f(x):
        with torch.no_grad():
            y = x * 2
        return y + 1

    check(f, torch.randn(3, requires_grad=True))


class LibraryError(RuntimeError):
    """A library's own error class (like einops.EinopsError)."""


@pytest.mark.parametrize("clause", ["KeyError", "(KeyError, LibraryError)", "LookupError", "(KeyError, ValueError)",
                                    "Exception", ""])
def test_tensor_work_in_try_stays_in_the_graph_whatever_the_except_clause(clause):
    namespace = {"LibraryError": LibraryError}
    exec(
        "def f(x, i, d):\n"
        "    try:\n"
        "        y = x[i].sin() * d['scale']\n"  # indexing with a tensor may raise on the data
        f"    except {clause}:\n"
        "        y = x * 0\n"
        "    return y\n",
        namespace,
    )
    f = namespace["f"]
    x, i = torch.randn(4), torch.tensor([1])  # the second call raises KeyError inside the try
    # one graph per dict (its keys are guarded), whatever the clause: the graph op stays in the graph
    check(f, calls=[(x, i, {"scale": 2.0}), (x, i, {})], graphs=2, fullgraph=True)


@pytest.mark.parametrize("clause", ["Exception", "LookupError", ""])
def test_operations_that_cannot_raise_on_the_data_stay_in_the_graph_inside_try(clause):
    namespace = {}
    exec(
        "def f(x, d):\n"
        "    try:\n"
        "        return ('ok', d['k']), x.sin() * 2 + 1\n"
        f"    except {clause}:\n"
        "        return ('raised',), x - 1\n",
        namespace,
    )
    f = namespace["f"]
    x = torch.randn(4)
    for d in ({"k": 3}, {}):  # the second raises KeyError inside the try
        check(f, x, d, fullgraph=True)
