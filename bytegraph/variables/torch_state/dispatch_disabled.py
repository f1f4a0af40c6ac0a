"""``torch._C.DisableTorchFunctionSubclass()`` / ``DisableTorchFunction()``: while
entered, tensor-subclass dispatch is off in the trace (a counter on the
OutputGraph that :mod:`~bytegraph.variables.tensors.subclass_dispatch` reads)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence


from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class SubclassDispatchDisabledVariable(VariableTracker):
    """``torch._C.DisableTorchFunctionSubclass()`` (or ``DisableTorchFunction()``):
    while entered, operations on tensor subclasses run as on plain tensors,
    without their ``__torch_function__``. Trace-time state only (a counter on
    the OutputGraph); the graph holds plain tensor operations either way."""

    def __init__(self, cls: type):
        super().__init__()
        self.cls = cls

    def python_type(self) -> type:
        return self.cls

    def enter(self, tx: Tx) -> VT:
        tx.output.subclass_dispatch_disabled += 1
        return ConstantVariable(None)

    def exit(self, tx: Tx, args: Sequence[VT] = ()) -> VT:
        tx.output.subclass_dispatch_disabled -= 1
        return ConstantVariable(None)

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_callable(self.cls)
        codegen.call(0)

    def __repr__(self) -> str:
        return f"SubclassDispatchDisabledVariable({self.cls.__name__})"
