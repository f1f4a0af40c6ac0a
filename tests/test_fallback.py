"""Graph breaks and errors: unsupported code runs natively (the rest stays
compiled) with eager results and a recorded break; user exceptions surface as
in eager; fullgraph raises."""
import sys

import pytest
import torch

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import same
from tests.helpers import breaks_of, compile_counted


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
        # no tensor work around the break; from 3.12 the comprehension is inlined (PEP 709), so the
        # resume function receives the list itself, whose floats turn symbolic when they change
        # (automatic dynamic) and the second call's products are a graph
        (with_tolist, "data-dependent tensor method", 0 if sys.version_info < (3, 12) else 1),
    ],
)
def test_unsupported_code_runs_natively_and_records_the_break(fn, gb_type, graphs, capsys):
    compiled, cnt = compile_counted(fn)
    with bytegraph.config.patch(capture_scalar_outputs=False):  # on (the default), item() and tolist() are traced
        for x in (torch.ones(4), -torch.ones(4)):
            assert same(compiled(x), fn(x))
    assert cnt.frame_count == graphs
    assert breaks_of(fn) == [gb_type]
    stats = metrics.FRAMES[id(fn.__code__)]
    assert not stats.ran_natively  # compiled around the break, not given up on
    (record,) = stats.breaks
    assert record.user_stack and record.user_stack[-1].filename == __file__


def test_print_output_is_produced_once(capsys):
    compiled, _ = compile_counted(with_print)
    compiled(torch.randn(2))
    assert capsys.readouterr().out == "value computed\n"


def test_break_inside_an_inlined_function_records_the_inner_frame():
    def inner(x):
        print("inner")
        return x + 1

    def outer(x):
        return inner(x * 2) * 3

    compiled, cnt = compile_counted(outer)
    x = torch.randn(3)
    assert same(compiled(x), outer(x))
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

    log = []
    compiled, _ = compile_counted(f)
    x = torch.randn(2)
    assert same(compiled(x, log), x + 1)
    assert log == ["start", "end"]


def test_capture_scalar_outputs_is_not_required_for_correctness():
    compiled, _ = compile_counted(with_item)
    x = torch.randn(4)
    assert same(compiled(x), with_item(x))


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


def failed_assert(x):
    assert x.dim() == 2, "need a matrix"
    return x


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
    "fn",
    [raises_value_error, missing_key, bad_index, zero_division, shape_mismatch, missing_attribute,
     failed_assert, bad_call, unbound_local, exception_in_inlined_callee],
)
def test_user_exceptions_surface_as_in_eager(fn):
    x = torch.randn(3)
    with pytest.raises(Exception) as eager:
        fn(x)
    compiled, cnt = compile_counted(fn)
    for _ in range(2):  # first call (tracing) and a later call behave the same
        with pytest.raises(type(eager.value)) as actual:
            compiled(x)
        assert type(actual.value) is type(eager.value)
        assert str(actual.value) == str(eager.value)


def test_exception_in_compiled_graph_at_run_time():
    def f(x, idx):
        return x[idx]

    compiled, cnt = compile_counted(f)
    x = torch.randn(4)
    assert same(compiled(x, torch.tensor([1, 3])), f(x, torch.tensor([1, 3])))
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
    compiled, cnt = compile_counted(fn, fullgraph=True)
    with pytest.raises(bytegraph.Unsupported) as info:
        compiled(torch.randn(3))
    assert info.value.gb_type == gb_type
    assert info.value.user_stack and info.value.user_stack[-1].filename == __file__
    assert gb_type in str(info.value)
    assert cnt.frame_count == 0


def test_fullgraph_captures_item_whatever_the_settings():
    # as torch.compile: under fullgraph a data-dependent scalar is a symbol, never a failing break
    compiled, cnt = compile_counted(with_item, fullgraph=True)
    with bytegraph.config.patch(capture_scalar_outputs=False):
        for _ in range(2):
            x = torch.randn(3)
            assert same(compiled(x), with_item(x))
    assert cnt.frame_count == 1


def test_fullgraph_compiles_code_without_breaks():
    def f(x):
        return (x * 2).relu()

    compiled, cnt = compile_counted(f, fullgraph=True)
    x = torch.randn(3)
    assert same(compiled(x), f(x))
    assert cnt.frame_count == 1


def test_fullgraph_reports_user_errors_as_graph_breaks():
    # as torch.compile(fullgraph=True) does ("Observed exception"): the error is
    # met while tracing, before any code runs
    compiled, _ = compile_counted(missing_key, fullgraph=True)
    with pytest.raises(bytegraph.Unsupported) as info:
        compiled(torch.randn(3))
    assert info.value.gb_type == "uncaught exception"
    assert "KeyError" in info.value.context


def test_error_inside_no_grad_block_restores_grad_mode():
    def f(x, idx):
        with torch.no_grad():
            y = x[idx]
        return y * 2

    compiled, cnt = compile_counted(f)
    x = torch.randn(4, requires_grad=True)
    assert same(compiled(x, torch.tensor([1])), f(x, torch.tensor([1])))
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

    x = torch.randn(4, requires_grad=True)
    compiled, _ = compile_counted(f)
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

    compiled, _ = compile_counted(f)
    x = torch.randn(4)
    for idx in (torch.tensor([1]), torch.tensor([9])):  # the second raises inside the try
        assert same(compiled(x, idx), f(x, idx))
    assert breaks_of(f) == ["graph operation in try block"]


def test_with_block_is_not_a_try_statement():
    def f(x):
        with torch.no_grad():
            y = x * 2
        return y + 1

    compiled, cnt = compile_counted(f)
    x = torch.randn(3, requires_grad=True)
    assert same(compiled(x), f(x))
    assert cnt.frame_count == 1


class LibraryError(RuntimeError):
    """A library's own error class (like einops.EinopsError)."""


@pytest.mark.parametrize("clause, breaks", [
    ("KeyError", False),
    ("(KeyError, LibraryError)", False),
    ("LookupError", True),  # catches IndexError
    ("(KeyError, ValueError)", True),
    ("Exception", True),
    ("", True),  # bare except
])
def test_tensor_work_in_try_breaks_only_when_an_except_clause_can_catch_torch_errors(clause, breaks):
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
    compiled, cnt = compile_counted(f)
    x, i = torch.randn(4), torch.tensor([1])
    for d in ({"scale": 2.0}, {}):  # the second raises KeyError inside the try
        assert same(compiled(x, i, d), f(x, i, d))
    assert (breaks_of(f) == ["graph operation in try block"]) == breaks


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
        compiled, cnt = compile_counted(f, fullgraph=True)
        assert same(compiled(x, d), f(x, d))
        assert cnt.frame_count == 1
