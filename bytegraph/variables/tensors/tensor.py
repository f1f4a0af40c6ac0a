"""Tensor behaviour: TensorVariable, the traced tensor.

A :class:`TensorVariable` is an fx node plus its FakeTensor example. What a
traced tensor answers when the program asks it something follows one rule:

- static metadata (dtype, shape, ndim...) is answered from the example as a
  constant; the input's tensor guard makes the answer valid for later calls,
  and metadata that guard does not cover (``is_leaf``, ``storage_offset()``...)
  is read from the input through a source and guarded on its own;
- tensor computations become graph nodes via
  :func:`~bytegraph.variables.tensors.graph_calls.graph_call`, whose result metadata
  comes from running the operation on the examples under the FakeTensorMode;
- what is neither (data-dependent values, autograd calls, storage swaps) is a
  graph break with a reason.

The tables of :mod:`~bytegraph.variables.tensors.surface` say which attribute
or method takes which path (:func:`attribute_route`, :func:`method_route`); a
name with a handler (``attr_<name>``/``method_<name>``; ``method_dunder_getitem``
for ``__getitem__``) is answered by it. ``docs/tensor_support.md`` is
generated from the same routes (``tools/gen_docs.py``).

The other tensor kinds live next to what they do: symbolic scalars in
:mod:`~bytegraph.variables.tensors.symbolic`, storages, data pointers and hook handles
in :mod:`~bytegraph.variables.tensors.handles`, tensor subclasses in
:mod:`~bytegraph.variables.tensors.subclass`, NumPy arrays in
:mod:`~bytegraph.variables.tensors.ndarray`.
"""
from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch
import torch.fx

