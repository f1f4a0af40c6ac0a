"""Tensor behaviour: TensorVariable and putting tensor operations in the graph.

A :class:`TensorVariable` is an fx node plus its FakeTensor example. Static
metadata (dtype, shape, ndim...) is answered from the example as constants;
tensor computations become graph nodes via :func:`graph_call`, whose result
metadata comes from running the operation on the examples under the
FakeTensorMode; what is neither (data-dependent values, autograd calls) is a
graph break with a reason.

Two kinds of values that are tensors underneath are also defined here:
:class:`TensorSubclassVariable` (an instance of a ``torch.Tensor`` subclass;
its dispatch is in :mod:`bytegraph.variables.torch_function`) and
:class:`NumpyNdarrayVariable` (a NumPy array; NumPy calls are in
:mod:`bytegraph.variables.ndarray`, NumPy's tables in
:mod:`bytegraph.variables.numpy`). Both reach their modules through ``tx``,
since those modules import this one.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Sequence

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, free_unbacked_symbols

from bytegraph.breaks import HINT_DATA_DEPENDENT, HINT_DYNAMIC_CONTROL_FLOW, unimplemented
from bytegraph.config import config
from bytegraph.variables import numpy as npops
from bytegraph.variables.base import BoundMethodVariable, VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.containers import ListVariable, NamedTupleVariable, SizeVariable, TupleVariable

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker

#: Attributes answered from the example's metadata as constants.
STATIC_ATTRS = frozenset(
    {
        "dtype", "device", "layout", "ndim", "requires_grad", "is_cuda", "is_cpu", "is_meta",
        "is_sparse", "is_quantized", "is_nested", "is_mkldnn", "is_complex", "is_leaf",
        "is_sparse_csr", "itemsize", "nbytes",
    }
)

#: Methods answered from metadata; value computed by calling them on the example.
STATIC_METHODS = frozenset(
    {
        "dim", "ndimension", "numel", "nelement", "is_floating_point", "is_complex",
        "is_contiguous", "element_size", "get_device", "is_inference", "is_signed",
        "storage_offset", "has_names", "is_set_to",
    }
)

#: Attributes that are graph operations returning tensors.
GRAPH_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})

#: Methods that read data or talk to autograd/storage: never in the graph here.
BREAKING_METHODS = {
    "item": "converts a tensor to a Python scalar (data-dependent)",
    "tolist": "converts a tensor to Python values (data-dependent)",
    "backward": "runs autograd's backward pass",
    "data_ptr": "reads a memory address",
    "register_hook": "registers an autograd hook",
    "register_post_accumulate_grad_hook": "registers an autograd hook",
    "retain_grad": "changes autograd bookkeeping",
    "requires_grad_": "changes autograd bookkeeping of a tensor",
    "untyped_storage": "exposes storage",
    "storage": "exposes storage",
    "set_": "swaps storage",
    "resize_": "resizes storage",
    "resize_as_": "resizes storage",
    "__bool__": "converts a tensor to a Python bool (data-dependent)",
    "__int__": "converts a tensor to a Python int (data-dependent)",
    "__float__": "converts a tensor to a Python float (data-dependent)",
    "__index__": "converts a tensor to a Python int (data-dependent)",
    "random_": "samples in place",
    "uniform_": "samples in place",
    "normal_": "samples in place",
    "bernoulli_": "samples in place",
    "exponential_": "samples in place",
    "geometric_": "samples in place",
    "cauchy_": "samples in place",
    "log_normal_": "samples in place",
    "share_memory_": "moves storage to shared memory",
    "pin_memory": "pins host memory",
    "cuda": "moves to a device",
    "to_sparse": "changes layout",
}
DATA_DEPENDENT_METHODS = frozenset({"item", "tolist", "__bool__", "__int__", "__float__", "__index__"})
#: data-dependent methods that become symbolic scalars when scalar capture is on
CAPTURABLE_METHODS = DATA_DEPENDENT_METHODS - {"__bool__"}


class TensorVariable(VariableTracker):
    """A tensor in the traced program.

    Attributes:
        node: the fx node producing the tensor (a placeholder for graph inputs).
        example: its FakeTensor: shape, dtype, device, strides, requires_grad.
        class_type: the Python class of the real tensor (``torch.Tensor`` or
            ``torch.nn.Parameter``...), what ``type(t)`` answers.
    """

    def __init__(self, node: torch.fx.Node, example: torch.Tensor, source=None, class_type: type = torch.Tensor):
        super().__init__(source)
        self.node = node
        self.example = example
        self.class_type = class_type

    def python_type(self) -> type:
        return self.class_type

    def as_proxy(self) -> Any:
        return self.node

    def as_example(self) -> Any:
        return self.example

    def reconstruct(self, codegen: PyCodegen) -> None:
        """Inputs are reloaded from their source (same object as eager);
        computed tensors come from the graph's outputs."""
        if self.source is not None:
            codegen.load_source(self.source)
        else:
            codegen.load_graph_output(self.node)

    def truthy(self, tx: Tx) -> bool:
        unimplemented(
            gb_type="data-dependent branching",
            context=f"bool() of a tensor ({self.node.name})",
            explanation="The branch taken depends on tensor data, which is unknown while tracing.",
            hints=(HINT_DYNAMIC_CONTROL_FLOW,),
        )

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return self.example.dim() > 0

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        if self.example.dim() == 0:
            unimplemented(
                gb_type="user error",
                context="iteration over a 0-d tensor",
                explanation="The traced code raises TypeError; it runs natively so the error is the eager one.",
                hints=("Index a 0-d tensor with .item() or keep it as a tensor.",),
            )
        length = self.example.size(0)
        return [graph_call(tx, "call_function", operator.getitem, [self, ConstantVariable(i)], {}) for i in range(length)]

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name in STATIC_ATTRS:
            return ConstantVariable(getattr(self.example, name))
        if name == "shape":
            return self._sizes(tx)
        if name in GRAPH_ATTRS:
            return graph_call(tx, "call_function", getattr, [self, ConstantVariable(name)], {})
        if name == "__class__":
            return tx.wrap_const(self.class_type)
        if name in ("grad", "grad_fn", "_version", "_base"):
            unimplemented(
                gb_type="unsupported tensor attribute",
                context=f"Tensor.{name}",
                explanation=f"Reading Tensor.{name} inside the graph is not supported yet.",
                hints=("Read it outside the compiled function.",),
            )
        if callable(getattr(torch.Tensor, name, None)):
            return TensorMethodVariable(self, name)
        unimplemented(
            gb_type="unsupported tensor attribute",
            context=f"Tensor.{name}",
            explanation="bytegraph does not know this tensor attribute.",
        )

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if overloaded_args(tx, [*args, *kwargs.values()]):  # e.g. t.add(subclass_instance)
            return tx.dispatch_tensor_method(self, name, args, kwargs)
        if name == "numpy":
            return tx.tensor_to_numpy(self, args, kwargs)
        if name == "as_subclass" and len(args) == 1 and not kwargs:
            return tx.as_subclass(self, args[0])
        if name in CAPTURABLE_METHODS and config.capture_scalar_outputs:
            return self._capture_scalars(tx, name)
        if name in DATA_DEPENDENT_METHODS:
            unimplemented(
                gb_type="data-dependent tensor method",
                context=f"Tensor.{name}()",
                explanation=f"Tensor.{name} {BREAKING_METHODS[name]}, which cannot be captured in the graph.",
                hints=(HINT_DATA_DEPENDENT,),
            )
        if name in BREAKING_METHODS:
            unimplemented(
                gb_type="unsupported tensor method",
                context=f"Tensor.{name}()",
                explanation=f"Tensor.{name} {BREAKING_METHODS[name]}, which cannot be captured in the graph.",
                hints=(f"Call .{name}() outside the compiled function.",),
            )
        if name in STATIC_METHODS:
            values = [a.as_python_constant() for a in args]
            kw = {k: v.as_python_constant() for k, v in kwargs.items()}
            result = getattr(self.example, name)(*values, **kw)
            if isinstance(result, SYMBOLIC_TYPES):  # e.g. numel() of a dynamic tensor
                return graph_call(tx, "call_method", name, [self, *args], kwargs)
            return ConstantVariable(result)
        if name in ("size", "stride"):
            return self._size_or_stride(tx, name, args, kwargs)
        if name == "__len__":
            if self.example.dim() == 0:
                unimplemented(
                    gb_type="user error",
                    context="len() of a 0-d tensor",
                    explanation="The traced code raises TypeError; it runs natively so the error is the eager one.",
                    hints=("Do not call len() on a 0-d tensor.",),
                )
            return ConstantVariable(int(self.example.size(0)))
        if name == "type" and not args and not kwargs:
            return ConstantVariable(self.example.type())
        if name == "__getitem__":
            return graph_call(tx, "call_function", operator.getitem, [self, *args], kwargs)
        if name == "__setitem__":
            return graph_call(tx, "call_function", operator.setitem, [self, *args], kwargs)
        return graph_call(tx, "call_method", name, [self, *args], kwargs)

    def _capture_scalars(self, tx: Tx, name: str) -> VT:
        """``item()``/``tolist()``/``int(t)``/``float(t)`` as data-dependent
        scalars in the graph (``config.capture_scalar_outputs``)."""
        if name in ("item", "tolist"):
            return graph_call(tx, "call_method", name, [self], {})
        item = graph_call(tx, "call_method", "item", [self], {})
        return tx.call_builtin(int if name in ("__int__", "__index__") else float, [item])

    def _sizes(self, tx: Tx) -> SizeVariable:
        """``t.shape``: constants for static dims, SymNodeVariables for symbolic ones."""
        return SizeVariable([self._size(tx, i) for i in range(self.example.dim())])

    def _size(self, tx: Tx, dim: int) -> VT:
        size = self.example.size(dim)
        if isinstance(size, torch.SymInt):
            node, example = tx.output.sym_size(self.node, self.example, dim)
            return SymNodeVariable(node, example)
        return ConstantVariable(int(size))

    def _size_or_stride(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        dim = args[0] if args else kwargs.get("dim")
        d = None if dim is None else dim.as_python_constant()
        if name == "size":
            if d is None:
                return self._sizes(tx)
            return self._size(tx, d if d >= 0 else d + self.example.dim())
        strides = self.example.stride()
        if any(isinstance(v, torch.SymInt) for v in strides):
            return graph_call(tx, "call_method", "stride", [self, *args], kwargs)
        if d is None:
            return TupleVariable([ConstantVariable(int(v)) for v in strides])
        return ConstantVariable(int(strides[d]))

    def __repr__(self) -> str:
        return f"TensorVariable({self.node.name}, {tuple(self.example.shape)}, {self.example.dtype})"


class TensorMethodVariable(VariableTracker):
    """A bound method of a traced tensor, e.g. ``x.view`` before it is called."""

    def __init__(self, tensor: TensorVariable, name: str):
        super().__init__()
        self.tensor = tensor
        self.name = name

    def python_type(self) -> type:
        return type(torch.empty(0).view)

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return self.tensor.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.reconstruct(self.tensor)
        codegen.load_attr(self.name)

    def __repr__(self) -> str:
        return f"TensorMethodVariable({self.tensor.node.name}.{self.name})"


def graph_call(tx: Tx, kind: str, target: Any, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """Add ``target(*args, **kwargs)`` to the graph and wrap its result.

    Args:
        kind: ``"call_function"`` (target is a callable) or ``"call_method"``
            (target is a method name, ``args[0]`` the tensor).
        args/kwargs: VTs convertible to graph arguments (tensors, constants,
            containers of them).

    Returns:
        A VT for the result; an in-place operation returns the VT of the
        tensor it mutated, so identity is preserved.

    Raises:
        Unsupported: when an argument cannot be a graph argument, or when
            running the operation on FakeTensors fails (data-dependent output,
            an error eager would raise...).
    """
    node, example = graph_node(tx, kind, target, args, kwargs)
    for arg in args:
        if isinstance(arg, TensorVariable) and arg.example is example:
            return arg
    return wrap_fx_value(tx, node, example)


def graph_node(tx: Tx, kind: str, target: Any, args: Sequence[VT], kwargs: dict[str, VT]) -> tuple[torch.fx.Node, Any]:
    """Run ``target`` on the arguments' examples and add its node, unwrapped:
    (node, example result). :func:`graph_call` wraps the result as a VT.

    Raises:
        Unsupported: as :func:`graph_call`, and when an argument is a tensor
            subclass whose ``__torch_function__`` should have run first.
    """
    overloaded = overloaded_args(tx, [*args, *kwargs.values()])
    if overloaded:  # every route to the graph dispatches subclasses first; this one did not
        unimplemented(
            gb_type="tensor subclass operation",
            context=f"{getattr(target, '__name__', target)} on a {overloaded[0].class_type.__qualname__}",
            explanation="This operation reached the graph without going through the subclass's __torch_function__; "
            "bytegraph runs it natively rather than skip the override.",
        )
    proxy_args = tuple(a.as_proxy() for a in args)
    proxy_kwargs = {k: v.as_proxy() for k, v in kwargs.items()}
    example_args = tuple(a.as_example() for a in args)
    example_kwargs = {k: v.as_example() for k, v in kwargs.items()}
    example = tx.output.run_fake(kind, target, example_args, example_kwargs)
    return tx.output.create_node(kind, target, proxy_args, proxy_kwargs, example), example


def wrap_fx_value(tx: Tx, node: torch.fx.Node, example: Any) -> VT:
    """Wrap the result of a graph node: tensors, symbolic scalars, containers of
    them, constants."""
    if isinstance(example, torch.Tensor):
        return TensorVariable(node, example)
    if isinstance(example, SYMBOLIC_TYPES):
        return SymNodeVariable.create(node, example)
    if isinstance(example, (tuple, list)):
        items = []
        for i, item in enumerate(example):
            if isinstance(item, (torch.Tensor, tuple, list, *SYMBOLIC_TYPES)):
                item_node = tx.output.create_node("call_function", operator.getitem, (node, i), {}, item)
                items.append(wrap_fx_value(tx, item_node, item))
            elif _is_plain_constant(item):
                items.append(ConstantVariable(item))
            else:
                unimplemented(
                    gb_type="unsupported operator output",
                    context=f"{node.target} returned a {type(example).__name__} holding {type(item).__name__}",
                    explanation="Only tensors and constants can be taken out of an operator's result.",
                )
        if isinstance(example, torch.Size):
            return SizeVariable(items)
        if hasattr(type(example), "__match_args__") and type(example) not in (tuple, list):
            return NamedTupleVariable(items, type(example))
        return ListVariable(items) if isinstance(example, list) else TupleVariable(items)
    if _is_plain_constant(example):
        if example is not None and not node.users:
            tx.output.remove_node(node)  # a metadata query answered at trace time
        return ConstantVariable(example)
    unimplemented(
        gb_type="unsupported operator output",
        context=f"{node.target} returned {type(example).__name__}",
        explanation="The operation returned a value bytegraph cannot represent in the graph.",
    )


SYMBOLIC_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)


class SymNodeVariable(VariableTracker):
    """A symbolic Python scalar: an fx node whose example is a SymInt,
    SymFloat or SymBool of the trace's ShapeEnv (a dynamic size, a size
    expression, or a dynamic Python int argument).

    Arithmetic stays in the graph. Asking for its concrete value (a branch, a
    ``range()``) specialises: the ShapeEnv records a guard and the value is
    returned as a constant.
    """

    def __init__(self, node: torch.fx.Node, example: Any):
        super().__init__()
        self.node = node
        self.example = example

    @staticmethod
    def create(node: torch.fx.Node, example: Any) -> "SymNodeVariable":
        unbacked = bool(free_unbacked_symbols(example))
        return (FakeItemVariable if unbacked else SymNodeVariable)(node, example)

    def python_type(self) -> type:
        return {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}[type(self.example)]

    def as_proxy(self) -> Any:
        return self.node

    def as_example(self) -> Any:
        return self.example

    def as_python_constant(self) -> Any:
        """The concrete value, guarded (specialises the symbol)."""
        return self._concrete(self.python_type())

    def truthy(self, tx: Tx) -> bool:
        return self._concrete(bool)

    def _concrete(self, kind: type) -> Any:
        try:
            return kind(self.example)
        except GuardOnDataDependentSymNode:
            unimplemented(
                gb_type="data-dependent branching",
                context=f"concrete value of {self.node.name} ({self.example}) needed at trace time",
                explanation="The value depends on tensor data, which is unknown while tracing.",
                hints=(HINT_DYNAMIC_CONTROL_FLOW,),
            )

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_graph_output(self.node)

    def __repr__(self) -> str:
        return f"SymNodeVariable({self.node.name}: {self.example})"


class FakeItemVariable(SymNodeVariable):
    """A data-dependent scalar (``Tensor.item()`` with scalar capture on): its
    value exists only when the graph runs, so reading it is a graph break."""

    def as_python_constant(self) -> Any:
        unimplemented(
            gb_type="data-dependent scalar",
            context=f"the value of {self.node.name} (from tensor data) is needed at trace time",
            explanation="The value of a captured Tensor.item() is unknown until the graph runs.",
            hints=(HINT_DATA_DEPENDENT,),
        )

    def truthy(self, tx: Tx) -> bool:
        unimplemented(
            gb_type="data-dependent branching",
            context=f"bool() of the data-dependent scalar {self.node.name}",
            explanation="The branch taken depends on tensor data, which is unknown while tracing.",
            hints=(HINT_DYNAMIC_CONTROL_FLOW,),
        )


def _is_plain_constant(value: Any) -> bool:
    return value is None or type(value) in (bool, int, float, complex, str, torch.dtype, torch.device, torch.layout)


# ---- tensor subclasses ---------------------------------------------------------------------------

def torch_function_class(cls: type) -> bool:
    """Whether instances of ``cls`` take part in ``__torch_function__`` dispatch
    (eager's rule): a ``torch.Tensor`` subclass other than ``Parameter`` whose
    ``__torch_function__`` is not ``torch._C._disabled_torch_function_impl``.
    Subclasses that do not override it still dispatch, to
    ``Tensor.__torch_function__``, which converts results to the subclass."""
    if cls in (torch.Tensor, torch.nn.Parameter) or not issubclass(cls, torch.Tensor):
        return False
    impl = getattr(cls, "__torch_function__", None)
    return impl is not None and getattr(impl, "__func__", impl) is not torch._C._disabled_torch_function_impl


def dispatches(tx: Tx, value: VT) -> bool:
    """Whether an operation on ``value`` must call its class's ``__torch_function__``
    now: a subclass instance taking part in dispatch, outside
    ``torch._C.DisableTorchFunctionSubclass``."""
    return isinstance(value, TensorSubclassVariable) and torch_function_class(value.class_type) and (
        not tx.output.subclass_dispatch_disabled
    )


def overloaded_args(tx: Tx, values: Sequence[VT]) -> list[TensorSubclassVariable]:
    """The arguments among ``values``, and one level into lists and tuples (as
    torch's argument parser looks into tensor lists), that :func:`dispatches`."""
    found = []
    for value in values:
        items = value.items if isinstance(value, (TupleVariable, ListVariable)) else (value,)
        found += [v for v in items if dispatches(tx, v)]
    return found


class TensorSubclassVariable(TensorVariable):
    """A tensor whose Python class is a ``torch.Tensor`` subclass (``class_type``).

    The data is a plain tensor in the graph; the class lives in this VT.
    Attribute reads, method calls and operators follow the class: attributes
    and methods written in Python are inlined like user code, and torch
    operations go through the class's ``__torch_function__`` as in eager
    (:mod:`bytegraph.variables.torch_function`, reached through ``tx``).
    Inside ``torch._C.DisableTorchFunctionSubclass()`` it behaves as a plain
    tensor, except for its Python-level attributes.

    An instance made during the trace is rebuilt after the graph as
    ``out.as_subclass(class_type)`` plus its instance attributes; an input is
    reloaded from its source.

    Attributes:
        attrs: instance attributes of an instance made in the trace (name -> VT).
        value: the real object of an input (its instance dict is read through
            the source, with guards), else None.
    """

    mutable = True  # rebuilt once per graph: every reference is the same object

    def __init__(self, node: torch.fx.Node, example: torch.Tensor, class_type: type, source=None,
                 value: torch.Tensor | None = None):
        super().__init__(node, example, source, class_type)
        self.attrs: dict[str, VT] = {}
        self.value = value

    def var_getattr(self, tx: Tx, name: str) -> VT:
        return tx.subclass_getattr(self, name)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return tx.subclass_call_method(self, name, args, kwargs)

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        if overloaded_args(tx, [self]):
            unimplemented(
                gb_type="tensor subclass operation",
                context=f"iteration over a {self.class_type.__qualname__}",
                explanation="Iterating a tensor subclass calls its __torch_function__ in an order (dim, unbind, "
                "__len__ as a length hint) bytegraph does not reproduce; it runs natively.",
                hints=("Index the tensor explicitly, or iterate outside the compiled function.",),
            )
        return super().unpack_var_sequence(tx)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(torch.Tensor.as_subclass)
        codegen.load_graph_output(self.node)
        codegen.load_const(self.class_type)
        codegen.call(2)
        for name, value in self.attrs.items():  # obj.__dict__[name] = value, the object staying on the stack
            codegen.reconstruct(value)
            codegen.emit("COPY", 2)
            codegen.load_attr("__dict__")
            codegen.load_const(name)
            codegen.emit("STORE_SUBSCR")

    def __repr__(self) -> str:
        return f"TensorSubclassVariable({self.class_type.__qualname__}, {self.node.name})"


# ---- NumPy ---------------------------------------------------------------------------------------

class NumpyNdarrayVariable(VariableTracker):
    """A ``numpy.ndarray``, or a NumPy scalar, in the traced program: the tensor
    holding its data.

    NumPy operations on it become graph nodes running ``torch._numpy``
    (:mod:`bytegraph.variables.numpy`); static metadata (``ndim``, ``shape``,
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

    def __init__(self, node: torch.fx.Node, example: torch.Tensor, source=None, scalar: bool = False,
                 readonly: bool = False):
        super().__init__(source)
        self.node = node
        self.example = example
        self.scalar = scalar
        self.readonly = readonly

    def python_type(self) -> type:
        return npops.numpy_dtype(self.example.dtype).type if self.scalar else npops.np.ndarray

    def as_proxy(self) -> Any:
        return self.node

    def as_example(self) -> Any:
        return self.example

    def truthy(self, tx: Tx) -> bool:
        unimplemented(
            gb_type="data-dependent branching",
            context=f"bool() of an ndarray ({self.node.name})",
            explanation="The branch taken depends on array data, which is unknown while tracing.",
            hints=(HINT_DYNAMIC_CONTROL_FLOW,),
        )

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return self.example.dim() > 0

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        if self.example.dim() == 0:
            unimplemented(
                gb_type="user error",
                context="iteration over a 0-d array",
                explanation="The traced code raises TypeError; it runs natively so the error is the eager one.",
                hints=("Do not iterate over 0-d arrays.",),
            )
        return [tx.numpy_operator(operator.getitem, [self, ConstantVariable(i)])
                for i in range(self.example.size(0))]

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name in npops.UNSUPPORTED_ATTRS:
            _unsupported_ndarray(name)
        if name in npops.STATIC_ATTRS:
            return self._static_attr(tx, name)
        if name in npops.GRAPH_ATTRS:
            return tx.numpy_call(npops.attribute_op(name), [self], {})
        if name == "__class__":
            return tx.wrap_const(self.python_type())
        if npops.has_method(name):
            return BoundMethodVariable(self, name)
        unimplemented(
            gb_type="unsupported ndarray attribute",
            context=f"ndarray.{name}",
            explanation="torch._numpy does not implement this ndarray attribute, so bytegraph cannot trace it.",
            hints=("Use it outside the compiled function.",),
        )

    def _static_attr(self, tx: Tx, name: str) -> VT:
        t = self.example
        if name == "shape":
            return TupleVariable(TensorVariable(self.node, t)._sizes(tx).items)
        if name == "ndim":
            return ConstantVariable(t.dim())
        if name == "itemsize":
            return ConstantVariable(t.element_size())
        value = {"size": lambda: t.numel(), "nbytes": lambda: t.numel() * t.element_size(),
                 "strides": lambda: tuple(s * t.element_size() for s in t.stride())}[name]()
        if any(isinstance(v, SYMBOLIC_TYPES) for v in (value if isinstance(value, tuple) else (value,))):
            unimplemented(
                gb_type="unsupported ndarray attribute",
                context=f"ndarray.{name} of an array with dynamic shape",
                explanation="This attribute depends on a symbolic size; bytegraph answers it for static shapes only.",
                hints=("Read shape instead, or mark the input static.",),
            )
        return tx.wrap_const(value)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name in npops.UNSUPPORTED_ATTRS:
            _unsupported_ndarray(name)
        if name == "__len__" and not args:
            if self.example.dim() == 0:
                unimplemented(
                    gb_type="user error",
                    context="len() of a 0-d array",
                    explanation="The traced code raises TypeError; it runs natively so the error is the eager one.",
                    hints=("Do not call len() on a 0-d array.",),
                )
            return TensorVariable(self.node, self.example)._size(tx, 0)
        if name in ("__getitem__", "__setitem__"):
            return tx.numpy_operator(operator.getitem if name == "__getitem__" else operator.setitem, [self, *args])
        if name == "astype" and "copy" in kwargs:
            unimplemented(
                gb_type="unsupported ndarray method",
                context="ndarray.astype(copy=...)",
                explanation="astype without a copy may return the array itself; bytegraph traces the copying form.",
                hints=("Drop the copy argument.",),
            )
        if npops.has_method(name):
            return tx.numpy_call(npops.method_op(name), [self, *args], kwargs)
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
            npops.to_ndarray
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
