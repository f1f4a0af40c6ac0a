"""Tensor behaviour: TensorVariable and putting tensor operations in the graph.

A :class:`TensorVariable` is an fx node plus its FakeTensor example. What a
traced tensor answers when the program asks it something follows one rule:

- static metadata (dtype, shape, ndim...) is answered from the example as a
  constant; the input's tensor guard makes the answer valid for later calls,
  and metadata that guard does not cover (``is_leaf``, ``storage_offset()``...)
  is read from the input through a source and guarded on its own;
- tensor computations become graph nodes via :func:`graph_call`, whose result
  metadata comes from running the operation on the examples under the
  FakeTensorMode;
- what is neither (data-dependent values, autograd calls, storage swaps) is a
  graph break with a reason.

The tables of :mod:`~bytegraph.variables.tensor_surface` say which attribute
or method takes which path (:func:`attribute_route`, :func:`method_route`); a
name with a handler (``attr_<name>``/``method_<name>``; ``method_dunder_getitem``
for ``__getitem__``) is answered by it. ``docs/tensor_support.md`` is
generated from the same routes (``tools/gen_docs.py``). Storages, data
pointers and hook handles that a tensor hands out are
:class:`UntypedStorageVariable`, :class:`DataPtrVariable` and
:class:`RemovableHandleVariable`.

Two kinds of values that are tensors underneath are also defined here:
:class:`TensorSubclassVariable` (an instance of a ``torch.Tensor`` subclass;
its dispatch is in :mod:`bytegraph.variables.torch_function`) and
:class:`NumpyNdarrayVariable` (a NumPy array; NumPy calls are in
:mod:`bytegraph.variables.ndarray`, NumPy's tables in
:mod:`bytegraph.variables.numpy`). Both reach their modules through ``tx``,
since those modules import this one.
"""
from __future__ import annotations

import functools
import inspect
import operator
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Sequence

import torch
import torch.fx
import torch.utils.hooks
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, free_unbacked_symbols

from bytegraph.breaks import HINT_DATA_DEPENDENT, HINT_DYNAMIC_CONTROL_FLOW, unimplemented
from bytegraph.config import config
from bytegraph.guards.guards import ConstantMatch, DictContains, SameStorage
from bytegraph.graph.output_graph import storage_id
from bytegraph.guards.source import AttrSource, CallMethodSource
from bytegraph.variables import numpy as npops
from bytegraph.variables.base import BoundMethodVariable, VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.sequences import ListVariable, NamedTupleVariable, SizeVariable, SliceVariable, TupleVariable
from bytegraph.variables.tensor_surface import (
    BREAKING_ATTRS,
    BREAKING_METHODS,
    CAPTURABLE_METHODS,
    DATA_DEPENDENT_METHODS,
    INPLACE_VIEW_METHODS,
    LEGACY_TENSOR_TYPES,
    METHOD_HINTS,
    SOURCED_ATTRS,
    SOURCED_METHODS,
    STATIC_ATTRS,
    STORAGE_METHODS,
    STATIC_METHODS,
    handler_name,
)

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.graph.output_graph import GraphInput
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker


@functools.lru_cache(maxsize=None)
def _signature(fn: Callable) -> inspect.Signature:
    return inspect.signature(fn)


