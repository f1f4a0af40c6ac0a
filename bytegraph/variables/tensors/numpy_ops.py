"""NumPy on tensors: what the graph runs for NumPy code, and the tables that
classify NumPy operations.

bytegraph traces NumPy code the way it traces torch code: an ndarray in the
traced program is a tensor in the graph (``NumpyNdarrayVariable`` in
:mod:`bytegraph.variables.tensors.ndarray`), and each NumPy operation on it becomes one
graph node whose target is a :class:`NumpyOp`: it views the tensor arguments as
``torch._numpy`` ndarrays (NumPy's API implemented with torch operations), runs
the operation, and hands the tensors under the results back to the graph.
After the graph, ndarray outputs become real ``numpy.ndarray`` objects
(:func:`to_ndarray`).

``torch._numpy`` follows NumPy closely but not everywhere; the tables here
record where bytegraph must correct it or refuse:

- **dtypes**: its operations run with NumPy's default dtypes (float64,
  complex128, int64), see :func:`numpy_defaults`;
- **scalars**: NumPy returns a NumPy scalar, not a 0-d array, from most
  operations whose result is 0-d. The VT layer asks real NumPy on stand-in
  values which one it is (:func:`numpy_reference`);
- **views**: NumPy returns views from the operations in :data:`VIEW_OPS` only;
  a ``torch._numpy`` result that shares memory with an argument of any other
  operation is copied, and an operation of :data:`ALWAYS_VIEW_OPS` that
  ``torch._numpy`` answers with a copy (``np.flip``, ``a[::-1]``) is a graph
  break, since writes through one would not reach the other.

NumPy is optional: without it ``np`` is None and NumPy code is a graph break.
This module holds no VariableTrackers, so ``variables/tensors/tensor.py`` can import it.
"""
from __future__ import annotations

import builtins
import contextlib
import functools
import operator
import types
import warnings
from typing import Any, Callable, Iterable, Iterator

import torch
import torch._numpy as tnp
from torch._numpy import _dtypes_impl
from torch.utils import _pytree as pytree

from bytegraph.graph.writes import storage_id

try:
    import numpy as np
except ImportError:  # NumPy is an optional dependency: without it, NumPy code breaks the graph
    np = None  # type: ignore[assignment]

#: NumPy submodules whose functions have ``torch._numpy`` twins. ``numpy.random``
#: is left out on purpose: ``torch._numpy.random`` draws from torch's generator,
#: so the values would differ from NumPy's.
TRACED_SUBMODULES = ("", "linalg", "fft")

#: ndarray attributes answered from the tensor's metadata at trace time.
STATIC_ATTRS = frozenset({"ndim", "itemsize", "shape", "strides", "size", "nbytes"})

#: ndarray attributes computed in the graph.
GRAPH_ATTRS = frozenset({"T", "mT", "real", "imag"})

#: ndarray attributes and methods that are graph breaks, with the reason.
UNSUPPORTED_ATTRS = {
    "dtype": "a NumPy dtype object is not traced (use ndim/shape/itemsize, or compare outside)",
    "base": "which array owns the memory is not tracked by torch._numpy",
    "flags": "memory-layout flags of the real array are not tracked by torch._numpy",
    "tobytes": "it copies the raw bytes of the data into Python",
    "tostring": "it copies the raw bytes of the data into Python",
    "data": "it exposes the raw memory buffer",
    "ctypes": "it exposes the raw memory buffer",
    "resize": "it reshapes the array in place (NumPy refuses when memory is shared), which is not modelled",
    "item": "it converts an array element to a Python scalar (data-dependent)",
    "tolist": "it converts the array to Python values (data-dependent)",
    "__bool__": "it converts an array to a Python bool (data-dependent)",
    "__int__": "it converts an array to a Python int (data-dependent)",
    "__float__": "it converts an array to a Python float (data-dependent)",
    "__index__": "it converts an array to a Python int (data-dependent)",
    "__complex__": "it converts an array to a Python complex (data-dependent)",
}

