"""``torch.autocast(...)``: autocast state switched at trace time and in the graph."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch
import torch.amp.autocast_mode as autocast_mode

from bytegraph.breaks import unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.torch_state.base import SwitchedStateVariable

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

class AutocastVariable(SwitchedStateVariable):
    """``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``.

    Entering runs ``torch.amp._enter_autocast`` now and as a graph node;
    exiting runs ``torch.amp._exit_autocast`` on what entering returned.
    """

    enter_fn = staticmethod(autocast_mode._enter_autocast)
    exit_fn = staticmethod(autocast_mode._exit_autocast)

    def __init__(self, cls: type, values: tuple, source=None):
        super().__init__(source)
        self.cls = cls
        self.values = values  # device_type, dtype, enabled, cache_enabled

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

    def enter_args(self) -> tuple:
        return self.values

    def constructor(self) -> tuple[Callable[..., Any], tuple]:
        return self.cls, self.values

    def __repr__(self) -> str:
        return f"AutocastVariable{self.values}"


def autocast_state() -> tuple:
    """The autocast state a trace specialises on (CPU: enabled, dtype)."""
    return (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"))
