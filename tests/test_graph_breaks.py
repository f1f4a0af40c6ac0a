"""Graph breaks that resume: each break kind compiled vs eager, with graph counts."""
import functools
import logging
import sys
import warnings

import pytest
import torch

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter, same
from tests.helpers import assert_same, break_types, check, check_module

#: from 3.12 CPython compiles a while loop's condition twice (before the loop and at its end): a
#: break on it happens at two instructions, each with a resume function of its own
LOOP_TEST_TWICE = sys.version_info >= (3, 12)


def test_break_mid_function_with_live_tensors_and_python_values(capsys):
    def f(x):
        scale = 3
        name = "w"
        y = x * 2
        print("native")
        return y + scale, name * 2, x.sin()

    x = torch.randn(4)  # before and after the print; the second call reuses both
    check(f, calls=[(x,), (x,)], graphs=2, breaks=1, gb_types=["print"])
    assert capsys.readouterr().out.count("native") == 4


def test_break_with_values_on_the_stack():
    def f(x):
        return torch.cat([x * 2, x + 1, torch.tensor([float(len(str(print("mid"))))])])

    x = torch.randn(3)  # x * 2 and x + 1 before the print, the cat after it
    check(f, calls=[(x,), (x,)], graphs=2, breaks=1, gb_types=["print"])


def test_two_breaks_in_a_row():
    def f(x):
        x = x + 1
        print("a")
        x = x * 2
        print("b")
        return x - 1

    x = torch.randn(4)
    check(f, calls=[(x,), (x,)], graphs=3, breaks=2, gb_types=["print"] * 2)


def test_break_inside_python_range_loop_resumes_each_iteration():
    def f(x):
        y = x.cos()
        for i in range(3):
            y = y + i
            print(i)
        return y * 2

    # the prefix with the first iteration, one graph per later iteration, the tail; the second
    # call finds every resume function's graph in its cache
    x = torch.randn(4)
    check(f, calls=[(x,), (x,)], graphs=4, breaks=3, gb_types=["print"] * 3)


def test_break_inside_enumerate_loop_over_modules_compiles_the_rest():
    layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(4))

    def f(x):
        for i, layer in enumerate(layers):
            x = layer(x).relu()
            if i == 1:
                print("halfway")
        return x

    x, cnt = torch.randn(2, 4), CompileCounter()
    check(f, calls=[(x,), (x,)], backend=cnt, graphs=2, breaks=1, gb_types=["print"])
    assert cnt.op_count == 8


@pytest.mark.parametrize("with_print", [False, True])
def test_break_in_loop_over_a_users_enumerate_leaves_its_count_where_eager_does(with_print):
    """An ``enumerate`` the caller made reaches the resume function's stack as
    itself: it is not modelled as one built for the call (its count cannot be
    written back), so after the call it continues from eager's count."""
    def f(x, pairs):
        for i, v in pairs:  # iterating an enumerate object is a break of its own
            x = x + v
            if with_print:
                print("step")
            if i == 2:
                break
        return x

    # check compares where each side's enumerate stopped
    # each step of the user's enumerate runs natively (a break per step) and each body is a graph; with
    # the print, the resume function after it has an entry per step (with ``v`` and ``i`` symbolic from
    # the second, automatic dynamic: they changed), the last returning them from a graph of no operations
    breaks = ["unsupported iteration"] * 4 if not with_print else (
        ["unsupported iteration"] * 2 + ["print", "unsupported iteration"] * 2 + ["print"])
    check(f, torch.zeros(2), enumerate([1, 2, 3, 4, 5, 6]), graphs=3 if not with_print else 5,
          breaks=len(breaks), gb_types=breaks)


def test_break_in_every_iteration_of_an_enumerate_loop_keeps_it_modelled():
    """The enumerate a resume function modelled is again one the break builds
    for the next resume function (the parameter that handed it over is no
    user's reference), so each iteration breaks only at the print."""
    def f(x, items):
        for i, v in enumerate(items):
            x = x * 2 + v
            print(i)
        return x, i

    # one graph per iteration, all entries of one resume function (the resume function's ``i``
    # argument is read only by the print's native call, so it guards nothing)
    args = (torch.ones(2), [1.0, 2.0, 3.0, 4.0])
    check(f, calls=[args, args], graphs=4, breaks=4, gb_types=["print"] * 4)