from bytegraph.breaks import HINT_DATA_DEPENDENT, unimplemented, user_error
from bytegraph.graph.side_effects import DELETED
from bytegraph.guards.guards import DictContains
from bytegraph.guards.source import AttrSource, CallMethodSource
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.handlers import handler_name, method_handler
from bytegraph.variables.constant import ConstantVariable, raise_traced
from bytegraph.variables.containers.sequences import BaseSequenceVariable, SizeVariable
from bytegraph.variables.operators import TENSOR_OPERATORS
from bytegraph.variables.tensors import graph_calls, scalar_args, symbolic
from bytegraph.variables.tensors.surface import (
    BREAKING_ATTRS,
    BREAKING_METHODS,
    CAPTURABLE_METHODS,
    DATA_DEPENDENT_METHODS,
    INPLACE_VIEW_METHODS,
    METHOD_HINTS,
    SOURCED_ATTRS,
    SOURCED_METHODS,
    STATIC_ATTRS,
    STATIC_METHODS,
    STORAGE_METHODS,
)
from bytegraph.variables.tensors.tensor_methods import TensorMethods
from bytegraph.variables.tx import as_subclass, dispatch_tensor_method, tensor_to_numpy, wrap, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class TensorVariable(TensorMethods, VariableTracker):
    """A tensor in the traced program.

    Attributes:
        node: the fx node producing the tensor (a placeholder for graph inputs).
        example: its FakeTensor: shape, dtype, device, strides, requires_grad.
        class_type: the Python class of the real tensor (``torch.Tensor`` or
            ``torch.nn.Parameter``...), what ``type(t)`` answers.
        source: where a graph input is read from; None for tensors the graph computes.
    """

    rebuilt_once = False
    array_identity = True

    def __init__(self, node: torch.fx.Node, example: torch.Tensor, source=None, class_type: type = torch.Tensor):
        super().__init__(source)
        self.node = node
        self.example = example
        self.class_type = class_type
        #: Python attributes stored on a tensor the graph computes (``y.note = 3``), set on it when rebuilt
        self.py_attrs: dict[str, VT] = {}

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
            for name, value in self.py_attrs.items():
                codegen.call_on_top(setattr, ConstantVariable(name), value)

    def truthy(self, tx: Tx) -> bool:
        symbolic.branch_on_data(f"a tensor ({self.node.name})")

    def assert_in_graph(self, tx: Tx, truth: bool) -> bool:
        """``assert t`` / ``assert not t`` on a one-element tensor: an
        ``aten._assert_async`` node (a failing check raises RuntimeError when the
        graph runs, and the frame then reruns natively, raising eager's
        AssertionError with its message). A tensor of several elements is left to
        :meth:`truthy` (eager raises)."""
        if self.example.numel() != 1:
            return False
        checked = self if truth else graph_calls.graph_call(tx, "call_function", torch.logical_not, [self], {})
        tx.output.create_node("call_function", torch._assert_async, (checked.node, "assert statement failed"), {}, None)
        return True

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return self.example.dim() > 0

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        """``a, b = t`` / ``for row in t``: ``t[0], t[1], ...`` along dim 0."""
        return unpack_rows(self.example, "tensor", lambda i: graph_calls.graph_call(
            tx, "call_function", operator.getitem, [self, ConstantVariable(i)], {}))

    # ---- operators: graph nodes (``t[i]`` is ``__getitem__``) ------------------------
    def binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        if op is operator.getitem:
            return self.call_method(tx, "__getitem__", [other], {})
        return graph_calls.graph_operator(tx, op, [self, other]) if op in TENSOR_OPERATORS else NotImplemented

    def reflected_binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``other op t``. ``seq[t]`` on a list or tuple is a graph op (the
        tensor's ``__index__`` runs when the graph runs; a tensor whose value
        the trace cannot know breaks when the op is traced); a subscript of
        anything else is that object's own lookup (``d[t]`` on a dict)."""
        if op is operator.getitem:
            return graph_calls.graph_operator(tx, op, [other, self]) if isinstance(
                other, BaseSequenceVariable) else NotImplemented
        if op not in TENSOR_OPERATORS:
            return NotImplemented
        return graph_calls.graph_operator(tx, op, [other, self])

    def inplace_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``t += x``: the in-place operator in the graph, mutating ``t``."""
        return graph_calls.graph_operator(tx, op, [self, other])

    def unary_op(self, tx: Tx, op: Any) -> Any:
        return graph_calls.graph_operator(tx, op, [self]) if op in TENSOR_OPERATORS else NotImplemented

    def contains_op(self, tx: Tx, item: VT) -> VT:
        return self.call_method(tx, "__contains__", [item], {})

    # ---- attributes ------------------------------------------------------------------------
    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name in tx.output.forbidden_tensor_attrs:  # a torch.func transform answers it otherwise
            unimplemented(gb_type="unsupported torch.func transform", context=f"reading Tensor.{name} in its function",
                          explanation="Under the transform this attribute has another value than in the trace.")
        if not self.class_has(name):  # the instance __dict__ answers, else a __getattr__ of a subclass
            found = self.instance_attr(tx, name)
            if found is not None:
                return found
            if not self.class_has("__getattr__"):
                raise_traced(AttributeError, f"{self.python_type().__name__!r} object has no attribute {name!r}")
        route = attribute_route(name)
        if route == "static":
            return ConstantVariable(getattr(self.example, name))
        if route == "sourced":
            return self._sourced(tx, name, AttrSource, lambda t: getattr(t, name))
        if route == "handler":
            return getattr(self, handler_name("attr_", name))(tx)
        if route == "method":
            return TensorMethodVariable(self, name)
        if route == "getset":
            return graph_calls.graph_call(tx, "call_function", getattr, [self, ConstantVariable(name)], {},
                              check=functools.partial(_attribute_result, name))
        unimplemented(
            gb_type="unsupported tensor attribute",
            context=f"Tensor.{name}",
            explanation=f"Tensor.{name} {BREAKING_ATTRS.get(name, 'is not an attribute bytegraph knows')}; "
            "it is not traced.",
            hints=("Read it outside the compiled function.",),
        )

    def class_has(self, name: str) -> bool:
        """Whether the tensor's class defines ``name`` (an instance attribute
        cannot shadow torch's data descriptors)."""
        return any(name in klass.__dict__ for klass in self.python_type().__mro__)

    def has_attr(self, tx: Tx, name: str) -> bool:
        """``hasattr(t, name)``: the FakeTensor answers for the class, the
        instance dict (guarded) for anything else."""
        return hasattr(self.example, name) if self.class_has(name) else self.instance_attr(tx, name) is not None

    def instance_attr(self, tx: Tx, name: str) -> VT | None:
        """``t.name`` from the instance dict (``t.tag = 5``), or None: a value
        stored in this trace (on an input: replayed after the graph; on a
        tensor the graph makes: set when it is rebuilt), else an input's own
        entry, read through its source with its presence guarded."""
        if self.source is None:
            return self.py_attrs.get(name)
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is not None:
            return None if pending is DELETED else pending
        present = name in self._real(tx).__dict__
        tx.output.guards.add(DictContains(AttrSource(self.source, "__dict__"), name, present))
        return wrap(tx, self._real(tx).__dict__[name], AttrSource(self.source, name)) if present else None

    def store_attr(self, tx: Tx, name: str, value: VT) -> None:
        """``t.name = value``: ``grad`` of an input leaf (a side effect replayed after
        the graph), ``real``/``imag`` (a copy into that view, in the graph),
        ``requires_grad`` set to its current value; anything else is a graph break."""
        if self.store_from_handler(tx, name, value):
            return
        if not self.class_has(name):  # a Python attribute, in the instance __dict__
            if self.source is not None:
                tx.output.side_effects.store_attr(self, name, value)
            else:
                self.py_attrs[name] = value
            return
        unimplemented(
            gb_type="tensor attribute store",
            context=f"setting Tensor.{name} on {self.node.name} to {value}",
            explanation="Only .grad of an input leaf (to None or a tensor of its shape, dtype and device), .real, "
            ".imag, .requires_grad to its current value, and names the tensor's class does not define are "
            "assigned in the trace.",
            hints=("Move the assignment out of the compiled function.",),
        )

    def _store_part(self, tx: Tx, name: str, value: VT) -> bool:
        """``t.real = v``/``t.imag = v``: a copy (or fill) into that view, in the graph."""
        view = self.var_getattr(tx, name)
        view.call_method(tx, "copy_" if isinstance(value, TensorVariable) else "fill_", [value], {})
        return True

    def store_real(self, tx: Tx, value: VT) -> bool:
        return self._store_part(tx, "real", value)

    def store_imag(self, tx: Tx, value: VT) -> bool:
        return self._store_part(tx, "imag", value)

    def store_requires_grad(self, tx: Tx, value: VT) -> bool:
        """Set to its current value: nothing to do (others are a graph break)."""
        return value.is_python_constant() and value.as_python_constant() is self.example.requires_grad

    def store_grad(self, tx: Tx, value: VT) -> bool:
        """``.grad`` of an input leaf: a side effect replayed after the graph."""
        if self.source is None or not self._is_leaf(tx) or not _fits_as_grad(self.example, value):
            return False
        tx.output.side_effects.store_attr(self, "grad", value)
        return True

    # ---- methods ------------------------------------------------------------------------------
    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if graph_calls.overloaded_args(tx, [*args, *kwargs.values()]):  # e.g. t.add(subclass_instance)
            return dispatch_tensor_method(tx, self, name, args, kwargs)
        route = method_route(name)
        if route == "data-dependent":
            if name in CAPTURABLE_METHODS and tx.output.capture_scalar_outputs:
                return self._capture_scalars(tx, name)
            unimplemented(
                gb_type="data-dependent tensor method",
                context=f"Tensor.{name}()",
                explanation=f"Tensor.{name} {DATA_DEPENDENT_METHODS[name]} (data-dependent), which cannot be "
                "captured in the graph.",
                hints=(HINT_DATA_DEPENDENT,),
            )
        if route == "break":
            unimplemented(
                gb_type="unsupported tensor method",
                context=f"Tensor.{name}()",
                explanation=f"Tensor.{name} {BREAKING_METHODS[name]}, which cannot be captured in the graph.",
                hints=(METHOD_HINTS.get(name, f"Call .{name}() outside the compiled function."),),
            )
        if name in INPLACE_VIEW_METHODS and self.source is not None:
            unimplemented(
                gb_type="in-place view op on graph input",
                context=f"Tensor.{name}() on input {self.source.name()}",
                explanation=f"Tensor.{name} changes the sizes, strides or storage of a graph input in place, "
                "which the graph cannot do for the caller's tensor.",
                hints=(f"Use the out-of-place {name[:-1]}() and rebind the name.",),
            )
        if route == "static":
            return self._static_method(tx, name, args, kwargs)
        if route == "sourced" and not args and not kwargs:
            return self._sourced(tx, name, CallMethodSource, lambda t: getattr(t, name)())
        if route == "storage" and not args and not kwargs:
            return self._storage_fact(tx, name)
        if route == "handler":
            handler = method_handler(self, tx, name, args, kwargs)  # None: arguments eager rejects, the
            result = handler() if handler is not None else None      # graph path below breaks with that error
            if result is not None:
                return result
        scalars = None if name in INPLACE_VIEW_METHODS else (  # (probing one would change the example's sizes)
            scalar_args.read_as_scalars(tx, "call_method", name, [self, *args], kwargs))
        if scalars is not None:  # x.addcmul_(y, z, value=t): t.item() where eager reads it
            (_, *args), kwargs = scalars
        return graph_calls.graph_call(tx, "call_method", name, [self, *args], kwargs,
                          check=functools.partial(_method_result, name))

    def method_numpy(self, tx: Tx, *args: VT, **kwargs: VT) -> VT:
        """``t.numpy(force=False)``: an ndarray sharing the tensor's node (and, at
        run time, its memory); a graph break where eager raises."""
        return tensor_to_numpy(tx, self, args, kwargs)

    def method_as_subclass(self, tx: Tx, cls: VT, /) -> VT:
        """``t.as_subclass(cls)``: a new object of ``cls`` sharing the tensor's data
        and autograd history."""
        return as_subclass(tx, self, cls)

    def method_dunder_contains(self, tx: Tx, element: VT) -> VT:
        """``x in t``: ``(t == x).any()`` in the graph, then its Python bool
        (data-dependent: ``item()`` rules apply)."""
        if not isinstance(element, (TensorVariable, symbolic.SymNodeVariable)) and not (
            element.is_python_constant() and type(element.as_python_constant()) in (bool, int, float, complex)
        ):
            unimplemented(
                gb_type="user error",
                context=f"{element} in a tensor",
                explanation="Tensor.__contains__ accepts only tensors and numbers; eager raises RuntimeError, "
                "so it runs natively.",
                hints=("Test membership of a tensor or a number.",),
            )
        equal = graph_calls.graph_call(tx, "call_function", operator.eq, [self, element], {})
        return graph_calls.graph_call(tx, "call_method", "any", [equal], {}).call_method(tx, "item", [], {})

    # ---- helpers ------------------------------------------------------------------------------------
    def _real(self, tx: Tx) -> torch.Tensor:
        """The real tensor of a graph input."""
        return tx.output.input_for(self.node).value

    def _sourced(self, tx: Tx, name: str, source_kind: type, read: Callable[[torch.Tensor], Any]) -> VT:
        """Metadata the tensor guard does not cover: the input's real value,
        guarded through ``source_kind(source, name)``; the example's otherwise."""
        if self.source is None:
            return ConstantVariable(read(self.example))
        return wrap(tx, read(self._real(tx)), source_kind(self.source, name))

    def _storage_fact(self, tx: Tx, name: str) -> VT:
        """``t.is_shared()``/``t.is_pinned()``: asked of the input owning the
        storage (guarded), False for storages made in the graph."""
        owners = tx.output.inputs_sharing_storage(self.example)
        if not owners:
            return ConstantVariable(False)
        return wrap(tx, getattr(owners[0].value, name)(), CallMethodSource(owners[0].source, name))

    def _is_leaf(self, tx: Tx) -> bool:
        """``t.is_leaf`` (tensors that do not require grad always are)."""
        if not self.example.requires_grad:
            return True
        return self._sourced(tx, "is_leaf", AttrSource, lambda t: t.is_leaf).as_python_constant()

    def _static_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        values = [a.as_example() for a in args]
        kw = {k: v.as_example() for k, v in kwargs.items()}
        try:
            result = getattr(self.example, name)(*values, **kw)
        except Exception:  # eager raises: the graph path breaks with that error
            return graph_calls.graph_call(tx, "call_method", name, [self, *args], kwargs)
        if isinstance(result, symbolic.SYMBOLIC_TYPES):  # e.g. numel() of a dynamic tensor
            return graph_calls.graph_call(tx, "call_method", name, [self, *args], kwargs)
        return wrap_const(tx, result)

    def _fake_check(self, tx: Tx, name: str, args: list[VT], kwargs: dict[str, VT]) -> None:
        """Run the out-of-place ``name`` on the examples, so that arguments eager
        rejects break the graph before a decomposition is traced."""
        tx.output.run_fake("call_method", name, (self.example, *[a.as_example() for a in args]),
                           {k: v.as_example() for k, v in kwargs.items()})

    def _capture_scalars(self, tx: Tx, name: str) -> VT:
        """``item()``/``tolist()``/``int(t)``/``float(t)`` as data-dependent
        scalars in the graph (``config.capture_scalar_outputs``, or ``fullgraph``)."""
        if name in ("item", "tolist"):
            return graph_calls.graph_call(tx, "call_method", name, [self], {})
        item = graph_calls.graph_call(tx, "call_method", "item", [self], {})
        return symbolic.convert_scalar(tx, item, int if name in ("__int__", "__index__") else float)

    def _dim(self, dim: VT) -> int:
        """A dim argument as a non-negative int; eager's IndexError runs natively."""
        d = dim.as_python_constant()
        ndim = self.example.dim()
        if type(d) is not int or not -ndim <= d < ndim:
            user_error(
                "IndexError or TypeError",
                context=f"dim {d!r} of a {ndim}-d tensor",
                hint="Pass a dim within range.",
            )
        return d % ndim

    def _sizes(self, tx: Tx) -> SizeVariable:
        """``t.shape``: constants for static dims, SymNodeVariables for symbolic ones."""
        return SizeVariable([self._size(tx, i) for i in range(self.example.dim())])

    def _size(self, tx: Tx, dim: int) -> VT:
        size = self.example.size(dim)
        if isinstance(size, torch.SymInt):
            node, example = tx.output.sym_size(self.node, self.example, dim)
            return symbolic.SymNodeVariable(node, example)
        return ConstantVariable(int(size))

    def __repr__(self) -> str:
        return f"TensorVariable({self.node.name}, {tuple(self.example.shape)}, {self.example.dtype})"


