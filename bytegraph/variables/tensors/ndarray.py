"""NumPy arrays and scalars in the trace: :class:`NumpyNdarrayVariable`, the
functions of NumPy's namespace (:class:`NumpyFunctionVariable`), and the
conversions between tensors and ndarrays.

An ndarray VT is the tensor holding its data; NumPy operations on it become
graph nodes through :mod:`~bytegraph.variables.tensors.numpy_calls`, and what
NumPy's operations *are* (tables, graph targets, the stand-in values that ask
real NumPy) lives in :mod:`~bytegraph.variables.tensors.numpy_ops`.

This module and :mod:`~bytegraph.variables.tensors.numpy_calls` use each other
(an array's operators are NumPy calls, a call's results are arrays), so each
imports the other as a module.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Sequence

import torch
import torch.fx

from bytegraph.breaks import unimplemented, user_error
from bytegraph.config import config
from bytegraph.graph import numpy_random
from bytegraph.variables import tx as protocol
from bytegraph.variables.base import BoundMethodVariable, ConstantCallableVariable, VariableTracker
from bytegraph.variables.handlers import call_method_handler
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.containers.sequences import TupleVariable
from bytegraph.variables.operators import INPLACE_TO_BINARY, TENSOR_OPERATORS
from bytegraph.variables.tensors import numpy_calls, numpy_ops as npops
from bytegraph.variables.tensors.graph_calls import graph_call, graph_node, overloaded_args
from bytegraph.variables.tensors.symbolic import SYMBOLIC_TYPES, branch_on_data
from bytegraph.variables.tensors.tensor import TensorVariable, unpack_rows
from bytegraph.variables.tx import wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


def numpy_unavailable(context: str) -> None:
    """Graph-break when NumPy code must not be traced now (trace_numpy off, or no NumPy)."""
    if not config.trace_numpy:
        unimplemented(
            gb_type="numpy tracing disabled",
            context=context,
            explanation="bytegraph.config.trace_numpy is False, so NumPy code runs natively.",
            hints=("Set bytegraph.config.trace_numpy = True to trace NumPy code through torch._numpy.",),
        )
    if not npops.available():
        unimplemented(
            gb_type="numpy not installed",
            context=context,
            explanation="NumPy is not installed; the code runs natively (where eager raises its own error).",
            hints=("Install numpy, or avoid NumPy in the compiled function.",),
        )


class NumpyFunctionVariable(ConstantCallableVariable):
    """A function of NumPy's namespace (``np.sum``, ``np.where``, ``np.linalg.norm``...).

    Calls run its ``torch._numpy`` twin in the graph (:func:`numpy_call`);
    draws from NumPy's global generator call NumPy itself from the graph
    (:func:`_global_draw`); functions without a twin, and the rest of
    ``numpy.random`` (``torch._numpy``'s twins use torch's generator), are
    graph breaks.
    """

    def var_getattr(self, tx: Tx, name: str) -> VT:
        return wrap_const(tx, getattr(self.fn, name))

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        name = getattr(self.fn, "__name__", repr(self.fn))
        numpy_unavailable(f"call to numpy.{name}")
        np = npops.np
        if self.fn is np.asarray and len(args) == 1 and not kwargs and isinstance(args[0], TensorVariable) and (
            not overloaded_args(tx, args)  # a subclass's Tensor.__array__ goes through its __torch_function__
        ):
            return tensor_to_numpy(tx, args[0], [], {})  # Tensor.__array__: t.numpy(), sharing memory
        if numpy_random.is_global_draw(self.fn):
            return _global_draw(tx, self.fn, args, kwargs)
        twin = npops.tnp_twin(self.fn)
        if twin is None:
            unimplemented(
                gb_type="unsupported numpy function",
                context=f"call to {getattr(self.fn, '__module__', 'numpy')}.{name}",
                explanation="torch._numpy has no equivalent of this NumPy function (numpy.random's twins are not "
                "used: their values would come from torch's generator, not NumPy's).",
                hints=("Call it outside the compiled function.",),
            )
        fn, np_name = twin
        return numpy_calls.numpy_call(tx, npops.function_op(fn, np_name, self.fn), args, kwargs)

    def __repr__(self) -> str:
        return f"NumpyFunctionVariable({getattr(self.fn, '__name__', self.fn)})"


def _global_draw(tx: Tx, fn: Any, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``np.random.randn(2, 3)`` and the other methods of NumPy's global generator:
    one graph node drawing from it at run time (``graph/numpy_random.py``)."""
    key = None
    if all(v.is_python_constant() for v in (*args, *kwargs.values())):
        key = numpy_random.register(fn, tuple(a.as_python_constant() for a in args),
                                    {k: v.as_python_constant() for k, v in kwargs.items()})
    if key is None:
        unimplemented(
            gb_type="unsupported numpy function",
            context=f"call to numpy.random.{getattr(fn, '__name__', fn)}",
            explanation="Only draws from NumPy's global generator with constant arguments and an array result are "
            "traced (a scalar result, an array argument or an error runs natively).",
            hints=("Call it outside the compiled function, or pass a size to get an array.",),
        )
    node, example = graph_node(tx, "call_function", numpy_random.draw_op(), [ConstantVariable(key)], {})
    return NumpyNdarrayVariable(node, example)