@pytest.mark.parametrize("values", [[1.0, 2.0, 3.0, 4.0, 5.0], (1.0, 2.0, 3.0, 4.0, 5.0), range(1, 6)],
                         ids=["list", "tuple", "range"])
def test_break_in_loop_leaves_an_input_iterator_where_eager_does(values):
    def f(x, it):
        for w in it:
            x = x * w
            print("step")
            if w > 2:
                break
        return x

    it = iter(values)
    next(it)  # not at its start: a range iterator reduces differently then
    # check compares where each side's iterator stopped; the resume function after the print has an
    # entry per step, the second with ``w`` symbolic (it changed) and no operations
    check(f, torch.ones(2), it, graphs=3, breaks=2, gb_types=["print"] * 2)


def test_break_in_loop_sees_items_appended_during_the_loop():
    def f(x, items):
        for w in items:
            x = x + w
            print("step")
            if len(items) < 4:
                items.append(w * 10)
        return x

    check(f, torch.zeros(2), [1, 2], graphs=4, breaks=4, gb_types=["print"] * 4)


@pytest.mark.parametrize("kind", ["list", "set"])
def test_an_exhausted_iterator_stays_exhausted_when_its_container_grows(kind):
    def f(x, items):
        it = iter(items)
        for v in it:
            x = x + v
        items.append(9) if kind == "list" else items.add(9)
        return x, next(it, None), next(it, "end")

    make = list if kind == "list" else set
    check(f, torch.zeros(2), make([1, 2]))  # (tensor, None, "end") as in eager


@pytest.mark.parametrize("break_in_loop", [False, True])
def test_an_input_iterator_run_to_its_end_stays_exhausted(break_in_loop):
    def f(x, it, items):
        for v in it:
            x = x + v
            if break_in_loop:
                print("step")
        items.append(5)
        print("after")  # the list is live across this break; the iterator is written back before it
        items.append(6)
        return x, next(it, None), items

    def grown_after_the_call(x, it, items):
        out = f(x, it, items)
        items.append(7)
        return out, list(it)  # still exhausted when the list grows after the call

    # the loop's graph; with the print in it, one graph per step; next() on the exhausted
    # input iterator, and list() of it, are traced (it is modelled as exhausted)
    breaks = ["print"] * (3 if break_in_loop else 1)  # the loop's print in f and in its one resume function
    items = [1, 2]
    check(f, torch.zeros(2), iter(items), items, graphs=2 if break_in_loop else 1, breaks=len(breaks), gb_types=breaks)
    # called from another frame
    check(grown_after_the_call, torch.zeros(2), iter(items), items, graphs=2 if break_in_loop else 1,
          breaks=len(breaks), gb_types=breaks)


def test_long_loop_with_a_break_stops_nesting_resume_functions():
    def f(x):
        for i in range(3000):  # three times Python's default recursion limit
            x = x + 1
            print(end="")
        return x

    limit = bytegraph.config.recompile_limit
    x = torch.zeros(2)
    with warnings.catch_warnings(record=True) as record:  # the later iterations run natively, quietly
        warnings.simplefilter("always")
        # the prefix's graph, then one per iteration (the position in the range differs) in the one
        # resume function, up to its recompile limit; the rest of the loop runs natively
        check(f, calls=[(x,), (x,)], graphs=limit + 1, breaks=limit + 1, gb_types=["print"] * (limit + 1))
    assert not [w for w in record if "recompile_limit" in str(w.message)]