#: NumPy operations that may return a view of an argument (NumPy's documentation);
#: every other operation returns new memory. Names are NumPy's: ``"reshape"`` is
#: both ``np.reshape`` and ``a.reshape``; ``"getitem"`` is basic indexing.
VIEW_OPS = frozenset(
    {
        "reshape", "ravel", "transpose", "swapaxes", "moveaxis", "rollaxis", "squeeze", "expand_dims",
        "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_to", "broadcast_arrays", "diagonal", "diag",
        "real", "imag", "split", "array_split", "hsplit", "vsplit", "dsplit", "flip", "fliplr", "flipud",
        "rot90", "asarray", "asanyarray", "ascontiguousarray", "view", "T", "mT", "getitem",
        "matrix_transpose", "permute_dims", "real_if_close", "unstack",
    }
)

#: operations that are views in NumPy whatever the argument's layout.
ALWAYS_VIEW_OPS = frozenset(
    {
        "transpose", "swapaxes", "moveaxis", "rollaxis", "squeeze", "expand_dims", "broadcast_to",
        "broadcast_arrays", "diagonal", "split", "array_split", "hsplit", "vsplit", "dsplit", "flip", "fliplr",
        "flipud", "rot90", "view", "T", "mT", "getitem", "matrix_transpose", "permute_dims",
    }
)

#: operations whose views NumPy makes read-only (writes raise ValueError).
READONLY_VIEW_OPS = frozenset({"diagonal", "diag", "broadcast_to"})

#: functions that return their argument itself when no conversion is needed.
IDENTITY_OPS = frozenset({"asarray", "asanyarray"})

#: operations whose result depends on how ties are ordered: NumPy's default sort
#: and torch's order equal elements differently, so only stable sorts are traced.
TIE_ORDER_OPS = frozenset({"argsort"})
STABLE_KINDS = ("stable", "mergesort")

#: functions whose result shape torch._numpy gets wrong in some cases (a scalar ``q``
#: with ``axis=None`` gives shape (1,), ``keepdims`` with a vector ``q`` misplaces the
#: q axis): NumPy is always asked for their result (see ndarray._Reference).
SHAPE_CHECKED_OPS = frozenset({"median", "quantile", "percentile"})

#: keyword renames from NumPy's signatures to torch._numpy's (NumPy 2 accepts both names).
KWARG_RENAMES = {"clip": {"a_min": "min", "a_max": "max"}}

#: ``operator`` functions -> the name NumPy uses for the operation (for the tables above).
OPERATOR_NAMES = {
    operator.getitem: "getitem", operator.setitem: "setitem", operator.add: "add", operator.sub: "subtract",
    operator.mul: "multiply", operator.truediv: "true_divide", operator.floordiv: "floor_divide",
    operator.mod: "remainder", operator.pow: "power", operator.matmul: "matmul", operator.and_: "bitwise_and",
    operator.or_: "bitwise_or", operator.xor: "bitwise_xor", operator.lshift: "left_shift",
    operator.rshift: "right_shift", operator.neg: "negative", operator.pos: "positive",
    operator.invert: "invert", operator.abs: "absolute", builtins.abs: "absolute", operator.eq: "equal",
    operator.ne: "not_equal", operator.lt: "less", operator.le: "less_equal", operator.gt: "greater",
    operator.ge: "greater_equal", builtins.pow: "power",
    operator.iadd: "iadd", operator.isub: "isub", operator.imul: "imul", operator.itruediv: "itruediv",
    operator.ifloordiv: "ifloordiv", operator.imod: "imod", operator.ipow: "ipow", operator.imatmul: "imatmul",
    operator.iand: "iand", operator.ior: "ior", operator.ixor: "ixor", operator.ilshift: "ilshift",
    operator.irshift: "irshift",
}

_NUMPY_DEFAULTS = _dtypes_impl.DefaultDTypes(
    float_dtype=torch.float64, complex_dtype=torch.complex128, int_dtype=torch.int64
)


def available() -> bool:
    """Whether NumPy is installed."""
    return np is not None


@contextlib.contextmanager
def numpy_defaults() -> Iterator[None]:
    """Run torch._numpy with NumPy's default dtypes.

    torch._numpy reads its defaults from a global that it otherwise fills from
    TorchDynamo's config, and some of its paths (``int_array / 2``) use
    torch's default dtype; both are set to NumPy's (float64, complex128,
    int64) for the duration and restored after.
    """
    saved_defaults = _dtypes_impl._default_dtypes
    saved_dtype = torch.get_default_dtype()
    _dtypes_impl._default_dtypes = _NUMPY_DEFAULTS
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(saved_dtype)
        _dtypes_impl._default_dtypes = saved_defaults


