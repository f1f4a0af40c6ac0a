"""Python sets and frozensets of constants.

A set is mutable: in-trace mutations update the VT; when the VT has a source
(the object existed before the call), the mutation is recorded as a side
effect and replayed on the real object after the graph runs
(``dicts.apply_by_clear_update``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from bytegraph.variables.base import VariableTracker, bad_method
from bytegraph.variables.constant import ConstantVariable, raise_traced_from
from bytegraph.variables.dicts import apply_by_clear_update
from bytegraph.variables.iteration import ListIteratorVariable, SetIteratorVariable

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker


class SetVariable(VariableTracker):
    """A set or frozenset of constants (iteration order then matches eager)."""

    mutable = True

    def __init__(self, items: Sequence[VT], set_cls: type = set, source=None):
        super().__init__(source)
        values = [i.as_python_constant() for i in items]
        self.values = set_cls(values)
        self.set_cls = set_cls

    def python_type(self) -> type:
        return self.set_cls

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.set_cls(self.values)

    def truthy(self, tx: Tx) -> bool:
        return bool(self.values)

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return True

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        return [ConstantVariable(v) for v in self.values]

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name == "__iter__" and not args and not kwargs:
            return SetIteratorVariable(self)
        if name == "__init__" and len(args) <= 1 and not kwargs:
            # set.__init__ refills the set; frozenset's (object's) leaves it as it is
            if self.set_cls is set:
                items = [i.as_python_constant() for i in tx.unpack(args[0])] if args else []
                tx.output.side_effects.mutate(self)
                self.values.clear()
                self.values.update(items)
            return ConstantVariable(None)
        consts = [a.as_python_constant() for a in args]
        if name in ("add", "discard", "remove", "update", "clear", "pop", "difference_update", "intersection_update",
                    "symmetric_difference_update"):
            tx.output.side_effects.mutate(self)
            try:
                result = getattr(self.values, name)(*consts)
            except (KeyError, TypeError) as e:
                raise_traced_from(e)
            return tx.wrap_const(result)
        if name in ("__contains__", "__len__", "union", "intersection", "difference", "issubset",
                    "issuperset", "symmetric_difference", "copy", "isdisjoint", "__iter__"):
            if name == "__iter__":
                return ListIteratorVariable(self.unpack_var_sequence(tx))
            result = getattr(self.values, name)(*consts)
            if isinstance(result, (set, frozenset)):
                return SetVariable([ConstantVariable(v) for v in result], type(result))
            return ConstantVariable(result)
        return bad_method(self, name)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.set_cls is frozenset:
            codegen.load_const(frozenset(self.values))
        elif self.source is not None:
            codegen.load_source(self.source)
        else:
            self.reconstruct_contents(codegen)

    def reconstruct_contents(self, codegen: PyCodegen) -> None:
        for value in self.values:
            codegen.load_const(value)
        codegen.emit("BUILD_SET", len(self.values))

    def apply_contents(self, codegen: PyCodegen, temp: str) -> None:
        apply_by_clear_update(codegen, self.source, temp)