class TensorVariable(VariableTracker):
    """A tensor in the traced program.

    Attributes:
        node: the fx node producing the tensor (a placeholder for graph inputs).
        example: its FakeTensor: shape, dtype, device, strides, requires_grad.
        class_type: the Python class of the real tensor (``torch.Tensor`` or
            ``torch.nn.Parameter``...), what ``type(t)`` answers.
        source: where a graph input is read from; None for tensors the graph computes.
    """

    rebuilt_once = False

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
        branch_on_data(f"a tensor ({self.node.name})")

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return self.example.dim() > 0

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        """``a, b = t`` / ``for row in t``: ``t[0], t[1], ...`` along dim 0."""
        return unpack_rows(self.example, "tensor", lambda i: graph_call(
            tx, "call_function", operator.getitem, [self, ConstantVariable(i)], {}))

    # ---- attributes ------------------------------------------------------------------------
    def var_getattr(self, tx: Tx, name: str) -> VT:
        if not self.class_has(name) and self.has_instance_attr(tx, name):
            return tx.wrap(self._real(tx).__dict__[name], AttrSource(self.source, name))
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
            return graph_call(tx, "call_function", getattr, [self, ConstantVariable(name)], {},
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

    def has_instance_attr(self, tx: Tx, name: str) -> bool:
        """Whether ``name`` is in the instance dict (``t.tag = 5`` made before
        the call, or natively at a graph break): read from an input, guarded;
        a tensor made in the graph has none (storing one is a graph break)."""
        if self.source is None:
            return False
        present = name in self._real(tx).__dict__
        tx.output.guards.add(DictContains(AttrSource(self.source, "__dict__"), name, present))
        return present

    def attr_shape(self, tx: Tx) -> VT:
        """``t.shape``: a torch.Size of constants (SymInts for dynamic dims)."""
        return self._sizes(tx)

    def attr_nbytes(self, tx: Tx) -> VT:
        """``t.nbytes``: ``numel() * itemsize``, a constant (symbolic for dynamic shapes)."""
        numel = self.call_method(tx, "numel", [], {})
        return tx.call_builtin(operator.mul, [numel, ConstantVariable(self.example.itemsize)])

    def attr_is_leaf(self, tx: Tx) -> VT:
        """``t.is_leaf``: a constant, read from an input that requires grad (guarded)."""
        return ConstantVariable(self._is_leaf(tx))

    def attr_dunder_class(self, tx: Tx) -> VT:
        """``t.__class__``: the tensor's Python class (guarded for inputs)."""
        return tx.wrap_const(self.class_type)

    def attr_data(self, tx: Tx) -> VT:
        """``t.data``: a graph op making a detached alias with its own version counter."""
        return graph_call(tx, "call_function", torch._C._autograd._get_data_attr, [self], {})

    def attr_grad(self, tx: Tx) -> VT:
        """``t.grad``: read from an input (guarded; ``None`` included), ``None`` for
        leaves made in the graph; a graph break on non-leaf tensors (eager warns)."""
        pending = tx.output.side_effects.pending_attr(self, "grad")
        if pending is not None:
            return pending
        if not self._is_leaf(tx):
            unimplemented(
                gb_type="grad of non-leaf tensor",
                context=f"{self.node.name}.grad",
                explanation="Reading .grad of a non-leaf tensor warns in eager (its .grad is not populated); "
                "it runs natively so the warning is the eager one.",
                hints=("Call .retain_grad() and read .grad outside the compiled function.",),
            )
        if self.source is None:
            return ConstantVariable(None)
        return tx.wrap_attr(self, self._real(tx).grad, "grad")

    def attr_grad_fn(self, tx: Tx) -> VT:
        """``t.grad_fn``: ``None`` for leaves; a graph break when the tensor has one."""
        if self._is_leaf(tx):
            return ConstantVariable(None)
        unimplemented(
            gb_type="tensor grad_fn",
            context=f"{self.node.name}.grad_fn",
            explanation="The autograd node of a tensor is not a value bytegraph can put in or take out of a graph.",
            hints=("Read .grad_fn outside the compiled function.",),
        )

    def attr__version(self, tx: Tx) -> VT:
        """``t._version``: for a tensor sharing an input's version counter, the
        input's version at call time (guarded; symbolic once it changes) plus the
        in-place ops traced on it since; a constant for tensors made in the graph."""
        if self.example.is_inference():
            unimplemented(
                gb_type="user error",
                context=f"{self.node.name}._version of an inference tensor",
                explanation="The traced code raises RuntimeError; it runs natively so the error is the eager one.",
                hints=("Inference tensors have no version counter.",),
            )
        owners = [inp for inp in _tensor_inputs(tx) if _shares_version_counter(self.example, inp.example)]
        if not owners:
            return ConstantVariable(self.example._version)
        if len(owners) > 1:
            unimplemented(
                gb_type="tensor version of aliased inputs",
                context=f"{self.node.name}._version shares its counter with {len(owners)} inputs",
                explanation="Several inputs share this version counter, so which input's version to read is ambiguous.",
                hints=("Read ._version outside the compiled function.",),
            )
        owner = owners[0]
        at_call = tx.wrap(owner.value._version, AttrSource(owner.source, "_version"))
        return tx.call_builtin(operator.add, [at_call, ConstantVariable(self.example._version - owner.fake_version)])

    def store_attr(self, tx: Tx, name: str, value: VT) -> None:
        """``t.name = value``: ``grad`` of an input leaf (a side effect replayed after
        the graph), ``real``/``imag`` (a copy into that view, in the graph),
        ``requires_grad`` set to its current value; anything else is a graph break."""
        if name in ("real", "imag"):
            view = self.var_getattr(tx, name)
            if isinstance(value, TensorVariable):
                view.call_method(tx, "copy_", [value], {})
            else:
                view.call_method(tx, "fill_", [value], {})
            return
        if name == "requires_grad" and value.is_python_constant() and (
            value.as_python_constant() is self.example.requires_grad
        ):
            return
        if name == "grad" and self.source is not None and self._is_leaf(tx) and _fits_as_grad(self.example, value):
            tx.output.side_effects.store_attr(self, "grad", value)
            return
        unimplemented(
            gb_type="tensor attribute store",
            context=f"setting Tensor.{name} on {self.node.name} to {value}",
            explanation="Only .grad of an input leaf (to None or a tensor of its shape, dtype and device), .real, "
            ".imag, and .requires_grad to its current value are assigned in the trace.",
            hints=("Move the assignment out of the compiled function.",),
        )

    # ---- methods ------------------------------------------------------------------------------
    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if overloaded_args(tx, [*args, *kwargs.values()]):  # e.g. t.add(subclass_instance)
            return tx.dispatch_tensor_method(self, name, args, kwargs)
        if name == "numpy":
            return tx.tensor_to_numpy(self, args, kwargs)
        if name == "as_subclass" and len(args) == 1 and not kwargs:
            return tx.as_subclass(self, args[0])
        route = method_route(name)
        if route == "data-dependent":
            if name in CAPTURABLE_METHODS and config.capture_scalar_outputs:
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
            handler = getattr(self, handler_name("method_", name))
            try:
                bound = _signature(handler).bind(tx, *args, **kwargs)
            except TypeError:  # eager raises: the graph path below breaks with that error
                bound = None
            result = handler(*bound.args, **bound.kwargs) if bound is not None else None
            if result is not None:
                return result
        return graph_call(tx, "call_method", name, [self, *args], kwargs,
                          check=functools.partial(_method_result, name))

    def method_size(self, tx: Tx, dim: VT | None = None) -> VT:
        """``t.size()``/``t.size(d)``: constants (SymInts for dynamic dims)."""
        if dim is None:
            return self._sizes(tx)
        return self._size(tx, self._dim(dim))

    def method_stride(self, tx: Tx, dim: VT | None = None) -> VT:
        """``t.stride()``/``t.stride(d)``: constants (in the graph when symbolic)."""
        strides = self.example.stride()
        if any(isinstance(v, torch.SymInt) for v in strides):
            return graph_call(tx, "call_method", "stride", [self] if dim is None else [self, dim], {})
        if dim is None:
            return TupleVariable([ConstantVariable(int(v)) for v in strides])
        return ConstantVariable(int(strides[self._dim(dim)]))

    def method_dunder_len(self, tx: Tx) -> VT:
        """``len(t)``: the size of dim 0; TypeError (natively) for 0-d tensors."""
        if self.example.dim() == 0:
            unimplemented(
                gb_type="user error",
                context="len() of a 0-d tensor",
                explanation="The traced code raises TypeError; it runs natively so the error is the eager one.",
                hints=("Do not call len() on a 0-d tensor.",),
            )
        return self._size(tx, 0)

    def method_storage_offset(self, tx: Tx) -> VT:
        """``t.storage_offset()``: a constant, guarded through the inputs owning the
        storage (in the graph when symbolic)."""
        offset = self.example.storage_offset()
        if isinstance(offset, torch.SymInt):
            return graph_call(tx, "call_method", "storage_offset", [self], {})
        _pin_storage_offsets(tx, tx.output.inputs_sharing_storage(self.example))
        return ConstantVariable(int(offset))

    def method_type(self, tx: Tx, dtype: VT | None = None, non_blocking: VT | None = None, **kwargs: VT) -> VT | None:
        """``t.type()``: the type name (``"torch.FloatTensor"``), a constant;
        ``t.type(T)`` with a dtype, a tensor type or its name: ``t.to(...)`` in
        the graph (the tensor itself when the type does not change)."""
        if kwargs:
            return None  # eager raises: the graph path breaks with its error
        if dtype is None:
            return ConstantVariable(self.example.type())
        target = dtype.as_python_constant()
        if isinstance(target, str):
            target = LEGACY_TENSOR_TYPES.get(target)
        if isinstance(target, torch.dtype):
            target_dtype, target_device = target, self.example.device.type
        elif isinstance(target, type) and target in torch._tensor_classes:
            target_dtype, target_device = target.dtype, "cuda" if target.is_cuda else "cpu"
        else:
            return None  # eager raises: the graph path breaks with its error
        if target_dtype == self.example.dtype and target_device == self.example.device.type:
            return self
        device = ConstantVariable(target_device if target_device != self.example.device.type else self.example.device)
        return graph_call(tx, "call_method", "to", [self], {"device": device, "dtype": ConstantVariable(target_dtype)})

    def method_dunder_getitem(self, tx: Tx, index: VT) -> VT:
        """``t[index]`` (ints, slices, None, Ellipsis, tensors, lists): a graph op;
        symbolic ints among ints and slices become ``torch.select`` (plain
        indexing would specialise them). A boolean-mask index has a
        data-dependent shape and breaks."""
        items = list(index.items) if type(index) is TupleVariable else [index]
        symbolic = [i for i, item in enumerate(items) if isinstance(item, SymNodeVariable)]
        if not symbolic or not all(_basic_index(item) for item in items):
            return graph_call(tx, "call_function", operator.getitem, [self, index], {})
        # symbolic positions keep their dim (a full slice), then are selected, last dim first
        full = ConstantVariable(slice(None))
        kept = [full if i in symbolic else item for i, item in enumerate(items)]
        result = graph_call(tx, "call_function", operator.getitem, [self, TupleVariable(kept)], {})
        for i in reversed(symbolic):
            dim = sum(1 for item in items[:i] if not item.is_python_constant() or item.python_type() is slice)
            result = graph_call(tx, "call_function", torch.select, [result, ConstantVariable(dim), items[i]], {})
        return result

    def method_dunder_setitem(self, tx: Tx, index: VT, value: VT) -> VT:
        """``t[index] = value``: a graph op mutating ``t``."""
        return graph_call(tx, "call_function", operator.setitem, [self, index, value], {})

    def method_dunder_contains(self, tx: Tx, element: VT) -> VT:
        """``x in t``: ``(t == x).any()`` in the graph, then its Python bool
        (data-dependent: ``item()`` rules apply)."""
        if not isinstance(element, (TensorVariable, SymNodeVariable)) and not (
            element.is_python_constant() and type(element.as_python_constant()) in (bool, int, float, complex)
        ):
            unimplemented(
                gb_type="user error",
                context=f"{element} in a tensor",
                explanation="Tensor.__contains__ accepts only tensors and numbers; eager raises RuntimeError, "
                "so it runs natively.",
                hints=("Test membership of a tensor or a number.",),
            )
        equal = graph_call(tx, "call_function", operator.eq, [self, element], {})
        return graph_call(tx, "call_method", "any", [equal], {}).call_method(tx, "item", [], {})

    def method_uniform_(self, tx: Tx, *args: VT, **kwargs: VT) -> VT | None:
        """``t.uniform_(a, b)``: a graph op; with the ``from`` keyword a graph break."""
        if "from" in kwargs:
            unimplemented(
                gb_type="unsupported tensor method",
                context="Tensor.uniform_() with the 'from' keyword",
                explanation="Tensor.uniform_ with a 'from' keyword argument is not traced.",
                hints=(METHOD_HINTS["uniform_"],),
            )
        return None

    def method_set_(self, tx: Tx, *args: VT, **kwargs: VT) -> VT | None:
        """``t.set_(source)``/``t.set_()`` on a tensor made in the graph: a graph
        op; with storage, offset, size and stride arguments a graph break."""
        if len(args) + len(kwargs) > 1:
            unimplemented(
                gb_type="unsupported tensor method",
                context="Tensor.set_() with storage/offset/size/stride arguments",
                explanation="Tensor.set_ onto a storage with explicit geometry is not traced.",
                hints=("Call set_ outside the compiled function.",),
            )
        return None

    def method_new(self, tx: Tx, *args: VT, **kwargs: VT) -> VT | None:
        """``t.new(*sizes)``/``t.new(torch.Size)``: ``t.new_empty(sizes)`` in the
        graph; ``t.new(data)`` breaks (use ``new_tensor``)."""
        if set(kwargs) - {"device"}:
            return None  # eager raises: the graph path breaks with its error
        if len(args) == 1 and isinstance(args[0], SizeVariable):
            sizes = args[0].items
        elif all(isinstance(a, SymNodeVariable) or (a.is_python_constant() and type(a.as_python_constant()) is int)
                 for a in args):
            sizes = list(args) if args else [ConstantVariable(0)]
        else:
            unimplemented(
                gb_type="unsupported tensor method",
                context="Tensor.new() with data",
                explanation="The legacy constructor Tensor.new is traced only with sizes.",
                hints=("Use t.new_tensor(data) or t.new_empty(sizes).",),
            )
        return graph_call(tx, "call_method", "new_empty", [self, TupleVariable(sizes)], kwargs)

    def method_requires_grad_(self, tx: Tx, requires_grad: VT = ConstantVariable(True)) -> VT:
        """``t.requires_grad_(flag)``: ``t`` itself when the flag does not change; a
        graph break when it does."""
        if requires_grad.as_python_constant() is self.example.requires_grad:
            return self
        unimplemented(
            gb_type="requires_grad change",
            context=f"{self.node.name}.requires_grad_({requires_grad.as_python_constant()!r})",
            explanation="Changing whether a tensor requires grad inside the graph would change autograd for "
            "operations bytegraph has already traced.",
            hints=("Set requires_grad before calling the compiled function.",),
        )

    def method_untyped_storage(self, tx: Tx) -> VT:
        """``t.untyped_storage()``: an :class:`UntypedStorageVariable`."""
        return UntypedStorageVariable(self)

    def method_data_ptr(self, tx: Tx) -> VT:
        """``t.data_ptr()``: a :class:`DataPtrVariable` (equality traced, arithmetic breaks)."""
        return DataPtrVariable(self)

    method_const_data_ptr = method_data_ptr

    def method_register_hook(self, tx: Tx, hook: VT) -> VT:
        """``t.register_hook(fn)`` on an input: recorded, installed after the graph
        runs (so it fires in backward as in eager); a graph break on tensors made
        in the graph."""
        return self._register_hook(tx, "register_hook", hook)

    def method_register_post_accumulate_grad_hook(self, tx: Tx, hook: VT) -> VT:
        """``t.register_post_accumulate_grad_hook(fn)`` on an input leaf: as ``register_hook``."""
        return self._register_hook(tx, "register_post_accumulate_grad_hook", hook)

    # ---- helpers ------------------------------------------------------------------------------------
    def _register_hook(self, tx: Tx, method: str, hook: VT) -> VT:
        if self.source is None:
            unimplemented(
                gb_type="hook on intermediate tensor",
                context=f"{self.node.name}.{method}(...) on a tensor computed in the graph",
                explanation="The tensor exists only inside the compiled graph, whose backward may not run this "
                "tensor's autograd node, so the hook could not fire exactly as in eager.",
                hints=("Register the hook on an input, or outside the compiled function.",),
            )
        leaf_only = method == "register_post_accumulate_grad_hook"
        if not self.example.requires_grad or (leaf_only and not self._is_leaf(tx)):
            unimplemented(
                gb_type="user error",
                context=f"{method} on {self.source.name()}, which does not require grad or is not a leaf",
                explanation="The traced code raises RuntimeError; it runs natively so the error is the eager one.",
                hints=("Register hooks on tensors that require grad (post-accumulate hooks: on leaves).",),
            )
        handle = RemovableHandleVariable(self, method, hook)
        tx.output.side_effects.record_action(handle)
        return handle

    def _real(self, tx: Tx) -> torch.Tensor:
        """The real tensor of a graph input."""
        return tx.output.input_for(self.node).value

    def _sourced(self, tx: Tx, name: str, source_kind: type, read: Callable[[torch.Tensor], Any]) -> VT:
        """Metadata the tensor guard does not cover: the input's real value,
        guarded through ``source_kind(source, name)``; the example's otherwise."""
        if self.source is None:
            return ConstantVariable(read(self.example))
        return tx.wrap(read(self._real(tx)), source_kind(self.source, name))

    def _storage_fact(self, tx: Tx, name: str) -> VT:
        """``t.is_shared()``/``t.is_pinned()``: asked of the input owning the
        storage (guarded), False for storages made in the graph."""
        owners = tx.output.inputs_sharing_storage(self.example)
        if not owners:
            return ConstantVariable(False)
        return tx.wrap(getattr(owners[0].value, name)(), CallMethodSource(owners[0].source, name))

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
            return graph_call(tx, "call_method", name, [self, *args], kwargs)
        if isinstance(result, SYMBOLIC_TYPES):  # e.g. numel() of a dynamic tensor
            return graph_call(tx, "call_method", name, [self, *args], kwargs)
        return tx.wrap_const(result)

    def _fake_check(self, tx: Tx, name: str, args: list[VT], kwargs: dict[str, VT]) -> None:
        """Run the out-of-place ``name`` on the examples, so that arguments eager
        rejects break the graph before a decomposition is traced."""
        tx.output.run_fake("call_method", name, (self.example, *[a.as_example() for a in args]),
                           {k: v.as_example() for k, v in kwargs.items()})

    def _capture_scalars(self, tx: Tx, name: str) -> VT:
        """``item()``/``tolist()``/``int(t)``/``float(t)`` as data-dependent
        scalars in the graph (``config.capture_scalar_outputs``)."""
        if name in ("item", "tolist"):
            return graph_call(tx, "call_method", name, [self], {})
        item = graph_call(tx, "call_method", "item", [self], {})
        return tx.call_builtin(int if name in ("__int__", "__index__") else float, [item])

    def _dim(self, dim: VT) -> int:
        """A dim argument as a non-negative int; eager's IndexError runs natively."""
        d = dim.as_python_constant()
        ndim = self.example.dim()
        if type(d) is not int or not -ndim <= d < ndim:
            unimplemented(
                gb_type="user error",
                context=f"dim {d!r} of a {ndim}-d tensor",
                explanation="The traced code raises IndexError or TypeError; it runs natively so the error is "
                "the eager one.",
                hints=("Pass a dim within range.",),
            )
        return d % ndim

    def _sizes(self, tx: Tx) -> SizeVariable:
        """``t.shape``: constants for static dims, SymNodeVariables for symbolic ones."""
        return SizeVariable([self._size(tx, i) for i in range(self.example.dim())])

    def _size(self, tx: Tx, dim: int) -> VT:
        size = self.example.size(dim)
        if isinstance(size, torch.SymInt):
            node, example = tx.output.sym_size(self.node, self.example, dim)
            return SymNodeVariable(node, example)
        return ConstantVariable(int(size))

    def __repr__(self) -> str:
        return f"TensorVariable({self.node.name}, {tuple(self.example.shape)}, {self.example.dtype})"


def attribute_route(name: str) -> str:
    """How ``t.<name>`` is answered: ``"static"``, ``"sourced"`` (tables of
    :mod:`~bytegraph.variables.tensor_surface`), ``"handler"`` (an ``attr_``
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
    :mod:`~bytegraph.variables.tensor_surface`), ``"handler"`` (a ``method_``
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


# ---- storages, data pointers, hook handles -----------------------------------------------------


class UntypedStorageVariable(VariableTracker):
    """``t.untyped_storage()``: the bytes behind ``t``.

    ``size()``/``nbytes()`` are answered: through the input that owns the
    storage (read at call time, guarded; symbolic once it changes), or from the
    example for storages made in the graph. ``resize_(n)`` is a graph op
    (``inductor.resize_storage_bytes_``). ``data_ptr()`` is a
    :class:`DataPtrVariable`. Other storage methods break.
    """

    def __init__(self, tensor: TensorVariable):
        super().__init__()
        self.tensor = tensor

    def python_type(self) -> type:
        return torch.UntypedStorage

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.reconstruct(self.tensor)
        codegen.load_method("untyped_storage")
        codegen.call(0)

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name == "device":
            return ConstantVariable(self.tensor.example.device)
        return super().var_getattr(tx, name)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name in ("size", "nbytes", "__len__") and not args and not kwargs:
            return self._nbytes(tx)
        if name == "element_size" and not args and not kwargs:
            return ConstantVariable(1)
        if name == "data_ptr" and not args and not kwargs:
            return DataPtrVariable(self.tensor, of_storage=True)
        if name == "resize_" and len(args) == 1 and not kwargs:
            graph_call(tx, "call_function", torch.ops.inductor.resize_storage_bytes_, [self.tensor, args[0]], {})
            return self
        unimplemented(
            gb_type="unsupported storage method",
            context=f"UntypedStorage.{name}()",
            explanation="Only size(), nbytes(), element_size(), data_ptr() and resize_(n) of a tensor's storage "
            "are traced.",
            hints=("Call it outside the compiled function.",),
        )

    def _nbytes(self, tx: Tx) -> VT:
        fake = self.tensor.example.untyped_storage().nbytes()
        for owner in tx.output.inputs_sharing_storage(self.tensor.example):
            real = owner.value.untyped_storage().nbytes()
            if isinstance(fake, torch.SymInt) or fake == real:  # not resized by the trace so far
                storage = CallMethodSource(owner.source, "untyped_storage")
                return tx.wrap(real, CallMethodSource(storage, "nbytes"))
        if isinstance(fake, torch.SymInt):
            unimplemented(
                gb_type="unsupported storage method",
                context="symbolic storage size of a tensor computed in the graph",
                explanation="The byte size of this storage depends on symbolic sizes bytegraph cannot express.",
                hints=("Read the storage size outside the compiled function.",),
            )
        return ConstantVariable(int(fake))

    def __repr__(self) -> str:
        return f"UntypedStorageVariable({self.tensor.node.name})"


class DataPtrVariable(VariableTracker):
    """``t.data_ptr()`` or ``t.untyped_storage().data_ptr()``: a memory address,
    an int known only when the code runs.

    ``==``/``!=`` between two of them are decided at trace time from which
    storage each tensor uses and where in it (the inputs involved are guarded to
    keep sharing, or not sharing, storage, and their storage offsets); any
    other use (arithmetic, hashing, comparing with an int) is a graph break,
    after which the rest of the function is compiled again.
    """

    def __init__(self, tensor: TensorVariable, of_storage: bool = False):
        super().__init__()
        self.tensor = tensor
        self.of_storage = of_storage

    def python_type(self) -> type:
        return int

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.reconstruct(self.tensor)
        if self.of_storage:
            codegen.load_method("untyped_storage")
            codegen.call(0)
        codegen.load_method("data_ptr")
        codegen.call(0)

    def call_operator(self, tx: Tx, fn: Any, args: Sequence[VT]) -> VT:
        """``fn(*args)`` for a builtin or ``operator`` function with a data pointer among ``args``."""
        if fn in (operator.eq, operator.ne) and len(args) == 2 and all(isinstance(a, DataPtrVariable) for a in args):
            same = args[0]._same_address(tx, args[1])
            return ConstantVariable(same if fn is operator.eq else not same)
        unimplemented(
            gb_type="data pointer arithmetic",
            context=f"{getattr(fn, '__name__', fn)}() on a data pointer",
            explanation="A data pointer is a memory address known only when the code runs; only == and != "
            "between data pointers are traced.",
            hints=("Compare data pointers with each other, or move the arithmetic out of the compiled function.",),
        )

    def _same_address(self, tx: Tx, other: DataPtrVariable) -> bool:
        a, b = self.tensor.example, other.tensor.example
        if self.tensor is other.tensor and self.of_storage == other.of_storage:
            return True
        if not (_nonempty_storage(a) and _nonempty_storage(b)):
            unimplemented(
                gb_type="data pointer arithmetic",
                context="data pointers of an empty storage compared",
                explanation="An empty storage may have a null data pointer, equal to any other empty storage's.",
                hints=("Compare data pointers of non-empty tensors.",),
            )
        owners_a = tx.output.inputs_sharing_storage(a)
        owners_b = tx.output.inputs_sharing_storage(b)
        if storage_id(a) == storage_id(b):
            # one storage: the inputs owning it must keep sharing it, at the same offsets
            for owner in owners_a[1:]:
                tx.output.guards.add(SameStorage(owners_a[0].source, owner.source, True))
            _pin_storage_offsets(tx, owners_a)
            byte_a = 0 if self.of_storage else a.storage_offset() * a.element_size()
            byte_b = 0 if other.of_storage else b.storage_offset() * b.element_size()
            return concrete(bool, byte_a == byte_b, "whether two views of one storage start at the same byte")
        if owners_a and owners_b:
            for oa in owners_a:
                for ob in owners_b:
                    tx.output.guards.add(SameStorage(oa.source, ob.source, False))
            return False
        if owners_a or owners_b:
            return False  # an input's memory is not reused while the input is alive
        unimplemented(
            gb_type="data pointer arithmetic",
            context="data pointers of two storages made in the graph compared",
            explanation="Memory freed in eager may be reused by the next allocation, so whether these addresses "
            "are equal depends on when each tensor dies.",
            hints=("Compare data pointers outside the compiled function.",),
        )

    def __repr__(self) -> str:
        return f"DataPtrVariable({self.tensor.node.name}{'.untyped_storage()' if self.of_storage else ''})"


class RemovableHandleVariable(VariableTracker):
    """The handle ``t.register_hook(fn)`` returns, for an input ``t``.

    The registration is a side effect: rebuilding this VT in the generated code
    performs it (a mutable VT is built once per generated code), after the
    graph ran. ``handle.remove()`` in the trace is replayed after the
    registration, so a handle that escapes is a removed one, as in eager.
    """

    mutable = True

    def __init__(self, tensor: TensorVariable, method: str, hook: VT):
        super().__init__()
        self.tensor = tensor
        self.method = method
        self.hook = hook
        self.removed = False

    def python_type(self) -> type:
        return torch.utils.hooks.RemovableHandle

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.reconstruct(self.tensor)
        codegen.load_method(self.method)
        codegen.reconstruct(self.hook)
        codegen.call(1)

    def replay(self, codegen: PyCodegen) -> None:
        """Side-effect replay: register the hook (unless already done), then remove it if the trace did."""
        codegen.reconstruct(self)
        if self.removed:
            codegen.load_method("remove")
            codegen.call(0)
        codegen.emit("POP_TOP")

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name == "remove" and not args and not kwargs:
            self.removed = True
            return ConstantVariable(None)
        return super().call_method(tx, name, args, kwargs)

    def __repr__(self) -> str:
        return f"RemovableHandleVariable({self.tensor.node.name}.{self.method})"


def _tensor_inputs(tx: Tx) -> list[GraphInput]:
    """Graph inputs that are tensors with a version counter (not inference tensors)."""
    return [inp for inp in tx.output.inputs if isinstance(inp.example, torch.Tensor) and not inp.example.is_inference()]


def _shares_version_counter(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether FakeTensors ``a`` and ``b`` share one version counter (views and
    ``detach()`` share their base's; ``.data`` gets its own): bump ``a``'s, see
    whether ``b``'s moved, and restore it."""
    before_a, before_b = a._version, b._version
    torch.autograd.graph.increment_version(a)
    shared = b._version != before_b
    torch._C._autograd._unsafe_set_version_counter((a,), (before_a,))
    return shared


def _pin_storage_offsets(tx: Tx, owners: Sequence[GraphInput]) -> None:
    """Guard the storage offsets of input tensors (their views' offsets and
    addresses derive from them; the tensor guard does not check them)."""
    for owner in owners:
        if not isinstance(owner.example.storage_offset(), torch.SymInt):
            source = CallMethodSource(owner.source, "storage_offset")
            tx.output.guards.add(ConstantMatch(source, int(owner.value.storage_offset())))


def _basic_index(item: VT) -> bool:
    """An int, symbolic int or slice in an index."""
    if isinstance(item, (SymNodeVariable, SliceVariable)):
        return item.python_type() in (int, slice)
    return item.is_python_constant() and type(item.as_python_constant()) in (int, slice)


def _nonempty_storage(example: torch.Tensor) -> bool:
    return concrete(bool, example.untyped_storage().nbytes() > 0, "whether a storage is empty")


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


def branch_on_data(what: str) -> NoReturn:
    """``bool()`` of a value whose truth depends on tensor data: a graph break."""
    unimplemented(
        gb_type="data-dependent branching",
        context=f"bool() of {what}",
        explanation="The branch taken depends on tensor data, which is unknown while tracing.",
        hints=(HINT_DYNAMIC_CONTROL_FLOW,),
    )


def unpack_rows(example: torch.Tensor, kind: str, row: Callable[[int], VT]) -> list[VT]:
    """``row(0), row(1), ...`` along dim 0 of ``example`` (iterating a tensor or
    array); a 0-d value raises TypeError in eager, so it breaks."""
    if example.dim() == 0:
        unimplemented(
            gb_type="user error",
            context=f"iteration over a 0-d {kind}",
            explanation="The traced code raises TypeError; it runs natively so the error is the eager one.",
            hints=("Index a 0-d value with .item(), or keep it whole.",),
        )
    return [row(i) for i in range(example.size(0))]


def graph_call(tx: Tx, kind: str, target: Any, args: Sequence[VT], kwargs: dict[str, VT],
               check: Callable[[Any], None] | None = None) -> VT:
    """Add ``target(*args, **kwargs)`` to the graph and wrap its result.

    Args:
        kind: ``"call_function"`` (target is a callable) or ``"call_method"``
            (target is a method name, ``args[0]`` the tensor).
        args/kwargs: VTs convertible to graph arguments (tensors, constants,
            containers of them).
        check: called with the FakeTensor result before the node is added; it
            raises a graph break to reject the result.

    Returns:
        A VT for the result; an operation returning one of its tensor arguments
        (in-place ops, ``contiguous()`` of a contiguous tensor...) returns that
        argument's VT, so identity is preserved.

    Raises:
        Unsupported: when an argument cannot be a graph argument, or when
            running the operation on FakeTensors fails (data-dependent output,
            an error eager would raise...).
    """
    node, example = graph_node(tx, kind, target, args, kwargs, check)
    operands = {id(v.example): v for v in _tensor_operands([*args, *kwargs.values()])}
    if isinstance(example, torch.Tensor) and id(example) in operands:
        return operands[id(example)]
    result = wrap_fx_value(tx, node, example)
    if isinstance(result, TupleVariable) and operands:  # out=(values, indices) returns those tensors
        items = [operands.get(id(i.example), i) if isinstance(i, TensorVariable) else i for i in result.items]
        result = NamedTupleVariable(items, result.tuple_cls) if isinstance(result, NamedTupleVariable) else (
            result.with_items(items))
    return result


def _tensor_operands(values: Sequence[VT]) -> list[TensorVariable]:
    """The tensors among an operation's arguments, and inside tuple/list arguments (``out=(a, b)``)."""
    found = []
    for value in values:
        if isinstance(value, TensorVariable):
            found.append(value)
        elif isinstance(value, (TupleVariable, ListVariable)):
            found.extend(_tensor_operands(value.items))
    return found


def graph_node(tx: Tx, kind: str, target: Any, args: Sequence[VT], kwargs: dict[str, VT],
               check: Callable[[Any], None] | None = None) -> tuple[torch.fx.Node, Any]:
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
    if check is not None:
        check(example)
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

    rebuilt_once = False

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
        return concrete(kind, self.example, f"the value of {self.node.name} ({self.example})")

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


def concrete(kind: type, value: Any, what: str) -> Any:
    """``kind(value)`` for a possibly symbolic scalar: specialises it (the ShapeEnv
    records a guard), or breaks the graph when it depends on tensor data."""
    try:
        return kind(value)
    except GuardOnDataDependentSymNode:
        unimplemented(
            gb_type="data-dependent branching",
            context=f"{what} needed at trace time",
            explanation="The value depends on tensor data, which is unknown while tracing.",
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
        branch_on_data(f"an ndarray ({self.node.name})")

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return self.example.dim() > 0

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        return unpack_rows(self.example, "array", lambda i: tx.numpy_operator(
            operator.getitem, [self, ConstantVariable(i)]))

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
