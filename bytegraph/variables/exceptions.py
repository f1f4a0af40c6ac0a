"""Exceptions raised inside the traced program.

When the traced program raises (``raise``, or an operation bytegraph models
raising, like a missing dict key), the translator raises :class:`TracedException`
carrying an :class:`ExceptionVariable`. Each frame looks for a handler in its
exception table (``try``/``except``/``finally``, ``with`` cleanups) and jumps to
it; an exception nobody in the trace catches becomes a graph break at the
compiled frame, so the native run raises it exactly as eager does.
"""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Sequence

from bytegraph.variables.base import VariableTracker

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker


class ExceptionVariable(VariableTracker):
    """An exception instance created in the trace: its class and arguments."""

    def __init__(self, exc_type: type, args: Sequence[VT]):
        super().__init__()
        self.exc_type = exc_type
        self.args = list(args)

    def python_type(self) -> type:
        return self.exc_type

    def truthy(self, tx: Tx) -> bool:
        return True

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name == "args":
            return tx.make_tuple(self.args)
        if name == "__class__":
            return tx.wrap_const(self.exc_type)
        if name in ("__cause__", "__context__"):
            return tx.wrap_const(None)
        return super().var_getattr(tx, name)

    def as_text(self, fn: type) -> str | None:
        """``str(exc)`` or ``repr(exc)`` (``fn``) when the arguments are constants
        and the class's ``__str__``/``__repr__`` is builtin, else None."""
        method = getattr(self.exc_type, f"__{fn.__name__}__")
        if isinstance(method, types.FunctionType) or not all(a.is_python_constant() for a in self.args):
            return None
        return fn(self.exc_type(*[a.as_python_constant() for a in self.args]))

    def describe(self) -> str:
        shown = ", ".join(repr(a.as_python_constant()) if a.is_python_constant() else "..." for a in self.args)
        return f"{self.exc_type.__name__}({shown})"

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_callable(self.exc_type)
        for arg in self.args:
            codegen.reconstruct(arg)
        codegen.call(len(self.args))

    def __repr__(self) -> str:
        return f"ExceptionVariable({self.describe()})"


class TracedException(Exception):
    """The traced program raised ``exc`` (an :class:`ExceptionVariable`)."""

    def __init__(self, exc: ExceptionVariable):
        super().__init__(exc.describe())
        self.exc = exc
        self.user_stack: tuple = ()  # where it was raised, once it leaves the raising frame
