"""``torch.autocast(...)``: autocast state switched at trace time and in the graph."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch
import torch.amp.autocast_mode as autocast_mode

from bytegraph.breaks import unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables.deferred_calls import DeferredCallVariable
from bytegraph.variables.constant import ConstantVariable, raise_traced_from
from bytegraph.variables.torch_state.base import ContextWrappedFunction, SwitchedStateVariable, decorated_plainly

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
        """``cls(*args, **kwargs)`` made for real now (its constructor only validates and stores
        its settings: an error is eager's, a subclass such as ``torch.cpu.amp.autocast`` fills in
        its device), then read as :func:`existing_state_context` reads one made before the call."""
        if not all(a.is_python_constant() for a in (*args, *kwargs.values())):
            unimplemented(
                gb_type="unsupported context manager",
                context=f"{cls.__name__} with arguments {list(args)} {sorted(kwargs)}",
                explanation="torch.autocast's settings must be constants in the trace.",
                hints=("Pass constant device_type, dtype, enabled and cache_enabled.",),
            )
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            try:
                real = cls(*(a.as_python_constant() for a in args),
                           **{k: v.as_python_constant() for k, v in kwargs.items()})
            except Exception as e:  # noqa: BLE001 - eager's own error (an unknown device, a bad dtype), in the trace
                raise_traced_from(e)
        for w in warned:  # the deprecation of torch.cpu.amp.autocast, a disabled dtype: replayed after the graph
            DeferredCallVariable(warnings.warn).call_function(
                tx, [ConstantVariable(str(w.message)), ConstantVariable(w.category)], {})
        return AutocastVariable(cls, settings_of(real))

    def python_type(self) -> type:
        return self.cls

    def enter_args(self) -> tuple:
        return self.values

    def constructor(self) -> tuple[Callable[..., Any], tuple]:
        # a subclass's own constructor takes other arguments (``torch.cpu.amp.autocast(enabled, dtype, ...)``)
        return (self.cls if self.cls.__init__ is torch.autocast.__init__ else torch.autocast), self.values

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        # used as a decorator made in the trace: ``@torch.autocast("cpu")``: each call enters it
        if len(args) == 1 and not kwargs:
            decorated_plainly(args[0], self)
            return ContextWrappedFunction(lambda: AutocastVariable(self.cls, self.values), args[0])
        return super().call_function(tx, args, kwargs)

    def __repr__(self) -> str:
        return f"AutocastVariable{self.values}"


def settings_of(ctx: torch.autocast) -> tuple:
    """What entering ``ctx`` passes to ``torch.amp._enter_autocast``: device, dtype, enabled, cache_enabled."""
    return ctx.device, ctx.fast_dtype, ctx._enabled, ctx._cache_enabled


def autocast_state() -> tuple:
    """The autocast state a trace specialises on (CPU: enabled, dtype)."""
    return (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"))
