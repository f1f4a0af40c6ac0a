"""Dict views: ``d.keys()``, ``d.values()`` and ``d.items()`` of a dict made
in the trace (or materialized from an input), live over its items.

Keys and items views are set-like, as CPython's: ``|``, ``&``, ``-``, ``^``
with any iterable make a new set (CPython's ``dictviews_or``... on the view as
a set), comparisons with a set or another set-like view compare sizes and
containment (``dictview_richcompare``); ``isdisjoint`` tests containment."""
from __future__ import annotations

import collections
import operator
from typing import TYPE_CHECKING, Any

from bytegraph.breaks import unimplemented
from bytegraph.variables.base import VariableTracker, bad_method
from bytegraph.variables.constant import ConstantVariable, unmodelled_method
from bytegraph.variables.containers import reprs
from bytegraph.variables.containers.dict_entries import DictIteratorVariable
from bytegraph.variables.containers.iterators import ListIteratorVariable
from bytegraph.variables.containers.sequences import ListVariable, TupleVariable
from bytegraph.variables.operators import call_operator
from bytegraph.variables.tx import wrap_const
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
        return type(self._empty_view())

    def _builtin_class(self) -> type:
        """The dict's builtin class whose views these are (an OrderedDict's: ``odict_keys``...)."""
        return collections.OrderedDict if issubclass(self.dict_vt.python_type(), collections.OrderedDict) else dict

    def _empty_view(self) -> Any:
        return getattr(self._builtin_class()(), self.kind)()

    def is_python_constant(self) -> bool:
        """A keys view of constant keys is a constant (a view of a dict with those keys,
        in that order, answers ``==``, ``&``, ``|``, ``in``... the same)."""
        return self.kind == "keys" and all(k.is_python_constant() for k, _ in self.dict_vt.items.values())

    def as_python_constant(self) -> Any:
        if not self.is_python_constant():
            return super().as_python_constant()
        keys = [k.as_python_constant() for k, _ in self.dict_vt.items.values()]
        return self._builtin_class().fromkeys(keys).keys()

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
        """``k in d.keys()`` and ``(k, v) in d.items()`` look ``k`` up; a values
        view has no ``__contains__``: it is iterated."""
        return NotImplemented if self.kind == "values" else self.method_dunder_contains(tx, item)

    def method_dunder_len(self, tx: Tx, /) -> VT:
        return ConstantVariable(len(self.dict_vt.items))

    def method_dunder_contains(self, tx: Tx, item: VT, /) -> VT:
        """A keys view's is a key lookup. An items view's (``dictitems_contains``):
        False for anything but a tuple of two; else its key looked up (an
        unhashable key: eager's TypeError) and the value found compared with
        the tuple's second item, identity first."""
        if self.kind == "keys":
            return self.dict_vt.call_method(tx, "__contains__", [item], {})
        if self.kind == "values":
            return bad_method(self, "__contains__")
        pair = _tuple_items(tx, item)
        if pair is None or len(pair) != 2:
            return ConstantVariable(False)
        found = self.dict_vt.lookup(tx, pair[0])
        return ConstantVariable(found is not None and (found.same_object(tx, pair[1]) or call_operator(
            tx, operator.eq, [found, pair[1]]).truthy(tx)))

    def method_dunder_iter(self, tx: Tx, /) -> VT:
        return DictIteratorVariable(self.dict_vt, self.kind)

    def reversed_iter(self, tx: Tx) -> VT | None:
        return ListIteratorVariable(list(reversed(self.unpack_var_sequence(tx))),
                                    cls=type(reversed(self._empty_view())))

    def repr_text(self, tx: Tx) -> VT | None:
        """``dict_items([(1, 'a')])``: the view's name around the repr of a list of
        its items (``...`` for a view met again inside itself)."""
        name = self.python_type().__name__
        return reprs.container_repr(tx, self, "...", lambda: [reprs.item_repr(tx, i) for i in self.unpack_var_sequence(tx)],
                                    lambda text: f"{name}([{text}])")

    # ---- set-like views (keys, items) -----------------------------------------------------------
    def _set_like(self) -> bool:
        return self.kind != "values"

    def _as_set(self, tx: Tx, iterable: VT) -> VT:
        return wrap_const(tx, set).call_function(tx, [iterable], {})

    def _contained(self, tx: Tx, items: VT, container: VT) -> bool:
        return all(call_operator(tx, operator.contains, [container, item]).truthy(tx)
                   for item in items.unpack_var_sequence(tx))

    def binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        return self._operator(tx, op, self, other)

    def reflected_binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        return self._operator(tx, op, other, self)

    def _operator(self, tx: Tx, op: Any, left: VT, right: VT) -> Any:
        """``left op right`` with this view one of them: a set operator builds
        the set of the view (of ``left`` for ``-``) and updates it with the other
        operand; a comparison needs both set-like."""
        if not self._set_like():
            return NotImplemented
        if op in _SET_UPDATES:
            first, second = (left, right) if op is operator.sub or left is self else (right, left)
            result = self._as_set(tx, first)
            result.call_method(tx, _SET_UPDATES[op], [second], {})
            return result
        other = right if left is self else left
        if op in (operator.eq, operator.ne) and other.python_type() in _DECLINE_VIEWS:
            return ConstantVariable(op is operator.ne)  # both decline: identity, of objects of two types
        if op not in _COMPARISONS or not all(_is_set_like(v) for v in (left, right)):
            return NotImplemented
        sizes = [len(v.unpack_var_sequence(tx)) for v in (left, right)]
        if op in (operator.eq, operator.ne):
            equal = sizes[0] == sizes[1] and self._contained(tx, left, right)
            return ConstantVariable(equal if op is operator.eq else not equal)
        if op in (operator.lt, operator.le):
            return ConstantVariable(op(*sizes) and self._contained(tx, left, right))
        return ConstantVariable(op(*sizes) and self._contained(tx, right, left))

    def method_isdisjoint(self, tx: Tx, other: VT, /) -> VT | None:
        if not self._set_like():
            return None
        return ConstantVariable(not any(call_operator(tx, operator.contains, [self, item]).truthy(tx)
                                        for item in other.unpack_var_sequence(tx)))

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.reconstruct(self.dict_vt)
        codegen.emit("LOAD_METHOD", self.kind)
        codegen.call(0)


