"""``error_on_graph_break`` regions: a ``with`` block of
``bytegraph.error_on_graph_break(flag)`` (or torch's
``torch._dynamo.error_on_graph_break``, traced as it) decides inside it whether a
graph break raises, in place of ``fullgraph``. CPython's semantics tests as
PyTorch ports them wrap code that torch.compile may not trace (class statements)
in ``error_on_graph_break(False)`` inside bodies compiled whole."""
import pytest
import torch

import bytegraph
from helpers import check, t

BREAK = torch._dynamo.graph_break


def test_region_with_nothing_to_break_is_one_graph():
    def f(x):
        with bytegraph.error_on_graph_break(False):
            y = x + 1
        return y * 2

    check(f, t(3), fullgraph=True)


def test_torch_region_is_traced_as_bytegraph_region():
    def f(x):
        with torch._dynamo.error_on_graph_break(False):
            y = x.sin()
        return y + 1

    check(f, t(3), fullgraph=True)


@pytest.mark.parametrize("factory", [bytegraph.error_on_graph_break, torch._dynamo.error_on_graph_break])
def test_break_allowed_inside_region_under_fullgraph(factory):
    def f(x):
        with factory(False):
            y = x + 1
            BREAK()
            y = y * 3
        return y - 1

    check(f, t(3), fullgraph=True, graphs=2, breaks=1)


def test_print_inside_region_under_fullgraph():
    def f(x):
        with torch._dynamo.error_on_graph_break(False):
            print("inside")
            y = x + 1
        return y

    check(f, t(3), fullgraph=True, graphs=1, breaks=1)


def test_two_breaks_inside_region_resume_inside_it():
    # the second break happens in the resume function of the first: its trace starts inside the region
    def f(x):
        with bytegraph.error_on_graph_break(False):
            y = x + 1
            BREAK()
            y = y * 2
            BREAK()
        return y + 5

    check(f, t(3), fullgraph=True, graphs=3, breaks=2)


def test_break_after_region_still_raises_under_fullgraph():
    def f(x):
        with bytegraph.error_on_graph_break(False):
            y = x + 1
            BREAK()
        BREAK()
        return y

    with pytest.raises(bytegraph.Unsupported, match="explicit graph break"):
        bytegraph.compile(f, fullgraph=True, backend="eager")(t(3))


def test_break_after_region_raises_without_a_break_inside():
    def f(x):
        with bytegraph.error_on_graph_break(False):
            y = x + 1
        BREAK()
        return y

    with pytest.raises(bytegraph.Unsupported, match="explicit graph break"):
        bytegraph.compile(f, fullgraph=True, backend="eager")(t(3))


def test_raising_region_without_fullgraph():
    def f(x):
        y = x + 1
        with bytegraph.error_on_graph_break(True):
            BREAK()
        return y

    with pytest.raises(bytegraph.Unsupported, match="explicit graph break"):
        bytegraph.compile(f, backend="eager")(t(3))


def test_innermost_region_decides():
    def allowed(x):
        with bytegraph.error_on_graph_break(True):
            with bytegraph.error_on_graph_break(False):
                y = x + 1
                BREAK()
        return y * 2

    check(allowed, t(3), graphs=2, breaks=1)

    def raising(x):
        with bytegraph.error_on_graph_break(False):
            with bytegraph.error_on_graph_break(True):
                BREAK()
        return x

    with pytest.raises(bytegraph.Unsupported):
        bytegraph.compile(raising, backend="eager")(t(3))


def test_region_flag_from_a_variable():
    def f(x, allow):
        with bytegraph.error_on_graph_break(not allow):
            y = x + 1
            BREAK()
        return y * 2

    check(f, t(3), True, fullgraph=True, graphs=2, breaks=1)


def test_region_made_before_the_call():
    allow = torch._dynamo.error_on_graph_break(False)

    def f(x):
        with allow:
            y = x + 1
            BREAK()
        return y * 2

    check(f, t(3), fullgraph=True, graphs=2, breaks=1)


def test_class_statement_escaping_inside_region_under_fullgraph():
    # the class is live after the graph: its statement runs natively, allowed by the region
    def f(x):
        with torch._dynamo.error_on_graph_break(False):
            class Box(dict):
                pass
        b = Box(a=1)
        return x + b["a"], b

    check(f, t(3), fullgraph=True, graphs=1, breaks=1)  # the statement runs natively, the rest is one graph


def test_break_in_a_callee_entering_its_own_region():
    def g(x):
        with bytegraph.error_on_graph_break(False):
            BREAK()
            return x + 1

    def f(x):
        return g(x) * 2

    # f breaks at the call (g runs as its own frame, split inside the region): g's rest and f's rest
    check(f, t(3), fullgraph=True, graphs=2, breaks=1)


def test_exception_leaving_region_is_eagers():
    def f(x):
        try:
            with bytegraph.error_on_graph_break(False):
                raise KeyError("k")
        except KeyError as e:
            return x + len(e.args)

    check(f, t(3), fullgraph=True)


def test_wrong_flag_type_raises_eagers_type_error():
    def f(x):
        with bytegraph.error_on_graph_break("no"):
            return x + 1

    check(f, t(3), raises=TypeError, graphs=0, breaks=1)


def test_region_object_is_a_no_op_when_run_natively():
    with bytegraph.error_on_graph_break(False) as entered:
        assert entered is None
    assert repr(bytegraph.error_on_graph_break(True)) == "error_on_graph_break(True)"
