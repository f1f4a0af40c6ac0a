"""``torch.autocast(...)``: autocast state switched at trace time and in the graph."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import torch
import torch.amp.autocast_mode as autocast_mode

from bytegraph.breaks import unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.torch_state.base import StateContextVariable, enter_state, exit_state

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

class AutocastVariable(StateContextVariable):
    """``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``.

    Entering runs ``torch.amp._enter_autocast`` now and as a graph node;
    exiting runs ``torch.amp._exit_autocast`` on what entering returned.
    """

    reenter_on_reconstruct = True

    def __init__(self, cls: type, values: tuple, source=None):
        super().__init__(source)
        self.cls = cls
        self.values = values  # device_type, dtype, enabled, cache_enabled
        self.entered: list[tuple[Any, Any]] = []  # (real mode object, its graph node)

    @staticmethod
    def create(tx: Tx, cls: type, args: Sequence[VT], kwargs: dict[str, VT]) -> "AutocastVariable":
        names = ("device_type", "dtype", "enabled", "cache_enabled")
        bound = dict(zip(names, (a.as_python_constant() for a in args)))
        bound.update((k, v.as_python_constant()) for k, v in kwargs.items())
        unknown = set(bound) - set(names)
        if unknown or "device_type" not in bound:
            unimplemented(
                gb_type="unsupported context manager",
                context=f"torch.autocast with arguments {sorted(bound)}",
                explanation="torch.autocast takes device_type, dtype, enabled and cache_enabled.",
                hints=("Pass those arguments only.",),
            )
        device = bound["device_type"]
        dtype = bound.get("dtype") or torch.get_autocast_dtype(device)
        values = (device, dtype, bound.get("enabled", True), bound.get("cache_enabled"))
        return AutocastVariable(cls, values)

    def python_type(self) -> type:
        return self.cls

    def enter(self, tx: Tx) -> VT:
        enter_state(tx, self.entered, autocast_mode._enter_autocast, autocast_mode._exit_autocast, self.values)
        return ConstantVariable(None)

    def exit(self, tx: Tx, args: Sequence[VT] = ()) -> VT:
        exit_state(tx, self, self.entered, autocast_mode._exit_autocast)
        return ConstantVariable(None)

    def close_for_graph_break(self, tx: Tx) -> None:
        while self.entered:
            self.exit(tx)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        device, dtype, enabled, cache_enabled = self.values
        codegen.load_callable(self.cls)
        for value in (device, dtype, enabled, cache_enabled):
            codegen.load_const(value)
        codegen.call(4)

    def __repr__(self) -> str:
        return f"AutocastVariable{self.values}"


def autocast_state() -> tuple:
    """The autocast state a trace specialises on (CPU: enabled, dtype)."""
    return (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"))
