"""NumPy values meeting torch in compiled code: NumPy's dtype and limits objects
(``np.dtype``, ``np.finfo``, ``np.iinfo``) and NumPy scalars used as constants,
tensors given to NumPy functions. Each is compared with eager (values, result
types, dtypes, writes into arguments) and counted in graphs and breaks."""
import numpy as np
import pytest
import torch

from tests.helpers import check


# ---- dtype and limits objects ------------------------------------------------------------------

def test_limits_and_dtypes_are_computed_in_the_trace():
    def f(x):
        dt = np.dtype("float")
        return x + np.iinfo(np.int16).max, x * np.finfo(np.float32).eps, x.to(torch.float64) + np.finfo(dt).tiny

    check(f, torch.randn(4), fullgraph=True)


@pytest.mark.parametrize("info", [np.iinfo, np.finfo])
def test_limits_objects_passed_in_are_guarded_by_what_is_read(info):
    kind = int if info is np.iinfo else float
    a = torch.zeros(3, dtype=torch.int64 if kind is int else torch.float64)

    def f(a, limits):
        return a + limits.max

    dtypes = [np.dtype(kind), np.ones(1, dtype=kind).dtype, np.dtype(np.dtype(kind).name)]
    equal = [lambda dt=dt: (a.clone(), info(dt)) for dt in dtypes]  # factories: limits objects do not deep-copy
    check(f, calls=equal, graphs=1)  # equal limits from distinct objects reuse the graph
    check(f, calls=[*equal, lambda: (a.clone(), info(np.int16 if kind is int else np.float16))], graphs=2)


def test_dtype_argument_recompiles_per_dtype():
    def f(a, dt):
        return a + np.finfo(dt).max

    a = torch.zeros(2, dtype=torch.float64)
    check(f, calls=[(a, dt) for dt in (np.dtype(float), np.dtype("float64"), np.dtype(np.float16))], graphs=2)


# ---- NumPy scalars as tensor operands ----------------------------------------------------------

@pytest.mark.parametrize("scalar", [np.int8(3), np.uint8(200), np.int64(2 ** 40), np.float16(1.5), np.float32(1.1),
                                    np.float64(2.5), np.complex128(1j)], ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("dtype", [torch.int32, torch.float16, torch.float32, torch.float64])
def test_numpy_scalar_operand_promotes_like_eager(scalar, dtype):
    def f(t):
        return t + scalar, scalar * t, t - scalar, t != scalar

    check(f, torch.arange(1, 5).to(dtype), fullgraph=True)


@pytest.mark.parametrize("scalar", [np.bool_(True), np.complex64(1 + 2j)], ids=lambda v: type(v).__name__)
def test_numpy_scalars_torch_reads_as_float_run_natively(scalar):
    # torch reads np.bool_ and np.complex64 as float (int32 + np.bool_(True) is float32): not modelled
    def f(t):
        return t + scalar

    # the add breaks and runs natively; nothing else to compile
    check(f, torch.arange(3, dtype=torch.int32), graphs=0, breaks=1, gb_types=["argument FX cannot render"])


# ---- tensors given to NumPy functions ----------------------------------------------------------

def test_numpy_function_takes_a_tensor_as_its_array():
    def f(x):
        return (np.ones_like(x, dtype=np.float64), np.full_like(x, 2.4, dtype=np.dtype("float")),
                np.where(x > 0, x, np.zeros_like(x)), np.linalg.norm(x))

    check(f, torch.randn(3, 4), fullgraph=True)


def test_array_of_a_tensor_shares_its_memory():
    def f(x):
        a = np.asarray(x)
        a[0] = 7.0
        return a * 2

    check(f, torch.randn(3), fullgraph=True)


@pytest.mark.parametrize("fn, eager_type", [
    (lambda x: np.sin(x), torch.Tensor),  # a ufunc wraps its result back into a tensor (__array_wrap__)
    (lambda x: np.shape(x), torch.Size),  # reads the tensor's own attribute
    (lambda x: np.concatenate([x, x]), np.ndarray),  # a tensor inside a list
], ids=["ufunc", "attribute", "in_list"])
def test_numpy_function_that_treats_a_tensor_otherwise_runs_natively(fn, eager_type):
    x = torch.randn(3)
    assert type(fn(x)) is eager_type
    check(fn, x, graphs=0, breaks=1, gb_types=["tensor passed to numpy"])  # the call runs natively


@pytest.mark.parametrize("fn, x, error", [
    (lambda x: np.sum(x), torch.randn(3), TypeError),  # np.sum calls Tensor.sum(axis=..., out=...)
    (lambda x: np.ones_like(x), torch.randn(3, requires_grad=True), RuntimeError),
], ids=["delegates_to_tensor_method", "requires_grad"])
def test_numpy_function_eager_rejects_raises_like_eager(fn, x, error):
    check(fn, x, raises=error, graphs=0, breaks=1, gb_types=["tensor passed to numpy"])  # the call runs natively


# ---- NumPy's global random generator ----------------------------------------------------------

def _draws(t):
    a = np.random.randn(2, 3)
    np.random.uniform(size=4)  # unused: eager still advances the generator
    b = np.random.randint(0, 10, size=(3,))
    return a * 2, b, t + 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_numpy_random_draws_eagers_numbers_in_order(backend):
    for seed in (0, 1):  # check compares NumPy's generator state after each side too
        np.random.seed(seed)
        check(_draws, torch.ones(2), backend=backend, fullgraph=True)


def test_numpy_random_without_an_array_result_or_changing_state_runs_natively():
    def f(t):
        np.random.seed(3)
        return t + np.random.randn()  # a Python float

    # both calls break and run natively; the add is one graph
    check(f, torch.ones(2), graphs=1, breaks=2, gb_types=["unsupported numpy function"] * 2)


def test_numpy_random_state_restored_when_the_graph_raises():
    def f(t, i):
        noise = np.random.randn(3)
        return t[i] + noise  # out of range: the graph raises, the frame reruns natively

    # the add of a tensor and an ndarray breaks; the index fails inside the graph before it, and
    # check compares NumPy's generator state after each side
    check(f, torch.ones(3), torch.tensor([5]), raises=IndexError, graphs=1, breaks=1,
          gb_types=["tensor passed to numpy"])
