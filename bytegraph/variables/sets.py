"""Python sets and frozensets of constants.

A set is mutable: in-trace mutations update the VT; when the VT has a source
(the object existed before the call), the mutation is recorded as a side
effect and replayed on the real object after the graph runs
(``dicts.apply_by_clear_update``).
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable, Sequence

from bytegraph.variables.base import VariableTracker, bad_method, call_method_handler, handler_name
from bytegraph.variables.constant import ConstantVariable, raise_traced_from
from bytegraph.variables.dicts import DictViewVariable, apply_by_clear_update
from bytegraph.variables.iteration import SetIteratorVariable

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker

#: operators between two sets: a new set or a bool, computed on the constant items.
SET_OPERATORS = frozenset({
    operator.or_, operator.and_, operator.sub, operator.xor, operator.le, operator.lt, operator.ge,
    operator.gt, operator.eq, operator.ne,
})

#: in-place set operators -> the set method that performs them.
SET_INPLACE = {
    operator.ior: "update", operator.iand: "intersection_update",
    operator.isub: "difference_update", operator.ixor: "symmetric_difference_update",
}


def _set_operand(vt: VT) -> Any:
    """A set operator's operand: a set's items, a keys view of constant keys (as
    its view), else None."""
    if isinstance(vt, SetVariable):
        return vt.values
    if isinstance(vt, DictViewVariable) and vt.is_python_constant():
        return vt.as_python_constant()
    return None


def _set_result(result: Any) -> VT:
    """A set operator's result: a new set (never an operand) or a bool."""
    if isinstance(result, (set, frozenset)):
        return SetVariable([ConstantVariable(v) for v in result], type(result))
    return ConstantVariable(result)


def _on_items(name: str) -> Callable[..., VT]:
    """A ``method_<name>`` handler of :class:`SetVariable`: the set method
    ``name`` run on the constant items; a result set is a new VT."""

    def handler(self: SetVariable, tx: Tx, *args: VT) -> VT:
        method = getattr(self.values, name, None)
        if method is None:  # a frozenset's mutators
            return bad_method(self, name)
        try:
            result = method(*[a.as_python_constant() for a in args])
        except (KeyError, TypeError) as e:
            raise_traced_from(e)
        if isinstance(result, (set, frozenset)):
            return SetVariable([ConstantVariable(v) for v in result], type(result))
        return tx.wrap_const(result)

    handler.__name__ = handler_name("method_", name)
    return handler


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

    def binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``a | b``, ``a <= b``...: a new set (never an operand) or a bool; a keys
        view of constant keys takes part as the set of its keys."""
        operand = _set_operand(other)
        if op not in SET_OPERATORS or operand is None:
            return NotImplemented
        return _set_result(op(self.values, operand))

    def reflected_binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``d.keys() | s``...: the keys view's set operators, on its constant keys."""
        if op not in SET_OPERATORS or not isinstance(other, DictViewVariable) or _set_operand(other) is None:
            return NotImplemented
        return _set_result(op(other.as_python_constant(), self.values))

    def inplace_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``s |= t``...: the set method (``update``...); a non-set operand or a
        frozenset (rebound, not mutated) is not modelled here (eager may raise)."""
        if self.set_cls is not set or op not in SET_INPLACE:
            return None
        if not isinstance(other, SetVariable):
            return None  # eager raises TypeError: a graph break runs it natively
        self.call_method(tx, SET_INPLACE[op], [other], {})
        return self

    MUTATORS = frozenset({"add", "discard", "remove", "update", "clear", "pop", "difference_update",
                          "intersection_update", "symmetric_difference_update"})

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        result = call_method_handler(self, tx, name, args, kwargs)
        return result if result is not None else bad_method(self, name)

    def method_dunder_iter(self, tx: Tx, /) -> VT:
        return SetIteratorVariable(self)

    # mutators (MUTATORS marks the side effect) and readers, run on the constant items
    method_add = _on_items("add")
    method_discard = _on_items("discard")
    method_remove = _on_items("remove")
    method_update = _on_items("update")
    method_clear = _on_items("clear")
    method_pop = _on_items("pop")
    method_difference_update = _on_items("difference_update")
    method_intersection_update = _on_items("intersection_update")
    method_symmetric_difference_update = _on_items("symmetric_difference_update")
    method_dunder_contains = _on_items("__contains__")
    method_dunder_len = _on_items("__len__")
    method_union = _on_items("union")
    method_intersection = _on_items("intersection")
    method_difference = _on_items("difference")
    method_symmetric_difference = _on_items("symmetric_difference")
    method_issubset = _on_items("issubset")
    method_issuperset = _on_items("issuperset")
    method_isdisjoint = _on_items("isdisjoint")
    method_copy = _on_items("copy")

    def method_dunder_init(self, tx: Tx, iterable: VT | None = None, /) -> VT:
        """``set.__init__`` refills the set; frozenset's (object's) leaves it as it is."""
        if self.set_cls is set:
            items = [i.as_python_constant() for i in tx.unpack(iterable)] if iterable is not None else []
            tx.output.side_effects.mutate(self)
            self.values.clear()
            self.values.update(items)
        return ConstantVariable(None)

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