def test_long_loop_breaking_on_identical_iterations_stops_nesting_its_resume_function():
    def f(x):
        while (x < 3000).all():  # each iteration breaks at the data-dependent branch
            x = x + 1
        return x

    # the prefix's graph and one of the resume function, which every iteration hits (up to the
    # nesting cap: the rest of the loop runs natively, as Python's stack would not hold 3000 calls)
    x = torch.zeros(2)
    n = 2 + LOOP_TEST_TWICE
    check(f, calls=[(x,), (x,)], graphs=n, breaks=n, gb_types=["data-dependent branching"] * n)


def level3(x):
    print("deep")
    return x * 5


def level2(x):
    return level3(x + 1) - 1


def level1(x):
    return level2(x * 2) / 2


def test_break_three_levels_down_compiles_each_callee_frame():
    def f(x):
        return level1(x.sin()).cos()

    # each frame on the path is split around its call: f, level1, level2 (2 graphs each), level3 (1)
    x = torch.randn(4)
    check(f, calls=[(x,), (x,)], graphs=7, breaks=1, gb_types=["print"])
    stats = {s.name: s for s in metrics.FRAMES.values()}
    assert {"level1", "level2", "level3"} <= set(stats)


class _Gate:
    """A callable object (``__call__`` in Python) whose body breaks."""

    def __init__(self, scale):
        self.scale = scale

    def __call__(self, x):
        y = x * self.scale
        print("gate")
        return y + 1


def _gated(x, factor):
    y = x * factor
    print("partial")
    return y - 1


@pytest.mark.parametrize("kind", ["callable object", "partial of a function", "partial of a callable object"])
def test_break_inside_a_called_object_compiles_its_call_frame(kind):
    """A callee the compiled code routes after a break inside it compiles its
    own frame whatever kind of callable it is: an object whose class defines
    ``__call__`` in Python (its ``__call__``), a ``functools.partial`` (the
    function it holds), as a plain function or bound method does."""

    callee = {"callable object": _Gate(3.0), "partial of a function": functools.partial(_gated, factor=2.0),
              "partial of a callable object": functools.partial(_Gate(5.0))}[kind]

    def f(x):
        return callee(x.sin()).cos()

    # f before and after the call; the callee's frame before and after its print
    check(f, torch.randn(4), graphs=4, breaks=1, gb_types=["print"])
    callee_frames = [s for s in metrics.FRAMES.values() if s.name in ("_Gate.__call__", "_gated")]
    assert len(callee_frames) == 1 and callee_frames[0].graphs


def test_a_called_class_is_not_routed_as_an_object():
    """Calling a class builds an instance (``type.__call__``, C code): it is not
    one of the objects whose ``__call__`` is routed, and runs natively."""
    class Box:
        def __init__(self, x):
            print("init")
            self.x = x * 2

    def f(x):
        return Box(x.sin()).x.cos()

    check(f, torch.randn(4), graphs=2, breaks=1, gb_types=["print"])


def test_break_inside_no_grad_is_reentered():
    def f(x):
        with torch.no_grad():
            y = x * 2
            print("inside")
            z = y + 1
            inner = torch.is_grad_enabled()
        return z, inner, torch.is_grad_enabled(), (x * 3).requires_grad

    x = torch.randn(3, requires_grad=True)
    check(f, calls=[(x,), (x,)], graphs=2, breaks=1, gb_types=["print"])
    assert torch.is_grad_enabled()


def test_data_dependent_if_runs_both_branches_across_calls():
    def f(x):
        y = x + 1
        if y.sum() > 0:
            return y * 2
        return y - 2

    pos, neg = torch.ones(4), -torch.ones(4) * 3  # prefix, then one resume function per branch
    check(f, calls=[(pos,), (neg,), (pos,)], graphs=3, breaks=1, gb_types=["data-dependent branching"])


def test_item_breaks_when_scalar_capture_is_off():
    def f(x):
        v = x.sum().item()
        return x * v

    x = torch.randn(4)
    with bytegraph.config.patch(capture_scalar_outputs=False):
        check(f, calls=[(x,), (x,)], graphs=2, breaks=1, gb_types=["data-dependent tensor method"])


