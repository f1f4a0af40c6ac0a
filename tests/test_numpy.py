"""NumPy inside compiled code: pipelines traced through torch._numpy match eager
NumPy (values, exact output types and dtypes, NumPy scalars, views and copies,
writes into the caller's arrays), one graph each; what cannot match breaks."""
import numpy as np
import pytest
import torch

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter, same
from bytegraph.variables.tensors import numpy_ops as npops
from tests.helpers import check


def a34():
    return np.arange(12.0).reshape(3, 4) - 5.5


# ---- pipelines ---------------------------------------------------------------------------------

def elementwise(x):
    a = x.numpy()
    return np.exp(np.sin(a)) * 2 - np.abs(a) ** 0.5


def reductions(a):
    return np.sum(a, axis=0), a.mean(axis=1), np.max(a, axis=-1, keepdims=True), a.std(), np.argmax(a, axis=1)


def broadcasting(a):
    centered = a - a.mean(axis=0)
    return centered / (a.std(axis=0) + 1e-6), a[:, :1] * np.ones((1, 5))


def matmul(a):
    return a @ a.T, np.matmul(a.T, a), np.dot(a[0], a[1])


def where_clip(a):
    return np.where(a > 0, a, 0.5 * a), np.clip(a, a_min=-1, a_max=2), a.clip(min=0)


def inplace(a):
    a += 1
    a[0] = 2
    a[1, 1:3] *= 10
    return a


def mixed(x):
    a = x.numpy()
    b = np.tanh(a) + np.float32(1)
    return torch.from_numpy(b) * x


@pytest.mark.parametrize(
    "fn, make",
    [
        (elementwise, lambda: (torch.randn(3, 4, dtype=torch.float64),)),
        (reductions, lambda: (a34(),)),
        (broadcasting, lambda: (a34(),)),
        (matmul, lambda: (a34(),)),
        (where_clip, lambda: (a34(),)),
        (inplace, lambda: (a34(),)),
        (mixed, lambda: (torch.randn(3, 4),)),
    ],
)
def test_numpy_pipeline_is_one_graph_and_matches_eager(fn, make):
    check(fn, make=make)  # check compares exact result types too


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_, np.complex64])
def test_ndarray_inputs_of_each_dtype_give_numpys_output_dtypes(dtype):
    def fn(a):
        return a + a, a * 2, a / 2, np.sum(a), a[0], np.mean(a, axis=0)

    a = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    out = check(fn, a)
    expected = fn(a)
    for got, want in zip(out, expected):
        assert type(got) is type(want) and got.dtype == want.dtype


def test_float64_defaults_of_numpy_are_kept():
    def fn():
        return np.array([1, 2]) / 2, np.ones(3), np.arange(3) * 1.5, np.array([1, 2]).mean()

    out = check(fn, graphs=1)
    assert [o.dtype for o in out] == [np.float64, np.float64, np.float64, np.float64]
    assert type(out[3]) is np.float64


def test_numpy_scalars_and_zero_d_arrays_are_returned_as_numpy_does():
    def fn(a):
        z = np.asarray(a[0, 0])
        return np.sum(a), a[0, 1], a[0], a.sum(axis=None), z, z[...], np.float64(2.0) * a[1, 1], np.sin(z)

    out = check(fn, a34())
    assert [type(o) for o in out] == [type(e) for e in fn(a34())]
    assert type(out[0]) is np.float64 and type(out[4]) is np.ndarray


def test_writes_into_input_arrays_reach_the_callers_array():
    def fn(a, b):
        a += b
        a[0, 0] = -1.0
        np.add(b, 1, out=b)
        return a.sum()

    for backend in ("eager", "aot_eager"):
        check(fn, calls=[(a34(), np.ones((3, 4)))] * 2, backend=backend)


def test_returning_an_input_array_returns_the_same_object():
    def fn(a):
        a *= 2
        b = np.asarray(a)
        t = a.T
        return a, b, b is a, t is a, a + 0 is a

    out = check(fn, a34())  # check compares identities: out[0] and out[1] are the compiled side's a
    assert out[2:] == (True, False, False)


def test_in_place_methods_and_row_iteration_write_the_array():
    def fn(a):
        a.sort(axis=1)
        for row in a:
            row += 1  # rows are views
        b = np.zeros(4)
        b.fill(3.0)
        np.copyto(a[0], b)
        return a, b

    check(fn, -a34())


def test_scalar_types_and_metadata_questions_match_numpy():
    def fn(a):
        s = a.sum()
        return np.float32(2) * a, np.isscalar(s), np.isscalar(a), np.ndim(a), np.shape(a), type(s) is np.float64

    out = check(fn, a34())
    assert out[1:] == (True, False, 2, (3, 4), True) and out[0].dtype == np.float64