class NumpyNdarrayVariable(VariableTracker):
    """A ``numpy.ndarray``, or a NumPy scalar, in the traced program: the tensor
    holding its data.

    NumPy operations on it become graph nodes running ``torch._numpy``
    (:func:`numpy_call`; NumPy's tables in :mod:`bytegraph.variables.tensors.numpy_ops`); static metadata (``ndim``, ``shape``,
    ``strides``, ``itemsize``, ``size``) is answered at trace time. After the
    graph it becomes a real ``numpy.ndarray`` sharing the output tensor's
    memory (``t.numpy()``), or a NumPy scalar.

    Attributes:
        node, example: the fx node and FakeTensor of the tensor under the array
            (same dtype and shape; strides in elements). ``t.numpy()`` shares
            ``t``'s node, as it shares its memory.
        scalar: the value is a NumPy scalar (``np.float64``...), which NumPy
            returns for most 0-d results; its tensor is 0-d.
        readonly: a view NumPy makes read-only (``np.diagonal(a)``, views of it).
    """

    mutable = True  # rebuilt once per graph: every reference is the same object
    array_identity = True

    def __init__(self, node: torch.fx.Node, example: torch.Tensor, source=None, scalar: bool = False,
                 readonly: bool = False):
        super().__init__(source)
        self.node = node
        self.example = example
        self.scalar = scalar
        self.readonly = readonly

    def python_type(self) -> type:
        return npops.numpy_dtype(self.example.dtype).type if self.scalar else npops.np.ndarray

    #: NumPy's operators take over any operation with an array operand (tensors included)
    override_rank = 3

    def operator_override(self, tx: Tx, op: Any, args: Sequence[VT]) -> Any:
        """An operator with this operand, run as ``torch._numpy`` runs it; ``lst += a``
        is left to a mutable left operand's own rule (``extend``). NumPy scalars and
        Python values are immutable: ``x += a`` on them is ``x = x + a``."""
        target = args[0]
        if op not in TENSOR_OPERATORS or (target is not self and target.mutable):
            return NotImplemented
        if op in INPLACE_TO_BINARY and not (target is self and not self.scalar):
            op = INPLACE_TO_BINARY[op]
        return numpy_calls.numpy_operator(tx, op, args)


    def as_proxy(self) -> Any:
        return self.node

    def as_example(self) -> Any:
        return self.example

    def truthy(self, tx: Tx) -> bool:
        branch_on_data(f"an ndarray ({self.node.name})")

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return self.example.dim() > 0

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        return unpack_rows(self.example, "array", lambda i: numpy_calls.numpy_operator(tx, 
            operator.getitem, [self, ConstantVariable(i)]))

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name in npops.UNSUPPORTED_ATTRS:
            _unsupported_ndarray(name)
        found = self.attr_from_handler(tx, name)
        if found is not None:
            return found
        if name in npops.STATIC_ATTRS:
            return self._static_attr(tx, name)
        if name in npops.GRAPH_ATTRS:
            return numpy_calls.numpy_call(tx, npops.attribute_op(name), [self], {})
        if npops.has_method(name):
            return BoundMethodVariable(self, name)
        unimplemented(
            gb_type="unsupported ndarray attribute",
            context=f"ndarray.{name}",
            explanation="torch._numpy does not implement this ndarray attribute, so bytegraph cannot trace it.",
            hints=("Use it outside the compiled function.",),
        )

    def attr_shape(self, tx: Tx) -> VT:
        return TupleVariable(TensorVariable(self.node, self.example)._sizes(tx).items)

    def attr_ndim(self, tx: Tx) -> VT:
        return ConstantVariable(self.example.dim())

    def attr_itemsize(self, tx: Tx) -> VT:
        return ConstantVariable(self.example.element_size())

    def _static_attr(self, tx: Tx, name: str) -> VT:
        """``size``, ``nbytes``, ``strides``: constants for static shapes."""
        t = self.example
        value = {"size": lambda: t.numel(), "nbytes": lambda: t.numel() * t.element_size(),
                 "strides": lambda: tuple(s * t.element_size() for s in t.stride())}[name]()
        if any(isinstance(v, SYMBOLIC_TYPES) for v in (value if isinstance(value, tuple) else (value,))):
            unimplemented(
                gb_type="unsupported ndarray attribute",
                context=f"ndarray.{name} of an array with dynamic shape",
                explanation="This attribute depends on a symbolic size; bytegraph answers it for static shapes only.",
                hints=("Read shape instead, or mark the input static.",),
            )
        return wrap_const(tx, value)

    def method_dunder_len(self, tx: Tx, /) -> VT:
        if self.example.dim() == 0:
            user_error("TypeError", context="len() of a 0-d array", hint="Do not call len() on a 0-d array.")
        return TensorVariable(self.node, self.example)._size(tx, 0)

    def method_dunder_getitem(self, tx: Tx, *args: VT) -> VT:
        return numpy_calls.numpy_operator(tx, operator.getitem, [self, *args])

    def method_dunder_setitem(self, tx: Tx, *args: VT) -> VT:
        return numpy_calls.numpy_operator(tx, operator.setitem, [self, *args])

    def method_astype(self, tx: Tx, *args: VT, **kwargs: VT) -> None:
        """Only the copying form is traced (None: as any other method)."""
        if "copy" in kwargs:
            unimplemented(
                gb_type="unsupported ndarray method",
                context="ndarray.astype(copy=...)",
                explanation="astype without a copy may return the array itself; bytegraph traces the copying form.",
                hints=("Drop the copy argument.",),
            )
        return None

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name in npops.UNSUPPORTED_ATTRS:
            _unsupported_ndarray(name)
        result = call_method_handler(self, tx, name, args, kwargs)
        if result is not None:
            return result
        if npops.has_method(name):
            return numpy_calls.numpy_call(tx, npops.method_op(name), [self, *args], kwargs)
        unimplemented(
            gb_type="unsupported ndarray method",
            context=f"ndarray.{name}()",
            explanation="torch._numpy does not implement this ndarray method, so bytegraph cannot trace it.",
            hints=("Call it outside the compiled function.",),
        )

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        convert = npops.to_numpy_scalar if self.scalar else npops.to_readonly_ndarray if self.readonly else (
            npops.ndarray_converter(self.node, self.example, codegen.output_temps)
        )
        codegen.load_callable(convert)
        codegen.load_graph_output(self.node)
        codegen.call(1)

    def __repr__(self) -> str:
        kind = "scalar" if self.scalar else "ndarray"
        return f"NumpyNdarrayVariable({kind} {self.node.name}, {tuple(self.example.shape)}, {self.example.dtype})"

