"""Never fail where eager works: a backend that refuses a graph of code eager
runs leaves the frame to run natively (with one warning), AOTAutograd gets
inputs as they are (not as the trace wrote them), and ndarrays made in the
trace own their data as eager's do."""
import warnings

import numpy as np
import pytest
import torch

import bytegraph
from bytegraph.testing import same
from tests.helpers import check


def saved_then_written(y, state):
    t3 = y * state["w"]
    state["w"].mul_(2)
    return t3


def unbind_view_written(y, w):
    a, b = w.unbind(0)
    t = y * a
    a.add_(1)
    return t + b


def fresh_copies(args):
    return [dict((k, v.clone()) for k, v in a.items()) if isinstance(a, dict)
            else a.detach().clone().requires_grad_(a.requires_grad) for a in args]


@pytest.mark.parametrize("fn, args", [
    (saved_then_written, (torch.ones(3, requires_grad=True), {"w": torch.full((3,), 3.0)})),
    (unbind_view_written, (torch.ones(3, requires_grad=True), torch.ones(2, 3))),
], ids=["dict_value", "unbind_view"])
def test_backend_failure_runs_the_frame_natively_with_one_warning(fn, args):
    eager_args, compiled_args = fresh_copies(args), fresh_copies(args)
    expected = fn(*eager_args)
    compiled = bytegraph.compile(fn, backend="aot_eager")
    with bytegraph.config.patch(raise_on_backend_error=False), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        actual = compiled(*compiled_args)
        again = compiled(*fresh_copies(args))
    assert same(actual, expected) and same(again, expected)
    assert same(compiled_args, eager_args)  # the in-place writes happened, once
    messages = [str(w.message) for w in caught if "running" in str(w.message)]
    assert len(messages) == 1 and "aot_eager" in messages[0] and "opcode" in messages[0]


def test_backend_failure_raises_when_asked():
    compiled = bytegraph.compile(saved_then_written, backend="aot_eager")
    state = {"w": torch.ones(3)}
    with pytest.raises(bytegraph.BackendCompilerFailed, match="inplace"):
        compiled(torch.ones(3, requires_grad=True), state)


def broken_backend(gm, example_inputs):
    raise NotImplementedError("this backend refuses every graph")


def test_failing_custom_backend_falls_back_and_fullgraph_raises():
    fn = lambda x: x.sin() + 1  # noqa: E731
    with bytegraph.config.patch(raise_on_backend_error=False), warnings.catch_warnings(record=True):
        warnings.simplefilter("always")  # the graph is handed to the backend (counted), which refuses it
        check(fn, torch.ones(2), backend=broken_backend, breaks=1, gb_types=["backend compiler failed"])
        with pytest.raises(bytegraph.BackendCompilerFailed):
            bytegraph.compile(fn, backend=broken_backend, fullgraph=True)(torch.ones(2))


def out_before_inplace(x, y):
    t1 = x * 2
    x.addcmul_(y, y, value=0.5)
    return t1


def out_before_inplace_pair(x, y):
    t1 = x.sin()
    x.mul_(y)
    return t1, x * 1


@pytest.mark.parametrize("fn", [out_before_inplace, out_before_inplace_pair])
@pytest.mark.parametrize("dynamic", [False, None, True])
def test_aot_outputs_computed_before_an_inplace_write_keep_eagers_requires_grad(fn, dynamic):
    # at sizes 3, 4, 5: with dynamic=None the second size compiles a dynamic entry (automatic dynamic),
    # whose trace hands its FakeTensors to AOTAutograd: the input the in-place write made require
    # grad must reach it as it is before the graph runs; check compares requires_grad of the
    # results and of x, written in place with y's history
    check(fn, calls=[(torch.ones(n), torch.full((n,), 2.0, requires_grad=True)) for n in (3, 4, 5)],
          backend="aot_eager", dynamic=dynamic, graphs=3 if dynamic is False else 2 if dynamic is None else 1)


def grow(a):
    c = a * 2
    print("graph break")
    c.resize((8,), refcheck=False)
    return c


def grow_checked(a):  # resize's own reference check: nothing of bytegraph's may hold the array
    c = a * 2
    print("graph break")
    c.resize((3, 2))
    return c


def flags(a):
    view = a[1:]
    fresh = view * 1
    return view, fresh, view.flags.owndata, fresh.flags.owndata


@pytest.mark.parametrize("fn", [grow, grow_checked, flags])
def test_ndarrays_made_in_the_trace_own_their_data_like_eagers(fn):
    # check compares owndata, and which results share memory with the argument (the view does)
    # (c.resize and the flags are ndarray attributes read natively)
    if fn in (grow, grow_checked):
        check(fn, np.arange(6.0), breaks=2, gb_types=["print", "unsupported ndarray attribute"])
    else:
        check(fn, np.arange(6.0), breaks=2, gb_types=["unsupported ndarray attribute"] * 2)