@pytest.mark.parametrize(
    "fn, gb_type",
    [
        (lambda a: a.clip(a_min=1), "operator error at trace time"),  # np.clip accepts a_min, the method does not
        (lambda a: np.sum(a, axis=0, foo=1), "operator error at trace time"),
        (lambda a: np.add(a, 1, 2), "operator error at trace time"),
        (lambda a: np.expand_dims(a, 0.0), "numpy rejects arguments"),  # torch._numpy accepts a float axis
    ],
)
def test_arguments_numpy_rejects_raise_numpys_error(fn, gb_type):
    # torch._numpy refuses them at trace time too, or NumPy is asked and refuses: the call runs natively
    check(fn, a34(), raises=TypeError, graphs=0, breaks=1, gb_types=[gb_type])


def test_argsort_is_traced_only_where_ties_are_ordered_as_in_numpy():
    ties = np.random.default_rng(0).integers(0, 3, (40, 5)).astype(np.float64)

    def stable(a):
        return np.argsort(a, axis=0, kind="stable"), a.argsort(kind="stable"), np.sort(a, axis=0)

    check(stable, ties)

    def default(a):
        return np.argsort(a, axis=0)

    check(default, ties, graphs=0, breaks=1, gb_types=["numpy tie order"])


def test_large_arrays_are_traced_without_asking_numpy_each_operation():
    def fn(a):
        return np.sqrt(a) + a.T, np.sum(a)

    check(fn, np.ones((300, 300)))


# ---- views and copies --------------------------------------------------------------------------

def test_torch_numpy_aliasing_is_corrected_to_numpys_copies():
    def fn(a):
        pos, flat, cast = np.positive(a), a.flatten(), a.astype(np.float64)  # copies in NumPy
        s = a[0, 1]  # a NumPy scalar: a copy
        pos[0, 0] = 100.0
        flat[1] = 100.0
        cast[2, 2] = 100.0
        a[0, 1] = 7.0
        return a, s, pos.sum(), flat.sum(), cast.sum()

    out = check(fn, a34())
    assert out[1] == -4.5


def test_views_share_memory_as_in_numpy():
    def fn(a):
        t = a.T
        t[0, 1] = 100.0  # writes a[1, 0]
        row = a[2]
        row *= 0
        return a, t, row, a[:, 1:3]

    check(fn, a34())  # check compares which results share memory with the argument


def test_read_only_views_stay_read_only():
    def fn(a):
        d = np.diagonal(a)
        b = np.broadcast_to(a[0], (2, 4))
        return d, b[1], a.T, d.copy()

    out = check(fn, a34())
    assert [o.flags.writeable for o in out] == [False, False, True, True]

    def writes(a):
        d = a.diagonal()
        d[0] = 1.0
        return a

    check(writes, a34(), raises=ValueError, graphs=1, breaks=1, gb_types=["user error"])


def test_a_copy_where_numpy_returns_a_view_is_a_graph_break():
    def fn(a):
        r = a[::-1]
        r[0] = 0.0
        return a + 1, np.flip(a, 1)

    check(fn, a34(), graphs=0, breaks=2, gb_types=["numpy view semantics", "unsupported ndarray input"])


# ---- attributes --------------------------------------------------------------------------------

def test_static_attributes_are_answered_without_graph_operations():
    def fn(a):
        return a.ndim, a.shape, a.size, a.itemsize, a.strides, a.nbytes, len(a)

    out = check(fn, a34(), graphs=0)
    assert out == (2, (3, 4), 12, 8, (32, 8), 96, 3)


def test_graph_attributes_T_real_imag():
    def fn(a):
        c = a * (1 + 2j)
        return a.T, c.real, c.imag, c.T.real

    check(fn, a34())


@pytest.mark.parametrize("expr, breaks", [("a.dtype", 1), ("a.base", 1), ("a.flags", 1), ("a.tobytes()", 2)])
def test_unsupported_attributes_break_with_a_reason(expr, breaks):
    # the attribute is read natively, the add after it is a graph; the method read from a.tobytes
    # breaks again when the resume function calls it
    fn = eval(f"lambda a: ({expr}, a + 1)")
    check(fn, a34(), breaks=breaks, gb_types=["unsupported ndarray attribute"] * breaks)


# ---- conversions between tensors and ndarrays --------------------------------------------------

def test_tensor_numpy_shares_memory_and_force_detaches():
    def fn(x, w):
        a = x.numpy()
        a += 1  # writes x
        b = w.numpy(force=True) * 2
        return torch.from_numpy(a).sum(), b, np.asarray(x)

    check(fn, torch.zeros(3), torch.ones(3, requires_grad=True))  # and that out[2] shares x's memory