def _unsupported_ndarray(name: str) -> None:
    unimplemented(
        gb_type="unsupported ndarray attribute",
        context=f"ndarray.{name}",
        explanation=f"Reading ndarray.{name} is not traced: {npops.UNSUPPORTED_ATTRS[name]}.",
        hints=("Use it outside the compiled function.",),
    )


@protocol.tensor_to_numpy.provide
def tensor_to_numpy(tx: Tx, tensor: TensorVariable, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``t.numpy(force=False)``: an ndarray sharing the tensor's node (and, at run
    time, its memory). With ``force=True`` the tensor is detached first (and
    moved to the CPU), as in eager.

    Raises:
        Unsupported: when eager raises (the tensor requires grad, is not on the
            CPU, has a dtype NumPy lacks...) or NumPy code is not traced.
    """
    numpy_unavailable("Tensor.numpy()")
    force = kwargs.get("force", ConstantVariable(False)).as_python_constant()
    t = tensor.example
    problem = None
    if args or set(kwargs) - {"force"}:
        problem = "numpy() takes only the keyword argument force (eager raises TypeError)"
    elif npops.numpy_dtype(t.dtype) is None:
        problem = f"dtype {t.dtype} has no NumPy equivalent"
    elif t.layout is not torch.strided or t.is_conj() or t.is_neg():
        problem = "the tensor is not a plain strided tensor"
    elif not force and t.requires_grad:
        problem = "the tensor requires grad (eager raises RuntimeError)"
    elif not force and t.device.type != "cpu":
        problem = "the tensor is not on the CPU (eager raises TypeError)"
    if problem is not None:
        unimplemented(
            gb_type="unsupported tensor method",
            context=f"Tensor.numpy() of {tensor}",
            explanation=f"Tensor.numpy() cannot be traced here: {problem}.",
            hints=("Call .numpy() outside the compiled function, or detach() first.",),
        )
    if force and t.requires_grad:
        tensor = graph_call(tx, "call_method", "detach", [tensor], {})
    if t.device.type != "cpu":
        tensor = graph_call(tx, "call_method", "cpu", [tensor], {})
    return NumpyNdarrayVariable(tensor.node, tensor.example)


def ndarray_to_tensor(tx: Tx, fn: Any, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """A torch function called with ndarrays: ``torch.from_numpy(a)``,
    ``torch.as_tensor(a)`` and ``torch.asarray(a)`` share the array's memory
    (same node); ``torch.tensor(a)`` copies it. Anything else is a graph break."""
    shares = fn in (torch.from_numpy, torch.as_tensor, torch.asarray)
    if (shares or fn is torch.tensor) and len(args) == 1 and not kwargs and isinstance(
        args[0], NumpyNdarrayVariable
    ) and not args[0].scalar:
        array = args[0]
        if shares:
            return TensorVariable(array.node, array.example)
        return graph_call(tx, "call_method", "clone", [TensorVariable(array.node, array.example)], {})
    unimplemented(
        gb_type="ndarray passed to torch",
        context=f"torch.{getattr(fn, '__name__', fn)} called with a NumPy value",
        explanation="bytegraph traces torch.from_numpy/as_tensor/asarray/tensor(array) only; other torch functions "
        "convert ndarrays in ways it does not model.",
        hints=("Convert with torch.from_numpy(a) first.",),
    )