def attribute_route(name: str) -> str:
    """How ``t.<name>`` is answered: ``"static"``, ``"sourced"`` (tables of
    :mod:`~bytegraph.variables.tensors.surface`), ``"handler"`` (an ``attr_``
    handler), ``"method"`` (a bound method), ``"getset"`` (another getset
    attribute: a graph op when it is a tensor), or ``"break"``."""
    if name in STATIC_ATTRS:
        return "static"
    if name in SOURCED_ATTRS:
        return "sourced"
    if hasattr(TensorVariable, handler_name("attr_", name)):
        return "handler"
    if name in BREAKING_ATTRS:
        return "break"
    if callable(getattr(torch.Tensor, name, None)):
        return "method"
    return "getset" if hasattr(torch.Tensor, name) else "break"


def method_route(name: str) -> str:
    """How ``t.<name>(...)`` is answered: ``"data-dependent"``, ``"break"``,
    ``"static"``, ``"sourced"``, ``"storage"`` (tables of
    :mod:`~bytegraph.variables.tensors.surface`), ``"handler"`` (a ``method_``
    handler), or ``"graph"`` (a graph op when it returns tensors). In-place
    view ops (``INPLACE_VIEW_METHODS``) break first when called on a graph input."""
    if name in DATA_DEPENDENT_METHODS:
        return "data-dependent"
    if name in BREAKING_METHODS:
        return "break"
    if name in STATIC_METHODS:
        return "static"
    if name in SOURCED_METHODS:
        return "sourced"
    if name in STORAGE_METHODS:
        return "storage"
    return "handler" if hasattr(TensorVariable, handler_name("method_", name)) else "graph"


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