def test_unmodelled_opcode_breaks_and_the_rest_runs_natively():
    def f(x, d):
        y = x + 1
        v = d["k"]

        def read():  # makes v a cell variable
            return v

        del v  # DELETE_DEREF (deleting a cell variable) is not modelled by the translator
        return y * d["k"]

    args = (torch.randn(4), {"k": 3})  # the prefix; the rest runs natively
    check(f, calls=[args, args], graphs=1, breaks=1, gb_types=["unsupported bytecode"])


def test_exception_from_native_piece_propagates_unchanged():
    def f(x):
        x.add_(1)
        print("before")
        raise KeyError(f"boom {x.sum().item():.0f}")

    # "boom 4", x written once
    check(f, torch.ones(2), raises=KeyError, graphs=2, breaks=3,
          gb_types=["print", "str of traced value", "uncaught exception"])


def test_exception_inside_with_block_restores_grad_mode():
    def f(x):
        with torch.no_grad():
            y = x * 2
            print("inside")
            raise ValueError("inside no_grad")
        return y

    check(f, torch.ones(2), raises=ValueError, graphs=1, breaks=2, gb_types=["print", "uncaught exception"])
    assert torch.is_grad_enabled()


def test_closure_survives_a_break():
    def f(x):
        k = 2

        def g(t):
            return t * k

        print("c")
        k = 3
        return g(x)

    x = torch.randn(4)
    check(f, calls=[(x,), (x,)], graphs=1, breaks=1, gb_types=["print"])  # nothing to compute before the print


def test_fullgraph_raises_with_gb_type_and_user_line():
    def f(x):
        y = x + 1
        print("no")  # the line the message must name
        return y

    line = f.__code__.co_firstlineno + 2
    compiled = bytegraph.compile(f, backend="eager", fullgraph=True)
    with pytest.raises(bytegraph.Unsupported) as info:
        compiled(torch.ones(2))
    err = info.value
    assert err.gb_type == "print"
    assert err.location == f"{__file__}:{line}"
    text = str(err)
    assert "Graph break [print]" in text and f"line {line}" in text and "Hint:" in text


def test_explain_reports_graphs_breaks_and_guards():
    def f(x):
        y = x.relu()
        print("explain")
        return y + 1

    x = torch.randn(3)
    out = bytegraph.explain(f)(x.clone())
    assert out.graph_count == 2
    assert out.graph_break_count == 1
    assert out.break_reasons[0].gb_type == "print"
    assert out.break_reasons[0].user_stack[-1].name == "f"
    assert [len(ops) for ops in out.ops_per_graph] == [1, 1]
    assert any("x" in g for g in out.guards)
    assert len(out.compile_times) == 2
    assert_same(out.result, f(x))  # the result of the call
    assert "Graph break count: 1" in str(out)


def test_graph_breaks_log_channel(caplog):  # the log channel is under test (compiled directly)
    def f(x):
        print("logged")
        return x + 1

    bytegraph.set_logs("graph_breaks")
    logger = logging.getLogger("bytegraph.graph_breaks")
    logger.addHandler(caplog.handler)
    try:
        bytegraph.compile(f, backend="eager")(torch.ones(2))
    finally:
        logger.removeHandler(caplog.handler)
        bytegraph.set_logs()
    assert any("Graph break [print]" in r.getMessage() for r in caplog.records)


def test_docs_list_every_graph_break_type_and_tensor_name():
    import runpy

    gen = runpy.run_path(str(__import__("pathlib").Path(__file__).parent.parent / "tools" / "gen_docs.py"))
    sites = gen["graph_break_sites"]()
    doc = (gen["DOCS"] / "graph_breaks.md").read_text()
    missing = [gb for gb in sites if f"## {gb}\n" not in doc]
    assert not missing, f"docs/graph_breaks.md lacks {missing}; run python tools/gen_docs.py"
    tensor_doc = (gen["DOCS"] / "tensor_support.md").read_text()
    unlisted = [n for n in dir(torch.Tensor) if not n.startswith("_") and f"| `{n}` |" not in tensor_doc]
    assert not unlisted, f"docs/tensor_support.md lacks {unlisted}; run python tools/gen_docs.py"
    assert gen["main"](["--check"]) == 0  # every generated page is current