#: a set operator with a view -> the set method that applies the other operand
_SET_UPDATES = {operator.or_: "update", operator.and_: "intersection_update", operator.sub: "difference_update",
                operator.xor: "symmetric_difference_update"}
_COMPARISONS = (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge)
#: builtin types whose ``==`` declines a view (as a set-like view's declines them)
_DECLINE_VIEWS = (list, tuple, dict, str, bytes, int, float, complex, bool, type(None), range)


def _tuple_items(tx: Tx, vt: VT) -> list[VT] | None:
    """The items of a tuple (of a tuple subclass's instance: its tuple part, whatever
    its ``__iter__``), None for an object that is not a tuple."""
    if not issubclass(vt.python_type(), tuple):
        return None
    if isinstance(vt, TupleVariable) or vt.is_python_constant():
        return vt.unpack_var_sequence(tx)
    if hasattr(vt, "base_storage"):
        return vt.base_storage(tx).unpack_var_sequence(tx)
    unimplemented(gb_type="unsupported dict view lookup", context=f"{vt} in an items view",
                  explanation="The tuple's items are not known to the trace.",
                  hints=("Look the key up in the dict itself: d.get(k) == v.",))


def _is_set_like(vt: VT) -> bool:
    """A set, a frozenset or a keys/items view, an OrderedDict's too (what a view compares with)."""
    return vt.python_type() in (set, frozenset) or issubclass(vt.python_type(), (type({}.keys()), type({}.items())))