def _to_tnp(value: Any) -> Any:
    return pytree.tree_map_only(torch.Tensor, tnp.ndarray, value)


def _to_tensors(value: Any) -> Any:
    return pytree.tree_map_only(tnp.ndarray, lambda a: a.tensor, value)


class NumpyOp:
    """A graph target: one NumPy operation applied to tensors.

    Calling it views every tensor among the arguments as a ``torch._numpy``
    ndarray, runs ``run`` on them (with NumPy's default dtypes), and returns
    the result with every ndarray replaced by its tensor.

    Attributes:
        name: NumPy's name of the operation (``"sum"``, ``"getitem"``...),
            the key of the tables above.
        kind: ``"function"``, ``"method"``, ``"operator"`` or ``"attribute"``.
        run: the callable applied to torch._numpy values.
        reference: the same operation on real NumPy values (for
            :func:`numpy_reference`); ``run`` itself unless it is a function.
    """

    def __init__(self, name: str, kind: str, run: Callable[..., Any], reference: Callable[..., Any] | None = None):
        self.name = name
        self.kind = kind
        self.run = run
        self.reference = reference or run
        self.__name__ = f"numpy_{name.strip('_')}" if kind == "function" else f"ndarray_{name.strip('_')}"
        self.__qualname__ = self.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = _to_tnp((args, kwargs))
        with numpy_defaults():
            return _to_tensors(self.run(*args, **kwargs))

    def __repr__(self) -> str:
        return f"NumpyOp({self.kind} {self.name})"


@functools.lru_cache(maxsize=None)
def function_op(fn: Callable[..., Any], name: str, reference: Callable[..., Any]) -> NumpyOp:
    """The graph target for the torch._numpy function ``fn``, twin of NumPy's ``reference``."""
    return NumpyOp(name, "function", fn, reference)


@functools.lru_cache(maxsize=None)
def method_op(name: str) -> NumpyOp:
    """The graph target for ``ndarray.<name>(...)`` (the array is the first argument)."""
    return NumpyOp(name, "method", lambda self, *args, **kwargs: getattr(self, name)(*args, **kwargs))


@functools.lru_cache(maxsize=None)
def operator_op(fn: Callable[..., Any], name: str) -> NumpyOp:
    """The graph target for an operator (``a + b``, ``a[i]``, ``a += b``...)."""
    return NumpyOp(name, "operator", fn)


@functools.lru_cache(maxsize=None)
def attribute_op(name: str) -> NumpyOp:
    """The graph target for reading ``ndarray.<name>`` (``a.T``, ``a.real``)."""
    return NumpyOp(name, "attribute", lambda self: getattr(self, name))


@functools.lru_cache(maxsize=None)
def _function_table() -> dict[int, tuple[Any, Callable[..., Any], str]]:
    """id(NumPy callable) -> (the callable, its torch._numpy twin, its name)."""
    table = {}
    for sub in TRACED_SUBMODULES:
        np_mod = getattr(np, sub) if sub else np
        tnp_mod = getattr(tnp, sub) if sub else tnp
        for name in dir(tnp_mod):
            twin = getattr(tnp_mod, name)
            value = getattr(np_mod, name, None)
            scalar_type = isinstance(value, type) and issubclass(value, np.generic)  # np.float32(x)
            if name.startswith("_") or value is None or isinstance(value, types.ModuleType) or (
                isinstance(value, type) and not scalar_type
            ):
                continue
            if callable(value) and callable(twin) and (scalar_type or not isinstance(twin, type)):
                table[id(value)] = (value, twin, name)
    return table


def is_numpy_callable(value: Any) -> bool:
    """Whether ``value`` is a function of NumPy's namespace (``np.sin``,
    ``np.linalg.norm``, ``np.random.rand``...) or a scalar type (``np.float32``),
    i.e. gets the NumPy treatment."""
    if np is None or not callable(value):
        return False
    if isinstance(value, type):
        return issubclass(value, np.generic)
    module = getattr(value, "__module__", None) or ""
    if isinstance(value, np.ufunc):
        return True
    return module == "numpy" or module.startswith("numpy.")