def test_break_inside_an_except_clause_runs_the_handler_under_the_real_exception(capsys):
    def f(x, d):
        y = x + 1
        try:
            value = d["missing"]
        except KeyError as e:
            print("handling", e)
            info = sys.exc_info()[0]
            value = y * 2
        return value, info

    args = (torch.randn(4), {})
    check(f, calls=[args, args], graphs=1, breaks=1, gb_types=["print"])
    assert capsys.readouterr().out.count("handling 'missing'") == 4


def test_bare_raise_after_a_break_in_an_except_clause_reraises():
    def f(x):
        try:
            raise ValueError("original")
        except ValueError:
            print("logged")
            raise

    check(f, torch.ones(2), raises=ValueError, graphs=0, breaks=1, gb_types=["print"])


def test_break_inside_autocast_and_inference_mode_leaves_no_state_behind(capsys):
    def f(a, b):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = a @ b
            print("break")
            z = a @ b
        return y, z, a @ b

    def g(a):
        with torch.inference_mode():
            y = a * 2
            print("break")
            z = a * 3
        return y.is_inference(), z.is_inference(), (a * 4).is_inference()

    a, b = torch.randn(4, 4), torch.randn(4, 4)
    # before and after the print, the tail; the context is re-entered in the resume function by
    # a native call, a second break (torch.compile: 2 graphs, 1 break)
    for fn, args in ((f, (a, b)), (g, (a,))):
        check(fn, calls=[args, args], graphs=3, breaks=2, gb_types=["print", "unsupported context manager"])
        assert not torch.is_autocast_enabled("cpu") and not torch.is_inference_mode_enabled()


# Grad mode switched by a plain torch.set_grad_enabled(m) call, then with-blocks
# holding a break: each context is re-made after the break under the mode the
# eager object saved, so its exit restores what eager restores.
def _plain_set_then_enable_grad(x):
    torch.set_grad_enabled(False)
    with torch.enable_grad():
        y = x * 2
        print("break")
    z = x * 2
    torch.set_grad_enabled(True)
    return y.requires_grad, z.requires_grad


def _plain_set_then_no_grad(x):
    torch.set_grad_enabled(False)
    with torch.no_grad():
        print("break")
    return (x * 2).requires_grad


def _plain_set_between_nested_no_grad(x):
    with torch.no_grad():
        torch.set_grad_enabled(True)
        with torch.no_grad():
            print("break")
        z = x * 2
    return z.requires_grad


def _plain_set_between_nested_enable_grad(x):
    torch.set_grad_enabled(False)
    with torch.enable_grad():
        torch.set_grad_enabled(False)
        with torch.enable_grad():
            print("break")
        a = x * 2
    return a.requires_grad, (x * 2).requires_grad


def _plain_set_then_inference_mode(x):
    torch.set_grad_enabled(False)
    with torch.inference_mode():
        with torch.inference_mode(False):
            y = x * 2
            print("break")
        z = x * 2
    return y.requires_grad, z.requires_grad, (x * 2).requires_grad


def _plain_set_inside_autocast(x):
    torch.set_grad_enabled(False)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with torch.enable_grad():
            y = x @ x.T
            print("break")
        z = x * 2
    return y.dtype, y.requires_grad, z.requires_grad, (x * 2).requires_grad


def _plain_set_then_break_in_loop(x):
    torch.set_grad_enabled(False)
    with torch.enable_grad():
        for _ in range(2):
            print("break")
    return (x * 2).requires_grad


def _plain_set_then_break(x):
    torch.set_grad_enabled(False)
    print("break")
    return (x * 2).requires_grad


def _set_grad_enabled_object_entered_later(x):
    g = torch.set_grad_enabled(False)  # saves the mode it found; entering switches to False again
    torch.set_grad_enabled(True)
    with g:
        y = x * 2
        print("break")
    return y.requires_grad, (x * 2).requires_grad


