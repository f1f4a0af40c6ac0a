"""Grad mode: ``torch.no_grad()``, ``torch.enable_grad()``,
``torch.set_grad_enabled(m)``, as context managers and as decorators."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import torch

from bytegraph.breaks import unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.torch_state.base import StateContextVariable, decorated_plainly

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

GRAD_MODE_CLASSES = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled)


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
            # unscoped until a ``with`` enters it (a plain call is never undone)
            switch_grad_mode_unscoped(tx, mode)
            return var
        # no_grad() starts with prev=False; enable_grad() has none until entered
        var = GradModeVariable(issubclass(cls, torch.enable_grad), cls, False if issubclass(cls, torch.no_grad) else None)
        orig_func = _orig_func(cls, args, kwargs)
        # ``cls(f)`` is ``cls()(f)`` (torch's ``_NoParamDecoratorContextManager.__new__``): ``f`` decorated
        return var if orig_func is None else var.call_function(tx, [orig_func], {})

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
            decorated_plainly(args[0], self)
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


def _orig_func(cls: type, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
    """The function ``no_grad(f)``/``enable_grad(f)`` decorates, None for ``cls()`` and ``cls(None)``
    (a break where eager raises: ``no_grad.__init__`` takes no argument, or an unknown keyword)."""
    if not args and not kwargs:
        return None
    given = (args[0] if len(args) == 1 and not kwargs else kwargs.get("orig_func") if len(kwargs) == 1 and not args
             else None)
    passes_init = cls.__init__ is object.__init__  # no_grad's own __init__ refuses orig_func=None
    if given is None or (given.is_python_constant() and given.as_python_constant() is None and not passes_init):
        unimplemented(
            gb_type="unsupported context manager",
            context=f"{cls.__name__} with arguments {len(args)} positional, {sorted(kwargs)} keyword",
            explanation="A grad-mode context manager takes one argument, orig_func (the function it decorates); "
                        "eager raises TypeError for these, so the call runs natively.",
            hints=("Call it with no argument, or with the function to decorate.",),
        )
    if given.is_python_constant() and given.as_python_constant() is None:
        return None
    return given


def switch_grad_mode_unscoped(tx: Tx, mode: bool) -> None:
    """A grad-mode switch no ``with`` undoes (``torch.set_grad_enabled(m)`` or
    ``torch._C._set_grad_enabled(m)`` called plainly): now and in the graph."""
    set_grad_mode(tx, mode)
    tx.output.unscoped_grad_mode_changes += 1


def set_grad_mode(tx: Tx, mode: bool) -> None:
    """Switch grad mode now and in the graph (no-op when unchanged)."""
    if torch.is_grad_enabled() == mode:
        return
    torch._C._set_grad_enabled(mode)
    tx.output.create_node("call_function", torch._C._set_grad_enabled, (mode,), {}, None)
