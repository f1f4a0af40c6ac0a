"""torch's global-state context managers: grad mode, autocast, inference mode.

Each switches the state at trace time (so FakeTensor results carry the right
``requires_grad``/dtype) and inside the graph (so the compiled graph switches
too), and restores it on exit. After a graph break inside one, the generated
code re-creates and re-enters it (the state is global, and the graph boundary
resets it to the frame's entry state), under the grad mode the original saved
to restore on exit.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NoReturn, Sequence

import torch
import torch.amp.autocast_mode as autocast_mode
import torch.autograd.grad_mode as grad_mode

from bytegraph.breaks import unimplemented
from bytegraph.guards.guards import TypeMatch
from bytegraph.guards.source import AttrSource
from bytegraph.variables.base import BoundMethodVariable, VariableTracker
from bytegraph.variables.constant import ConstantVariable

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker

GRAD_MODE_CLASSES = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled)
STATE_CONTEXTS = (*GRAD_MODE_CLASSES, torch.autocast, torch.inference_mode)


def create_state_context(tx: Tx, cls: type, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """The VT for ``cls(*args, **kwargs)``, ``cls`` one of :data:`STATE_CONTEXTS`."""
    if issubclass(cls, torch.autocast):
        return AutocastVariable.create(tx, cls, args, kwargs)
    if issubclass(cls, torch.inference_mode):
        mode = (args[0] if args else kwargs.get("mode", ConstantVariable(True))).as_python_constant()
        return InferenceModeVariable(bool(mode))
    return GradModeVariable.create(tx, cls, args, kwargs)


def existing_state_context(tx: Tx, value: Any, source: Any) -> VT | None:
    """An ``autocast`` or ``inference_mode`` object made before the call (the
    instance an ``@autocast(...)`` decorator closes over) as the VT that
    creating it in the trace would give, reconstructed as the object itself;
    the settings it is entered with are guarded. None for grad-mode objects,
    whose Python ``__enter__``/``__exit__`` are inlined instead."""
    def read(name: str) -> Any:
        return tx.wrap(getattr(value, name), AttrSource(source, name)).as_python_constant()

    if isinstance(value, torch.autocast):
        tx.output.guards.add(TypeMatch(source, type(value)))
        settings = (read("device"), read("fast_dtype"), read("_enabled"), read("_cache_enabled"))
        return AutocastVariable(type(value), settings, source)
    if isinstance(value, torch.inference_mode):
        tx.output.guards.add(TypeMatch(source, type(value)))
        return InferenceModeVariable(bool(read("mode")), source)
    return None


def _enter_state(tx: Tx, entered: list, enter_fn: Callable, exit_fn: Callable, args: tuple) -> None:
    """``enter_fn(*args)`` now (recording how to undo it if tracing stops
    early) and as a graph node; ``entered`` gets ``(real result, node)``."""
    real = enter_fn(*args)
    tx.output.open_states.append(lambda: exit_fn(real))
    entered.append((real, tx.output.create_node("call_function", enter_fn, args, {}, None)))


def _exit_state(tx: Tx, ctx: VT, entered: list, exit_fn: Callable) -> None:
    """Undo the innermost entry of ``ctx`` now and in the graph."""
    if not entered:
        _not_entered_here(ctx)
    real, node = entered.pop()
    tx.output.open_states.pop()()
    tx.output.create_node("call_function", exit_fn, (node,), {}, None)


def _not_entered_here(ctx: VT) -> NoReturn:
    unimplemented(
        gb_type="unsupported context manager",
        context=f"leaving {ctx} entered before the trace",
        explanation="The context was entered outside the traced code (before a graph break); its exit "
                    "restores state only the real object holds.",
        hints=("Expected after a graph break inside such a with block; the exit runs natively.",),
    )


class StateContextVariable(VariableTracker):
    """Base of the torch state contexts: ``ctx.__enter__()``/``ctx.__exit__(...)``
    called explicitly (or on a bound method passed in) act as ``with`` does.

    Each subclass defines ``enter(tx)`` and ``exit(tx, args)``: what entering
    and leaving do to the state, at trace time and in the graph.
    """

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name in ("__enter__", "__exit__"):
            return BoundMethodVariable(self, name)
        return super().var_getattr(tx, name)

    def grad_mode_to_reenter(self) -> bool | None:
        """The grad mode to re-make and re-enter this context under after a
        graph break: the one the real object saved to restore on exit (None:
        its exit does not restore grad mode)."""
        return None

    def close_for_graph_break(self, tx: Tx) -> None:
        """Leave every entry made in this trace, in the graph and now, so the
        graph ends in the state it started in (the generated code then enters
        the context again before running the rest)."""

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name == "__enter__" and not args and not kwargs:
            return self.enter(tx)
        if name == "__exit__" and not kwargs:
            return self.exit(tx, args)
        return super().call_method(tx, name, args, kwargs)


class GradModeVariable(StateContextVariable):
    """``torch.no_grad()``, ``torch.enable_grad()`` or ``torch.set_grad_enabled(m)``.

    Follows torch's classes: ``prev`` is the mode ``__exit__`` restores, saved
    when ``set_grad_enabled(m)`` is made (which switches to ``m`` at once) or
    when the others are entered. Switching happens at trace time (so
    FakeTensor results carry the right ``requires_grad``) and as
    ``torch._C._set_grad_enabled`` nodes (so the compiled graph switches too).
    """

    reenter_on_reconstruct = True  # grad mode is global state: re-entered after a graph break

    def __init__(self, target_mode: bool, cls: type, prev: bool | None):
        super().__init__()
        self.target_mode = target_mode
        self.cls = cls
        self.prev = prev
        self.scoped = False  # a set_grad_enabled(m) used by ``with`` or as a decorator

    @staticmethod
    def create(tx: Tx, cls: type, args: Sequence[VT], kwargs: dict[str, VT]) -> "GradModeVariable":
        if issubclass(cls, torch.set_grad_enabled):
            mode = bool((args[0] if args else kwargs["mode"]).as_python_constant())
            var = GradModeVariable(mode, cls, prev=torch.is_grad_enabled())
            set_grad_mode(tx, mode)
            # unscoped until a ``with`` enters it (a plain call is never undone)
            tx.output.unscoped_grad_mode_changes += 1
            return var
        if args or kwargs:
            unimplemented(
                gb_type="unsupported context manager",
                context=f"{cls.__name__} with arguments",
                explanation="This grad-mode context manager takes no arguments here.",
            )
        # no_grad() starts with prev=False; enable_grad() has none until entered
        return GradModeVariable(issubclass(cls, torch.enable_grad), cls, False if issubclass(cls, torch.no_grad) else None)

    @property
    def applied_on_create(self) -> bool:
        return issubclass(self.cls, torch.set_grad_enabled)

    def python_type(self) -> type:
        return self.cls

    def _scope(self, tx: Tx) -> None:
        if self.applied_on_create and not self.scoped:
            tx.output.unscoped_grad_mode_changes -= 1
        self.scoped = True

    def enter(self, tx: Tx) -> VT:
        self._scope(tx)
        if not self.applied_on_create:
            self.prev = torch.is_grad_enabled()
        set_grad_mode(tx, self.target_mode)
        return ConstantVariable(None)

    def exit(self, tx: Tx, args: Sequence[VT] = ()) -> VT:
        if self.prev is None:
            unimplemented(
                gb_type="unsupported context manager",
                context=f"{self} exited without being entered",
                explanation="The real object has no saved mode to restore; eager raises AttributeError.",
            )
        set_grad_mode(tx, self.prev)
        return ConstantVariable(None)

    def grad_mode_to_reenter(self) -> bool | None:
        return self.prev

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_callable(self.cls)
        if self.applied_on_create:
            codegen.load_const(self.target_mode)
            codegen.call(1)
        else:
            codegen.call(0)

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        # used as a decorator: @torch.no_grad()
        if len(args) == 1 and not kwargs:
            if self.applied_on_create:  # set_grad_enabled.__call__ undoes what making it did
                self._scope(tx)
                set_grad_mode(tx, self.prev)
            return GradModeWrappedFunction(self.target_mode, args[0])
        return super().call_function(tx, args, kwargs)

    def __repr__(self) -> str:
        return f"GradModeVariable({self.cls.__name__}, mode={self.target_mode})"


class GradModeWrappedFunction(VariableTracker):
    """A function decorated inside the trace by a grad-mode context manager:
    each call runs in ``mode`` and then restores the mode it found (torch runs
    it under a fresh clone of the context)."""

    def __init__(self, mode: bool, fn: VT):
        super().__init__()
        self.mode = mode
        self.fn = fn

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        prev = torch.is_grad_enabled()
        set_grad_mode(tx, self.mode)
        try:
            return self.fn.call_function(tx, args, kwargs)
        finally:
            set_grad_mode(tx, prev)


def set_grad_mode(tx: Tx, mode: bool) -> None:
    """Switch grad mode now and in the graph (no-op when unchanged)."""
    if torch.is_grad_enabled() == mode:
        return
    torch._C._set_grad_enabled(mode)
    tx.output.create_node("call_function", torch._C._set_grad_enabled, (mode,), {}, None)


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
        _enter_state(tx, self.entered, autocast_mode._enter_autocast, autocast_mode._exit_autocast, self.values)
        return ConstantVariable(None)

    def exit(self, tx: Tx, args: Sequence[VT] = ()) -> VT:
        _exit_state(tx, self, self.entered, autocast_mode._exit_autocast)
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


class InferenceModeVariable(StateContextVariable):
    """``torch.inference_mode(mode)``: ``torch.autograd.grad_mode._enter_inference_mode``
    now and in the graph; exit on what entering returned."""

    reenter_on_reconstruct = True

    def __init__(self, mode: bool, source=None):
        super().__init__(source)
        self.mode = mode
        self.entered: list[tuple[Any, Any]] = []
        self.prev_grad_mode: bool | None = None  # restored by the real guard's exit

    def python_type(self) -> type:
        return torch.inference_mode

    def grad_mode_to_reenter(self) -> bool | None:
        return self.prev_grad_mode

    def enter(self, tx: Tx) -> VT:
        self.prev_grad_mode = torch.is_grad_enabled()
        _enter_state(tx, self.entered, grad_mode._enter_inference_mode, grad_mode._exit_inference_mode, (self.mode,))
        return ConstantVariable(None)

    def exit(self, tx: Tx, args: Sequence[VT] = ()) -> VT:
        _exit_state(tx, self, self.entered, grad_mode._exit_inference_mode)
        return ConstantVariable(None)

    def close_for_graph_break(self, tx: Tx) -> None:
        while self.entered:
            self.exit(tx)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(torch.inference_mode)
        codegen.load_const(self.mode)
        codegen.call(1)


def autocast_state() -> tuple:
    """The autocast state a trace specialises on (CPU: enabled, dtype)."""
    return (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"))