def _fits_as_grad(example: torch.Tensor, value: VT) -> bool:
    """Whether eager accepts ``value`` as the ``.grad`` of ``example``."""
    if value.is_python_constant():
        return value.as_python_constant() is None
    return isinstance(value, TensorVariable) and (
        value.example.shape == example.shape and value.example.dtype == example.dtype
        and value.example.device == example.device and value.example.layout == example.layout
    )


def _method_result(name: str, example: Any) -> None:
    """Reject a method result that is not tensors (or tuples/lists of them)."""
    if not _holds_only_tensors(example):
        unimplemented(
            gb_type="unsupported tensor method",
            context=f"Tensor.{name}() returned {type(example).__name__}",
            explanation=f"Tensor.{name} returns a {type(example).__name__}, which bytegraph cannot know at trace "
            "time; it runs natively.",
            hints=(f"Call .{name}() outside the compiled function.",),
        )


def _attribute_result(name: str, example: Any) -> None:
    """Reject an attribute value that is not tensors."""
    if not _holds_only_tensors(example):
        unimplemented(
            gb_type="unsupported tensor attribute",
            context=f"Tensor.{name} is a {type(example).__name__}",
            explanation=f"Tensor.{name} is a {type(example).__name__}, which bytegraph cannot know at trace time; "
            "it runs natively.",
            hints=("Read it outside the compiled function.",),
        )


def _holds_only_tensors(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    return isinstance(value, (tuple, list)) and all(v is None or _holds_only_tensors(v) for v in value)


def unpack_rows(example: torch.Tensor, kind: str, row: Callable[[int], VT]) -> list[VT]:
    """``row(0), row(1), ...`` along dim 0 of ``example`` (iterating a tensor or
    array); a 0-d value raises TypeError in eager, so it breaks, and so does a count of rows
    that depends on tensor data (``x[x > 0]``: the loop's length is unknown while tracing)."""
    if example.dim() == 0:
        user_error(
            "TypeError",
            context=f"iteration over a 0-d {kind}",
            hint="Index a 0-d value with .item(), or keep it whole.",
        )
    rows = symbolic.concrete(int, example.size(0), f"the number of rows of a {kind} ({example.size(0)})")
    return [row(i) for i in range(rows)]
