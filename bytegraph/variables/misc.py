"""Small VariableTracker kinds that have no other home."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bytegraph.variables.base import VariableTracker

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
        return tx.wrap_const(getattr(self.value, name))

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
        else:
            codegen.load_const(self.value)

    def __repr__(self) -> str:
        return f"OpaqueConstantVariable({type(self.value).__name__})"
