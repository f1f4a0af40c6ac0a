"""What a traced tensor hands out: its storage, a data pointer, a hook handle.

:class:`UntypedStorageVariable` (``t.untyped_storage()``),
:class:`DataPtrVariable` (``t.data_ptr()``) and
:class:`RemovableHandleVariable` (``t.register_hook(fn)``) each keep the
:class:`~bytegraph.variables.tensors.tensor.TensorVariable` they came from.
"""
from __future__ import annotations

import operator
import types
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Sequence

import torch
import torch.utils.hooks

from bytegraph.breaks import unimplemented
from bytegraph.graph import tensor_hooks
from bytegraph.graph.writes import storage_id
from bytegraph.guards.guards import ConstantMatch
from bytegraph.guards.source import CallMethodSource
from bytegraph.guards.tensor_guards import SameStorage
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables import functions
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.tensors import graph_calls, symbolic
from bytegraph.variables.tx import wrap
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.graph.output_graph import GraphInput
    from bytegraph.variables.tensors.tensor import TensorVariable
    from bytegraph.variables.tx import Tx

VT = VariableTracker


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

    def attr_device(self, tx: Tx) -> VT:
        return ConstantVariable(self.tensor.example.device)

    def method_element_size(self, tx: Tx, /) -> VT:
        return ConstantVariable(1)

    def method_data_ptr(self, tx: Tx, /) -> VT:
        return DataPtrVariable(self.tensor, of_storage=True)

    def method_resize_(self, tx: Tx, size: VT, /) -> VT:
        resize = torch.ops.inductor.resize_storage_bytes_
        graph_calls.graph_call(tx, "call_function", resize, [self.tensor, size], {})
        return self

    def unhandled_method(self, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> NoReturn:
        unimplemented(
            gb_type="unsupported storage method",
            context=f"UntypedStorage.{name}()",
            explanation="Only size(), nbytes(), element_size(), data_ptr() and resize_(n) of a tensor's storage "
            "are traced.",
            hints=("Call it outside the compiled function.",),
        )

    def method_nbytes(self, tx: Tx, /) -> VT:
        """``size()``, ``nbytes()`` and ``len()`` of the storage: its size in bytes."""
        fake = self.tensor.example.untyped_storage().nbytes()
        for owner in tx.output.inputs_sharing_storage(self.tensor.example):
            real = owner.value.untyped_storage().nbytes()
            if isinstance(fake, torch.SymInt) or fake == owner.fake_nbytes:  # not resized by the trace so far
                storage = CallMethodSource(owner.source, "untyped_storage")
                return wrap(tx, real, CallMethodSource(storage, "nbytes"))
        if isinstance(fake, torch.SymInt):
            unimplemented(
                gb_type="unsupported storage method",
                context="symbolic storage size of a tensor computed in the graph",
                explanation="The byte size of this storage depends on symbolic sizes bytegraph cannot express.",
                hints=("Read the storage size outside the compiled function.",),
            )
        return ConstantVariable(int(fake))

    method_size = method_dunder_len = method_nbytes

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

    #: any builtin or operator applied to a data pointer is decided here
    override_rank = 1

    def operator_override(self, tx: Tx, fn: Any, args: Sequence[VT]) -> VT:
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
            pin_storage_offsets(tx, owners_a)
            byte_a = 0 if self.of_storage else a.storage_offset() * a.element_size()
            byte_b = 0 if other.of_storage else b.storage_offset() * b.element_size()
            return symbolic.concrete(bool, byte_a == byte_b, "whether two views of one storage start at the same byte")
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

    def method_remove(self, tx: Tx, /) -> VT:
        self.removed = True
        return ConstantVariable(None)

    def __repr__(self) -> str:
        return f"RemovableHandleVariable({self.tensor.node.name}.{self.method})"


class GraphHookHandleVariable(VariableTracker):
    """The handle ``y.register_hook(fn)`` returns for a tensor made in the graph
    (the hook is in the graph: :mod:`bytegraph.graph.tensor_hooks`).
    ``handle.remove()`` in the trace removes it for every run of the graph;
    a handle that outlives the graph cannot be rebuilt (a graph break)."""

    def __init__(self, key: int):
        super().__init__()
        self.key = key

    def python_type(self) -> type:
        return torch.utils.hooks.RemovableHandle

    def method_remove(self, tx: Tx, /) -> VT:
        tensor_hooks.remove(self.key)
        return ConstantVariable(None)

    def __repr__(self) -> str:
        return f"GraphHookHandleVariable({self.key})"


def hook_callable(hook: VT) -> Callable | None:
    """The function a hook VT stands for, when the graph can call it for every
    run: a function read from a source (guarded), or one made in the frame
    (``lambda g: g * 2``, a nested ``def``) without free variables and with
    constant defaults. None otherwise."""
    if isinstance(hook, functions.UserFunctionVariable) and isinstance(hook.fn, types.FunctionType):
        return hook.fn
    if isinstance(hook, functions.NestedUserFunctionVariable) and not hook.closure and not hook.slots and all(
        d is None or d.is_python_constant() for d in (hook.defaults, hook.kwdefaults)
    ):
        fn = types.FunctionType(hook.code, hook.f_globals, hook.code.co_name,
                                hook.defaults.as_python_constant() if hook.defaults is not None else None)
        fn.__kwdefaults__ = hook.kwdefaults.as_python_constant() if hook.kwdefaults is not None else None
        return fn
    return None


def pin_storage_offsets(tx: Tx, owners: Sequence[GraphInput]) -> None:
    """Guard the storage offsets of input tensors (their views' offsets and
    addresses derive from them; the tensor guard does not check them)."""
    for owner in owners:
        if not isinstance(owner.example.storage_offset(), torch.SymInt):
            source = CallMethodSource(owner.source, "storage_offset")
            tx.output.guards.add(ConstantMatch(source, int(owner.value.storage_offset())))


def _nonempty_storage(example: torch.Tensor) -> bool:
    return symbolic.concrete(bool, example.untyped_storage().nbytes() > 0, "whether a storage is empty")