def _no_grad_entered_twice(x):
    g = torch.no_grad()
    with g:
        with g:  # the second entry overwrites the saved mode (False)
            print("break")
    return (x * 2).requires_grad


def _set_grad_enabled_as_decorator(x):
    double = torch.set_grad_enabled(False)(lambda t: t * 2)  # decorating undoes the switch
    return (x * 2).requires_grad, double(x).requires_grad


@pytest.mark.parametrize("fn", [
    _plain_set_then_enable_grad, _plain_set_then_no_grad, _plain_set_between_nested_no_grad,
    _plain_set_between_nested_enable_grad, _plain_set_then_inference_mode, _plain_set_inside_autocast,
    _plain_set_then_break_in_loop, _plain_set_then_break, _set_grad_enabled_object_entered_later,
    _no_grad_entered_twice, _set_grad_enabled_as_decorator,
])
@pytest.mark.parametrize("start", [True, False])
def test_grad_mode_switched_by_a_plain_call_survives_breaks_in_with_blocks(fn, start, capsys):
    def run(f):
        torch.set_grad_enabled(start)
        try:
            return f(torch.randn(3, 3, requires_grad=True)), torch.is_grad_enabled()
        finally:
            torch.set_grad_enabled(True)

    # not check: fn switches the global grad mode, which run() sets before and restores after each side
    expected = run(fn)
    compiled = bytegraph.compile(fn, backend="eager")
    assert run(compiled) == expected
    assert run(compiled) == expected


def test_python_attributes_on_tensors_are_read_from_the_instance_dict(capsys):
    """``y.tag = 5`` is stored on the real tensor; the resume function, and
    hasattr/getattr on inputs, read the real instance dict (guarded) instead of
    asking the FakeTensor, which never has the attribute."""
    def stored_then_break(x):
        y = x + 1
        y.tag = 5
        print("break")
        return getattr(y, "tag", "MISSING"), hasattr(y, "tag"), y.tag

    def read_input(x):
        return getattr(x, "tag", "MISSING"), hasattr(x, "tag"), hasattr(x, "fake_mode"), x * 2

    check(stored_then_break, torch.ones(2), breaks=1, gb_types=["print"])  # x + 1; nothing after the print

    def tagged(tag):
        x = torch.ones(2)
        if tag is not None:
            x.tag = tag
        return (x,)

    check(read_input, calls=[tagged(7), tagged(8), tagged(None)], graphs=3)  # the attribute is guarded


def _raise_chained():
    try:
        raise KeyError("in callee")
    except KeyError as e:
        raise ValueError("chained") from e


@pytest.mark.parametrize("case", ["from", "from_none", "finally", "callee_in_handler"])
def test_uncaught_exception_is_raised_natively_where_it_was_raised(case):
    """An exception escaping the frame is raised by the native run with eager's
    chain and traceback: the frame breaks where it was first raised (in an
    except clause: where the handled one was), after a compiled prefix."""
    def f(x):
        x.mul_(2)
        try:
            if case == "finally":
                raise KeyError("k")
            try:
                raise KeyError("k")
            except KeyError as e:
                if case == "from":
                    raise ValueError("v") from e
                if case == "from_none":
                    raise ValueError("v") from None
                _raise_chained()
        finally:
            x.add_(1)

    def outcome(fn):
        x = torch.ones(2)
        with pytest.raises(Exception) as info:
            fn(x)
        chain, e = [], info.value
        while e is not None:
            chain.append((type(e).__name__, e.args, type(e.__cause__).__name__, e.__suppress_context__))
            e = e.__context__
        return chain, info.traceback[-1].name, x.tolist()

    # not check: compares the whole exception chain and where the traceback ends
    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    for _ in range(2):
        assert outcome(compiled) == outcome(f)
    assert cnt.frame_count == 1
    assert break_types() == ["uncaught exception"]


