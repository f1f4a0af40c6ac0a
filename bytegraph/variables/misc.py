"""Small VariableTracker kinds that have no other home."""
from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Any, Sequence

from bytegraph.breaks import unimplemented
from bytegraph.guards.source import WeakRefCallSource
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker


class NullVariable(VariableTracker):
    """The NULL that ``PUSH_NULL``/``LOAD_GLOBAL`` put below a callable (3.11 calls)."""

    def python_type(self) -> type:
        return type(None)

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.emit("PUSH_NULL")

    def __repr__(self) -> str:
        return "NULL"


class OpaqueConstantVariable(VariableTracker):
    """A library object used only by identity and for its attributes (e.g. a
    logger, a ``typing`` alias): read, compared and passed around, never traced
    into. Calls on it are graph breaks."""

    def __init__(self, value: Any, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def truthy(self, tx: Tx) -> bool:
        return bool(self.value)

    def var_getattr(self, tx: Tx, name: str) -> VT:
        value = getattr(self.value, name)
        if isinstance(self.value, logging.Logger) and callable(value):
            return DeferredCallVariable(value)
        return tx.wrap_const(value)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
        else:
            codegen.load_const(self.value)

    def __repr__(self) -> str:
        return f"OpaqueConstantVariable({type(self.value).__name__})"


class DeferredCallVariable(VariableTracker):
    """A call whose only effect is outside the program's values (``warnings.warn``,
    a logger method): with constant arguments it is recorded and made after
    the graph runs, instead of breaking the graph."""

    def __init__(self, fn: Any):
        super().__init__()
        self.fn = fn

    def python_type(self) -> type:
        return type(self.fn)

    def truthy(self, tx: Tx) -> bool:
        return True

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if not all(a.is_python_constant() for a in (*args, *kwargs.values())):
            unimplemented(
                gb_type="logging or warning with traced values",
                context=f"{getattr(self.fn, '__qualname__', self.fn)} with non-constant arguments",
                explanation="A warning or log message built from traced values is only known when the graph runs.",
                hints=("Log constants, or move the call out of the compiled function.",),
            )
        tx.output.side_effects.record_call(
            self.fn, tuple(a.as_python_constant() for a in args), {k: v.as_python_constant() for k, v in kwargs.items()}
        )
        return ConstantVariable(None)

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_const(self.fn)


#: callables made after the graph rather than traced (see DeferredCallVariable)
DEFERRED_CALLS = frozenset({warnings.warn})


class WeakRefVariable(VariableTracker):
    """A ``weakref.ref`` read from a source; calling it reads the referent,
    guarded through ``ref()`` (so its death or replacement recompiles)."""

    def __init__(self, ref: Any, source: Any):
        super().__init__(source)
        self.ref = ref

    def python_type(self) -> type:
        return type(self.ref)

    def truthy(self, tx: Tx) -> bool:
        return True

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if args or kwargs:
            return super().call_function(tx, args, kwargs)
        return tx.wrap(self.ref(), WeakRefCallSource(self.source))