def tnp_twin(fn: Any) -> tuple[Callable[..., Any], str] | None:
    """The torch._numpy function standing for NumPy's ``fn`` and NumPy's name
    for it, or None when torch._numpy has no twin (or it must not be used,
    as for ``numpy.random``)."""
    entry = _function_table().get(id(fn))
    if entry is None or entry[0] is not fn:
        return None
    return entry[1], entry[2]


#: the dunder methods of ndarray that are traced when called explicitly (``a.__add__(b)``)
OPERATOR_DUNDERS = frozenset(
    f"__{prefix}{op}__"
    for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
               "rshift")
    for prefix in ("", "r", "i")
) | {"__neg__", "__pos__", "__abs__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
     "__divmod__", "__rdivmod__"}


def has_method(name: str) -> bool:
    """Whether ``ndarray.<name>`` is a method traced through torch._numpy's ndarray
    (public methods both have, and the operator dunders)."""
    if name.startswith("_") and name not in OPERATOR_DUNDERS:
        return False
    return callable(getattr(tnp.ndarray, name, None)) and np is not None and hasattr(np.ndarray, name)


def dtype_name(value: Any) -> str | None:
    """The dtype name for a dtype-like constant given to NumPy (``np.float32``,
    ``np.dtype("int8")``, ``float``), or None when ``value`` is not one.
    torch._numpy accepts the names."""
    if np is None:
        return None
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return np.dtype(value).name
    if value in (bool, int, float, complex):
        return np.dtype(value).name
    return None


@functools.lru_cache(maxsize=None)
def numpy_dtype(dtype: torch.dtype) -> Any:
    """NumPy's dtype for a torch dtype, or None when ``Tensor.numpy()`` refuses it
    (bfloat16, float8...)."""
    if np is None:
        return None
    try:
        return torch.empty(0, dtype=dtype).numpy().dtype
    except (TypeError, RuntimeError):
        return None


def standin(dtype: torch.dtype, shape: tuple[int, ...], scalar: bool) -> Any:
    """A real NumPy value with ``dtype`` and ``shape`` (all ones, read-only and
    without memory of its size: a broadcast of one element), or a NumPy scalar
    when ``scalar``."""
    one = np.ones((), dtype=numpy_dtype(dtype))
    return one[()] if scalar else np.broadcast_to(one, shape)


def numpy_reference(run: Callable[[], Any]) -> tuple[bool, Any]:
    """``(False, result)`` of ``run`` (a real NumPy call on stand-in values, see
    :func:`standin`), or ``(True, exception)`` when it raises. Warnings
    (division by zero...) are silenced: only the kind and dtype of the result
    are wanted."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return False, run()
    except Exception as e:
        return True, e


def to_ndarray(t: torch.Tensor) -> Any:
    """A graph output standing for an ndarray -> the ndarray (shares memory)."""
    return t.numpy()


def ndarray_converter(node: torch.fx.Node, example: torch.Tensor, outputs: Iterable[torch.fx.Node]) -> Any:
    """How the graph output ``node`` becomes the ndarray it stands for: a copy that
    owns its data when nothing else after the graph refers to that memory (no
    graph input and no other graph output of ``outputs`` shares its storage):
    NumPy made it fresh, and eager's owns its data too (``resize`` works). Else
    the output's own memory, so writes reach what it aliases (``x.numpy()``, or
    ``b`` and its view ``b[0]`` both live)."""
    storage = storage_id(example)
    if storage is None or node.op == "placeholder":
        return to_ndarray
    for other in (*node.graph.find_nodes(op="placeholder"), *outputs):
        value = other.meta.get("example_value")
        if other is not node and isinstance(value, torch.Tensor) and storage_id(value) == storage:
            return to_ndarray
    return to_owning_ndarray


def to_owning_ndarray(t: torch.Tensor) -> Any:
    """A graph output standing for an ndarray NumPy made fresh (not a view) -> an
    ndarray that owns its data, as eager's does (``resize``, ``flags.owndata``):
    a copy of the output's memory, which nothing else refers to."""
    return t.numpy().copy()


def to_readonly_ndarray(t: torch.Tensor) -> Any:
    """A graph output standing for a read-only view (``np.diagonal(a)``...) -> the ndarray, read-only."""
    array = t.numpy()
    array.flags.writeable = False
    return array


def to_numpy_scalar(t: torch.Tensor) -> Any:
    """A 0-d graph output standing for a NumPy scalar -> the scalar (``np.float64``...)."""
    return t.numpy()[()]
