"""Tensor behaviour: TensorVariable and putting tensor operations in the graph.

A :class:`TensorVariable` is an fx node plus its FakeTensor example. Static
metadata (dtype, shape, ndim...) is answered from the example as constants;
tensor computations become graph nodes via :func:`graph_call`, whose result
metadata comes from running the operation on the examples under the
FakeTensorMode; what is neither (data-dependent values, autograd calls) is a
graph break with a reason.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Sequence

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, free_unbacked_symbols

from bytegraph.breaks import HINT_DATA_DEPENDENT, HINT_DYNAMIC_CONTROL_FLOW, unimplemented
from bytegraph.config import config
from bytegraph.variables.base import VariableTracker
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
    "numpy": "converts a tensor to a NumPy array",
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
    proxy_args = tuple(a.as_proxy() for a in args)
    proxy_kwargs = {k: v.as_proxy() for k, v in kwargs.items()}
    example_args = tuple(a.as_example() for a in args)
    example_kwargs = {k: v.as_example() for k, v in kwargs.items()}
    example = tx.output.run_fake(kind, target, example_args, example_kwargs)
    node = tx.output.create_node(kind, target, proxy_args, proxy_kwargs, example)
    for arg in args:
        if isinstance(arg, TensorVariable) and arg.example is example:
            return arg
    return wrap_fx_value(tx, node, example)


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
        """The concrete value, guarded: the ShapeEnv specialises the symbol and
        records the guard (``n == 3``) that the cache entry checks, even when the
        graph itself never reads the input.

        Raises:
            Unsupported: when the value depends on tensor data (no guard can
                stand for it).
        """
        return self._concrete(self.python_type())

    def truthy(self, tx: Tx) -> bool:
        """``bool(value)``, guarded like :meth:`as_python_constant` (``n != 0``).

        Raises:
            Unsupported: when the value depends on tensor data.
        """
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
