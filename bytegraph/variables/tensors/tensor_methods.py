"""The handlers of a traced tensor's attributes and methods.

:class:`TensorMethods` holds the ``attr_<name>`` and ``method_<name>`` handlers
(``method_dunder_getitem`` for ``__getitem__``) that
:class:`~bytegraph.variables.tensors.tensor.TensorVariable` answers names with
when :func:`~bytegraph.variables.tensors.tensor.attribute_route` or
:func:`~bytegraph.variables.tensors.tensor.method_route` says ``"handler"``:
sizes and strides, ``grad`` and ``_version``, indexing, the legacy
constructors, storages and data pointers, hooks. Each returns a
VariableTracker, or None to put the call in the graph.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import torch

from bytegraph.breaks import unimplemented, user_error
from bytegraph.graph import tensor_hooks
from bytegraph.guards.source import AttrSource
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.containers.sequences import SizeVariable, SliceVariable, TupleVariable
from bytegraph.variables.operators import call_operator
from bytegraph.variables.tensors import graph_calls, handles, symbolic
from bytegraph.variables.tensors.surface import LEGACY_TENSOR_TYPES, METHOD_HINTS
from bytegraph.variables.tx import wrap, wrap_attr, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.output_graph import GraphInput
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class TensorMethods:
    """The ``attr_``/``method_`` handlers of :class:`~bytegraph.variables.tensors.tensor.TensorVariable`
    (mixed into it; ``self`` is the tensor VT: ``node``, ``example``, ``source``)."""

    # ---- attributes ------------------------------------------------------------------------
    def attr_shape(self, tx: Tx) -> VT:
        """``t.shape``: a torch.Size of constants (SymInts for dynamic dims)."""
        return self._sizes(tx)

    def attr_nbytes(self, tx: Tx) -> VT:
        """``t.nbytes``: ``numel() * itemsize``, a constant (symbolic for dynamic shapes)."""
        numel = self.call_method(tx, "numel", [], {})
        return call_operator(tx, operator.mul, [numel, ConstantVariable(self.example.itemsize)])

    def attr_is_leaf(self, tx: Tx) -> VT:
        """``t.is_leaf``: a constant, read from an input that requires grad (guarded)."""
        return ConstantVariable(self._is_leaf(tx))

    def attr_dunder_class(self, tx: Tx) -> VT:
        """``t.__class__``: the tensor's Python class (guarded for inputs)."""
        return wrap_const(tx, self.class_type)

    def attr_data(self, tx: Tx) -> VT:
        """``t.data``: a graph op making a detached alias with its own version counter."""
        return graph_calls.graph_call(tx, "call_function", torch._C._autograd._get_data_attr, [self], {})

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
        return wrap_attr(tx, self, self._real(tx).grad, "grad")

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
            user_error(
                "RuntimeError",
                context=f"{self.node.name}._version of an inference tensor",
                hint="Inference tensors have no version counter.",
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
        at_call = wrap(tx, owner.value._version, AttrSource(owner.source, "_version"))
        return call_operator(tx, operator.add, [at_call, ConstantVariable(self.example._version - owner.fake_version)])

    # ---- methods ---------------------------------------------------------------------------
    def method_size(self, tx: Tx, dim: VT | None = None) -> VT:
        """``t.size()``/``t.size(d)``: constants (SymInts for dynamic dims)."""
        if dim is None:
            return self._sizes(tx)
        return self._size(tx, self._dim(dim))

    def method_stride(self, tx: Tx, dim: VT | None = None) -> VT:
        """``t.stride()``/``t.stride(d)``: constants (in the graph when symbolic)."""
        strides = self.example.stride()
        if any(isinstance(v, torch.SymInt) for v in strides):
            return graph_calls.graph_call(tx, "call_method", "stride", [self] if dim is None else [self, dim], {})
        if dim is None:
            return TupleVariable([ConstantVariable(int(v)) for v in strides])
        return ConstantVariable(int(strides[self._dim(dim)]))

    def method_dunder_len(self, tx: Tx) -> VT:
        """``len(t)``: the size of dim 0; TypeError (natively) for 0-d tensors."""
        if self.example.dim() == 0:
            user_error("TypeError", context="len() of a 0-d tensor", hint="Do not call len() on a 0-d tensor.")
        return self._size(tx, 0)

    def method_storage_offset(self, tx: Tx) -> VT:
        """``t.storage_offset()``: a constant, guarded through the inputs owning the
        storage (in the graph when symbolic)."""
        offset = self.example.storage_offset()
        if isinstance(offset, torch.SymInt):
            return graph_calls.graph_call(tx, "call_method", "storage_offset", [self], {})
        handles.pin_storage_offsets(tx, tx.output.inputs_sharing_storage(self.example))
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
        return graph_calls.graph_call(tx, "call_method", "to", [self],
                                      {"device": device, "dtype": ConstantVariable(target_dtype)})

    def method_dunder_getitem(self, tx: Tx, index: VT) -> VT:
        """``t[index]`` (ints, slices, None, Ellipsis, tensors, lists): a graph op;
        symbolic ints among ints and slices become ``torch.select`` (plain
        indexing would specialise them). A boolean-mask index has a
        data-dependent shape and breaks."""
        items = list(index.items) if type(index) is TupleVariable else [index]
        positions = [i for i, item in enumerate(items) if isinstance(item, symbolic.SymNodeVariable)]
        if not positions or not all(_basic_index(item) for item in items):
            return graph_calls.graph_call(tx, "call_function", operator.getitem, [self, index], {})
        # symbolic positions keep their dim (a full slice), then are selected, last dim first
        full = ConstantVariable(slice(None))
        kept = [full if i in positions else item for i, item in enumerate(items)]
        result = graph_calls.graph_call(tx, "call_function", operator.getitem, [self, TupleVariable(kept)], {})
        for i in reversed(positions):
            dim = sum(1 for item in items[:i] if not item.is_python_constant() or item.python_type() is slice)
            select_args = [result, ConstantVariable(dim), items[i]]
            result = graph_calls.graph_call(tx, "call_function", torch.select, select_args, {})
        return result

    def method_dunder_setitem(self, tx: Tx, index: VT, value: VT) -> VT:
        """``t[index] = value``: a graph op mutating ``t``."""
        return graph_calls.graph_call(tx, "call_function", operator.setitem, [self, index, value], {})

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
        elif all(isinstance(a, symbolic.SymNodeVariable) or (a.is_python_constant() and type(a.as_python_constant()) is int)
                 for a in args):
            sizes = list(args) if args else [ConstantVariable(0)]
        else:
            unimplemented(
                gb_type="unsupported tensor method",
                context="Tensor.new() with data",
                explanation="The legacy constructor Tensor.new is traced only with sizes.",
                hints=("Use t.new_tensor(data) or t.new_empty(sizes).",),
            )
        return graph_calls.graph_call(tx, "call_method", "new_empty", [self, TupleVariable(sizes)], kwargs)

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
        return handles.UntypedStorageVariable(self)

    def method_data_ptr(self, tx: Tx) -> VT:
        """``t.data_ptr()``: a :class:`DataPtrVariable` (equality traced, arithmetic breaks)."""
        return handles.DataPtrVariable(self)

    method_const_data_ptr = method_data_ptr

    def method_register_hook(self, tx: Tx, hook: VT) -> VT:
        """``t.register_hook(fn)`` on an input: recorded, installed after the graph
        runs (so it fires in backward as in eager); on a tensor made in the
        graph: in the graph (:meth:`_hook_in_graph`)."""
        return self._register_hook(tx, "register_hook", hook)

    def method_register_post_accumulate_grad_hook(self, tx: Tx, hook: VT) -> VT:
        """``t.register_post_accumulate_grad_hook(fn)`` on an input leaf: as ``register_hook``."""
        return self._register_hook(tx, "register_post_accumulate_grad_hook", hook)

    # ---- hooks -----------------------------------------------------------------------------
    def _register_hook(self, tx: Tx, method: str, hook: VT) -> VT:
        if self.source is None and method == "register_hook":
            return self._hook_in_graph(tx, hook)
        if self.source is None:
            unimplemented(
                gb_type="user error",
                context=f"{self.node.name}.{method}(...) on a tensor computed in the graph",
                explanation="The traced code raises RuntimeError (post-accumulate-grad hooks are for leaves); "
                "it runs natively so the error is the eager one.",
                hints=("Register post-accumulate-grad hooks on leaf tensors.",),
            )
        leaf_only = method == "register_post_accumulate_grad_hook"
        if not self.example.requires_grad or (leaf_only and not self._is_leaf(tx)):
            user_error(
                "RuntimeError",
                context=f"{method} on {self.source.name()}, which does not require grad or is not a leaf",
                hint="Register hooks on tensors that require grad (post-accumulate hooks: on leaves).",
            )
        handle = handles.RemovableHandleVariable(self, method, hook)
        tx.output.side_effects.record_action(handle)
        return handle

    def _hook_in_graph(self, tx: Tx, hook: VT) -> VT:
        """``y.register_hook(fn)`` on a tensor made in the graph: every use of
        ``y``, earlier ones included, is rerouted through
        ``bytegraph::hooked(y, key)``, whose backward runs ``fn`` on the real
        gradient (see :mod:`bytegraph.graph.tensor_hooks`), so ``fn`` sees the
        gradient eager gives it, with every backend."""
        fn = handles.hook_callable(hook)
        if not self.example.requires_grad:
            user_error("RuntimeError", context=f"register_hook on {self.node.name}, which does not require grad",
                       hint="Register hooks on tensors that require grad.")
        if fn is None or self.example._base is not None or tensor_hooks.has_aliases(tx.output, self.node, self.example):
            unimplemented(
                gb_type="hook on intermediate tensor",
                context=f"{self.node.name}.register_hook({hook}) on a tensor computed in the graph",
                explanation="A hook in the graph needs a function known at trace time without free variables (a "
                "global function, or a lambda/def without closure), on a tensor that is not a view and has no "
                "views yet.",
                hints=("Register the hook on an input, or outside the compiled function.",),
            )
        key = tensor_hooks.register(fn)
        self.node, self.example = tensor_hooks.reroute_through_hook(tx.output, self.node, key)
        return handles.GraphHookHandleVariable(key)


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


def _basic_index(item: VT) -> bool:
    """An int, symbolic int or slice in an index."""
    if isinstance(item, (symbolic.SymNodeVariable, SliceVariable)):
        return item.python_type() in (int, slice)
    return item.is_python_constant() and type(item.as_python_constant()) in (int, slice)
