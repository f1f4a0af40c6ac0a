"""Dict views: ``d.keys()``, ``d.values()`` and ``d.items()`` of a dict made
in the trace (or materialized from an input), live over its items."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bytegraph.variables.base import VariableTracker, bad_method
from bytegraph.variables.constant import ConstantVariable, unmodelled_method
from bytegraph.variables.containers.iterators import DictIteratorVariable
from bytegraph.variables.containers.sequences import TupleVariable
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.containers.dicts import DictVariable
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class DictViewVariable(VariableTracker):
    """``d.keys()``, ``d.values()`` or ``d.items()`` of a DictVariable."""

    live_iterator = True
    unhandled_method = unmodelled_method

    def __init__(self, dict_vt: DictVariable, kind: str):
        super().__init__()
        self.dict_vt = dict_vt
        self.kind = kind

    def python_type(self) -> type:
        return type(getattr({}, self.kind)())

    def is_python_constant(self) -> bool:
        """A keys view of constant keys is a constant (a view of a dict with those keys,
        in that order, answers ``==``, ``&``, ``|``, ``in``... the same)."""
        return self.kind == "keys" and all(k.is_python_constant() for k, _ in self.dict_vt.items.values())

    def as_python_constant(self) -> Any:
        if not self.is_python_constant():
            return super().as_python_constant()
        return dict.fromkeys(k.as_python_constant() for k, _ in self.dict_vt.items.values()).keys()

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return True

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        pairs = self.dict_vt.items.values()
        if self.kind == "keys":
            return [k for k, _ in pairs]
        if self.kind == "values":
            return [v for _, v in pairs]
        return [TupleVariable([k, v]) for k, v in pairs]

    def truthy(self, tx: Tx) -> bool:
        return bool(self.dict_vt.items)

    def contains_op(self, tx: Tx, item: VT) -> Any:
        """``k in d.keys()`` is a key lookup; values and items views are iterated."""
        return self.dict_vt.call_method(tx, "__contains__", [item], {}) if self.kind == "keys" else NotImplemented

    def method_dunder_len(self, tx: Tx, /) -> VT:
        return ConstantVariable(len(self.dict_vt.items))

    def method_dunder_contains(self, tx: Tx, key: VT, /) -> VT:
        """A keys view's: a key lookup (values and items views have none modelled)."""
        return self.dict_vt.call_method(tx, "__contains__", [key], {}) if self.kind == "keys" else bad_method(
            self, "__contains__")

    def method_dunder_iter(self, tx: Tx, /) -> VT:
        return DictIteratorVariable(self.dict_vt, self.kind)

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.reconstruct(self.dict_vt)
        codegen.emit("LOAD_METHOD", self.kind)
        codegen.call(0)