def test_break_inside_a_routed_callee_is_reported_once():
    class M(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            print("break")
            return y + 1

    # not check: what is tested is how the report counts a break two frames recorded
    model = bytegraph.compile(M(), backend="eager")
    assert same(model(torch.ones(2)), torch.full((2,), 3.0))
    distinct = metrics.distinct_breaks(list(metrics.FRAMES.values()))
    recorded = [b for stats in metrics.FRAMES.values() for b in stats.breaks]
    assert [b.gb_type for _, b in distinct] == ["print"] and len(recorded) == 2
    from bytegraph.report import format_report
    assert "1 graph break(s)" in format_report()


class _Maker:
    def __init__(self, *items):
        self.items = items

    @classmethod
    def make(cls, items):
        print("native")
        return cls(*items)

    def scale(self, x):
        print("native")
        return x + 1


class _ChildMaker(_Maker):
    @classmethod
    def make(cls, items):
        return super().make([v * 10 for v in items])

    def scale(self, x):
        return super().scale(x) * 2


class _GrandchildMaker(_ChildMaker):
    @classmethod
    def make(cls, items):
        print("native")
        return super().make(items + [3])


def test_parent_method_reached_through_super_breaks(capsys):
    # the parent method that breaks runs as a frame of its own: it must be the
    # parent's function bound to the object, not `obj.<name>` (the child's: endless recursion)
    def f(x):
        made = _ChildMaker.make([1, 2])
        deeper = _GrandchildMaker.make([1])
        return _ChildMaker().scale(x), type(made).__name__, made.items, type(deeper).__name__, deeper.items

    x = torch.ones(2)
    check(f, calls=[(x,), (x,)], graphs=4, breaks=4, gb_types=["print"] * 4)
    assert capsys.readouterr().out.count("native") == 2 * 2 * 4


class _Plus1:
    def scale(self, x):
        return x + 1


class _CellSelf(_Plus1):
    def scale(self, x):
        get = lambda: self  # noqa: E731 - makes `self` a cell variable
        y = super().scale(x)
        print("native")
        y = super().scale(y) * 2
        print("native")
        return super().scale(y) + (get() is self)


class _CellSelfRebound(_Plus1):
    def scale(self, x):
        def rebind():
            nonlocal self
            self = _CellSelfReboundChild()

        print("native")
        rebind()
        return super().scale(x), type(self).__name__


class _CellSelfReboundChild(_CellSelfRebound):
    pass


class _PlainSelfRebound(_Plus1):
    def scale(self, x):
        print("native")
        self = _PlainSelfReboundChild()
        return super().scale(x), type(self).__name__


class _PlainSelfReboundChild(_PlainSelfRebound):
    pass


@pytest.mark.parametrize("cls", [_CellSelf, _CellSelfRebound, _PlainSelfRebound])
def test_zero_argument_super_in_resume_functions(cls):
    # super() reads the frame's first argument (a cell's contents when a closure
    # captures it): resume functions must receive it first, as the frame has it
    # _CellSelf: a graph before, between and after its prints; the rebinding ones compute after
    # their print only: a closure rebinding self runs natively (torch.compile: 1 graph)
    graphs = {_CellSelf: 3, _CellSelfRebound: 0, _PlainSelfRebound: 1}[cls]
    x = torch.ones(2)
    breaks = ["print"] * (2 if cls is _CellSelf else 1)
    check(cls().scale, calls=[(x,), (x,)], graphs=graphs, breaks=len(breaks), gb_types=breaks)
    args = (cls(), x)  # the method as a routed callee
    check(lambda obj, x: obj.scale(x), calls=[args, args], graphs=graphs, breaks=len(breaks), gb_types=breaks)


# --- the untraceable stretch: consecutive breaks with no graph work between them ---------------

def _frames_compiled(fn, *args):
    """(result, frames compiled (the function and its resume functions), graphs, break gb_types)."""
    with metrics.recording() as rec:
        out = bytegraph.compile(fn, backend="eager")(*args)
    return out, len(rec.compiles), sum(len(c.graphs) for c in rec.compiles), [b.gb_type for b in rec.breaks]


def test_consecutive_untraceable_calls_run_natively_as_one_piece(capsys):
    log = logging.getLogger("bytegraph.tests.stretch")

    def f(x):
        x = x + 1
        print("a")
        print("b", 2)
        log.warning("%s", "c")
        n = 3  # plain Python between the calls: in the stretch, live after it
        print("d", n)
        return x * n

    x = torch.randn(3)
    out, frames, graphs, breaks = _frames_compiled(f, x)
    assert same(out, f(x))
    assert capsys.readouterr().out == "a\nb 2\nd 3\n" * 2
    assert (frames, graphs, breaks) == (2, 2, ["print"])  # one resume function after the whole stretch


def test_a_call_on_the_native_result_that_logs_joins_the_stretch(caplog):
    import json

    log = logging.getLogger("bytegraph.tests.stretch")
    cfg = {"a": [1, 2]}

    def f(x):
        x = x + 1
        log.warning("%s", json.dumps(cfg))
        return x * 2

    x = torch.randn(3)
    with caplog.at_level(logging.WARNING, logger=log.name):
        out, frames, graphs, breaks = _frames_compiled(f, x)
        expected = f(x)
    assert same(out, expected)
    assert [r.getMessage() for r in caplog.records] == ['{"a": [1, 2]}'] * 2
    assert graphs == 2 and "call to skipped function" not in breaks and "logging or warning with traced values" \
        not in breaks  # log.warning ran natively in json.dumps's stretch, not in a resume function of its own


def test_the_stretch_stops_where_the_native_result_meets_graph_work(capsys):
    def f(x):
        x = x + 1
        r = print("a")
        n = len(str(r))  # traceable once print's result is known: the resume function traces it
        return torch.full((2,), float(n)) + x[:2] * n

    x = torch.randn(3)
    out, frames, graphs, breaks = _frames_compiled(f, x)
    assert same(out, f(x))
    assert capsys.readouterr().out == "a\n" * 2
    assert (frames, graphs, breaks) == (2, 2, ["print"])
    cnt = CompileCounter()
    check(f, x, backend=cnt, graphs=2, breaks=1, gb_types=["print"])
    assert cnt.op_count == 5  # add; then full, slice, mul, add in the resume function's graph


def test_while_loop_breaking_on_each_iteration_calls_one_resume_function_again():
    def f(x):
        while (x > 1).any():  # five iterations for [20, 3]
            x = x / 2
        return x

    # the prefix, and one entry of the resume function after the branch, which every iteration
    # (and every later call) hits; not one nested resume function per iteration
    x = torch.tensor([20.0, 3.0])
    n = 2 + LOOP_TEST_TWICE
    check(f, calls=[(x,)] * 3, graphs=n, breaks=n, gb_types=["data-dependent branching"] * n)
    assert len(metrics.FRAMES) == 1 + n  # f, its resume function(s) in the loop, the one after the loop
    assert not [s.name for s in metrics.FRAMES.values() if "resume_in_resume" in s.name]


class _Scaled(torch.nn.Linear):
    def forward(self, x):
        scale = lambda: self.weight.sum()  # noqa: E731  (self is a cell: the closure captures it)
        for _ in range(3):
            x = super().forward(x) * 0.5 + scale()
            print(end="")
        return x


def test_loop_breaking_in_a_method_with_super_and_a_cell_for_self():
    # the prefix, then an entry per later iteration (the tail computes nothing); the module's entry
    # frame breaks too, at its call of forward
    x = torch.randn(2, 3)
    check_module(_Scaled(3, 3), calls=[(x,), (x,)], graphs=3, breaks=3, gb_types=["print"] * 3)


def test_warnings_in_a_loop_that_breaks_keep_eager_locations():
    def f(x):
        for i in range(4):
            x = x + 1
            warnings.warn(f"step {i}", stacklevel=2)
            print(end="")
        return x

    def caller(fn, x):
        return fn(x)

    seen = []
    for fn in (f, bytegraph.compile(f, backend="eager")):  # direct: the location is what is compared
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            caller(fn, torch.zeros(2))
        seen.append([(str(w.message), w.filename, w.lineno) for w in record])
    assert seen[0] == seen[1] and len(seen[0]) == 4