def test_tensor_numpy_of_a_tensor_requiring_grad_breaks_as_eager_raises():
    def fn(w):
        return w.numpy()

    check(fn, torch.ones(2, requires_grad=True), raises=RuntimeError, graphs=0, breaks=1,
          gb_types=["unsupported tensor method"])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # eager np.sin(tensor) warns about __array_wrap__
def test_mixing_tensors_and_ndarrays_in_one_operation_breaks():
    def fn(x, a):
        return np.add(x.numpy(), 1) * 2, x + 1, np.sin(a)

    x, a = torch.ones(3, dtype=torch.float64), np.ones(3)
    check(fn, x, a)

    def mixes(x, a):
        return np.sin(x) + a

    check(mixes, x, a, graphs=0, breaks=2, gb_types=["tensor passed to numpy"] * 2)


def test_numpy_random_is_not_traced():
    def fn(a):
        np.random.seed(0)
        return a + np.random.rand(3)

    check(fn, np.ones(3), graphs=1, breaks=1, gb_types=["unsupported numpy function"])


# ---- guards and inputs -------------------------------------------------------------------------

def test_ndarray_guards_recompile_on_dtype_and_shape_changes():
    def fn(a):
        return a * 2

    inputs = [np.ones(3), np.ones(3), np.ones(3, dtype=np.float32), np.ones((2, 2)), np.ones(3)]
    check(fn, calls=[(a,) for a in inputs], graphs=3)
    check(fn, calls=[(a,) for a in inputs + [np.ones(3, dtype=np.int64)]], graphs=4)  # and one more for int64


REDUCERS = {"reduce": np.sum}


def test_numpy_functions_read_from_globals_are_guarded():
    def fn(a):
        return REDUCERS["reduce"](a)

    # not check: the global table changes between calls
    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt)
    try:
        for reducer in (np.sum, np.sum, np.max):
            REDUCERS["reduce"] = reducer
            assert same(compiled(a34()), fn(a34()))
    finally:
        REDUCERS["reduce"] = np.sum
    assert cnt.frame_count == 2


def test_read_only_array_input_breaks_and_runs_natively():
    def fn(a):
        return a * 2

    def read_only():
        a = np.ones(3)
        a.flags.writeable = False
        return (a,)

    check(fn, make=read_only, graphs=0, breaks=1, gb_types=["unsupported ndarray input"])  # a copy is writeable


def test_ndarray_inputs_with_dynamic_shapes():
    def fn(a):
        return np.sum(a, axis=0) + 1, np.mean(a), a.shape

    check(fn, calls=[(np.ones((n, 4)),) for n in (3, 5, 7)], dynamic=True)


def test_live_ndarrays_survive_a_graph_break():
    def fn(a):
        b = a * 2
        c = b[0]
        print("break")
        c += 1  # c is a view of b
        return b, c

    check(fn, a34(), graphs=2, breaks=1, gb_types=["print"])  # check compares that c shares b's memory


# ---- configuration -----------------------------------------------------------------------------

def test_trace_numpy_false_breaks_with_a_hint():
    def fn(x):
        return np.sin(x.numpy()) + 1

    with bytegraph.config.patch(trace_numpy=False):
        check(fn, torch.ones(3), graphs=0, breaks=3,
              gb_types=["numpy tracing disabled", "numpy tracing disabled", "unsupported builtin call"])
    report = metrics.FRAMES[id(fn.__code__)].breaks[0]
    assert report.gb_type == "numpy tracing disabled"
    assert "Set bytegraph.config.trace_numpy = True" in report.message


def test_without_numpy_installed_numpy_code_breaks(monkeypatch):
    monkeypatch.setattr(npops, "np", None)

    def fn(x):
        return x.numpy()

    check(fn, torch.ones(3), graphs=0, breaks=1, gb_types=["numpy not installed"])


def test_median_and_quantiles_have_numpys_shapes():
    # torch._numpy gives shape (1,) for a scalar q over all axes: NumPy gives a scalar
    def fn(a):
        return np.median(a), np.percentile(a, 50), np.quantile(a, [0.2, 0.5]), np.median(a, axis=0)

    check(fn, a34())  # check compares types and shapes


def test_a_result_shaped_differently_by_torch_numpy_breaks():
    # torch._numpy puts the q axis after the kept ones here; NumPy puts it first
    def fn(a):
        return np.quantile(a, [0.2, 0.5], axis=0, keepdims=True)

    check(fn, a34(), graphs=0, breaks=1, gb_types=["numpy shape mismatch"])
