"""Python sequences: tuple, list, torch.Size, slice (deques: :mod:`~bytegraph.variables.containers.deques`).

Items are VariableTrackers, so a list may mix constants, tensors and other
objects. Lists are mutable: in-trace mutations update the VT; when the VT has
a source (the object existed before the call), the mutation is recorded as a
side effect and replayed on the real object after the graph runs. Named
tuples are in :mod:`~bytegraph.variables.containers.named_tuples`.

This module and :mod:`~bytegraph.variables.containers.iterators` use each
other (``iter(a_list)`` is a list iterator, ``list(it)`` a list), so each
imports the other as a module.
"""
from __future__ import annotations

import operator
import types
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from bytegraph.breaks import HINT_REWRITE, unimplemented
from bytegraph.variables import tx as protocol
from bytegraph.variables.base import VariableTracker, bad_method
from bytegraph.variables.constant import (
    ConstantVariable, errors_are_the_programs, raise_traced, raise_traced_from, unmodelled_method,
)
from bytegraph.variables.containers import iterators, reprs, sorting
from bytegraph.variables.exceptions import ExceptionVariable, TracedException
from bytegraph.variables.objects.class_lookup import class_attribute
from bytegraph.variables.operators import ORDERING_SYMBOLS, call_operator
from bytegraph.variables.runtime_values import RuntimeValueVariable
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


def const_int(tx: Tx, vt: VT) -> int:
    """The constant integer an index argument stands for, as
    ``operator.index`` reads it; eager's TypeError for anything else."""
    with errors_are_the_programs():
        return operator.index(index_operand(tx, vt).as_python_constant())


def index_operand(tx: Tx, vt: VT) -> VT:
    """An index, count or slice argument as CPython reads it: a user object's
    ``__index__`` (:func:`~bytegraph.variables.objects.number_stand_ins.as_index`),
    a slice's bounds each; anything else as it is."""
    if isinstance(vt, SliceVariable) and not vt.is_python_constant():
        return SliceVariable(*[protocol.as_index(tx, part) for part in vt.parts])
    return protocol.as_index(tx, vt)


class BaseSequenceVariable(VariableTracker):
    """Common behaviour of tuple-like and list-like VTs."""

    rebuilds_constant = True

    def __init__(self, items: Sequence[VT], source=None):
        super().__init__(source)
        self.items = list(items)

    @reprs.cycle_safe
    def is_python_constant(self) -> bool:
        return all(i.is_python_constant() for i in self.items)

    def repr_text(self, tx: Tx) -> VT | None:
        return reprs.sequence_repr(tx, self)

    def as_python_constant(self) -> Any:
        return self.python_type()([i.as_python_constant() for i in self.items])

    def as_proxy(self) -> Any:
        return self.python_type()([i.as_proxy() for i in self.items])

    def as_example(self) -> Any:
        return self.python_type()([i.as_example() for i in self.items])

    def binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``a + b`` of sequences, ``a * n``, ``a == b`` item by item."""
        if op is operator.add and isinstance(other, BaseSequenceVariable):
            if type(other) is type(self) or self.python_type() is other.python_type() is list:
                return self.with_items(self.items + other.items)
            if issubclass(self.python_type(), tuple) and issubclass(other.python_type(), tuple):
                # torch.Size's __add__/__radd__ keep the Size (tuples have no nb_add to go first)
                kind = SizeVariable if isinstance(self, SizeVariable) or isinstance(other, SizeVariable) else TupleVariable
                return kind(self.items + other.items)
        if op is operator.mul:
            return self.reflected_binary_op(tx, op, other)
        if op in (operator.eq, operator.ne) and isinstance(other, BaseSequenceVariable):
            equal = issubclass(self.python_type(), tuple) == issubclass(other.python_type(), tuple) and len(
                self.items
            ) == len(other.items) and all(  # the same object equals itself unasked (PyObject_RichCompareBool)
                x.same_object(tx, y) or call_operator(tx, operator.eq, [x, y]).truthy(tx)
                for x, y in zip(self.items, other.items)
            )
            return ConstantVariable(equal if op is operator.eq else not equal)
        if op in ORDERING_SYMBOLS and isinstance(other, BaseSequenceVariable) and (
                _ordered_kind(self) is _ordered_kind(other) is not None):
            return self._order(tx, op, other)
        return NotImplemented

    def _order(self, tx: Tx, op: Any, other: VT) -> VT:
        """``self < other`` (``<=``, ``>``, ``>=``) of two lists or two tuples as
        ``list_richcompare`` runs it: the first index whose items are not equal
        (identity first, then ``==``, the lengths read afresh each step, as an
        item's ``__eq__`` may change them), then those items compared with the
        operator; past the end of either, the lengths. Where an ``__eq__``
        changed the items compared last, CPython versions differ: a break."""
        i = 0
        while i < len(self.items) and i < len(other.items):
            mine, theirs = self.items[i], other.items[i]
            if not (mine.same_object(tx, theirs) or call_operator(tx, operator.eq, [mine, theirs]).truthy(tx)):
                break
            i += 1
        if i >= len(self.items) or i >= len(other.items):
            return ConstantVariable(op(len(self.items), len(other.items)))
        if self.items[i] is not mine or other.items[i] is not theirs:
            unimplemented(gb_type="sequence changed during comparison",
                          context=f"{self.python_type().__name__} ordering whose __eq__ changed the items",
                          explanation="Python versions differ on which items such a comparison compares last.",
                          hints=(HINT_REWRITE,))
        return call_operator(tx, op, [mine, theirs])

    def reflected_binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``n * a``: repetition, as ``a * n``."""
        other = index_operand(tx, other) if op is operator.mul else other
        if op is operator.mul and other.is_python_constant():
            return self.with_items(self.items * other.as_python_constant())
        return NotImplemented

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return True

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        return list(self.items)

    def truthy(self, tx: Tx) -> bool:
        return bool(self.items)

    def getitem(self, tx: Tx, index: VT) -> VT:
        index = index_operand(tx, index)
        if not index.is_python_constant():  # a user object without __index__: eager's TypeError, read off a stand-in
            protocol.call_with_stand_ins(tx, operator.getitem, [protocol.wrap_const(tx, self._builtin()()), index], {})
        idx = index.as_python_constant()
        if isinstance(idx, slice):
            with errors_are_the_programs():  # a step of 0: eager's ValueError
                return self.with_items(self.items[idx])
        if not isinstance(idx, int):
            if hasattr(idx, "__index__"):
                idx = operator.index(idx)
            else:
                with errors_are_the_programs():  # eager's TypeError, from an empty instance of the builtin
                    self._builtin()()[idx]
                unimplemented(
                    gb_type="unsupported index",
                    context=f"{self.python_type().__name__} indexed by {type(idx).__name__}",
                    explanation="Sequences can be indexed by constant ints and slices only.",
                )
        try:
            return self.items[idx]
        except IndexError:
            raise_traced(IndexError, f"{self.python_type().__name__} index out of range")

    def _builtin(self) -> type:
        """The builtin type this sequence's type derives from (its C methods' messages name it)."""
        return next(c for c in self.python_type().__mro__ if c.__module__ == "builtins")

    def with_items(self, items: Sequence[VT]) -> VT:
        """A new sequence of the same kind holding ``items`` (no source)."""
        return type(self)(items)

    unhandled_method = unmodelled_method

    def method_dunder_getitem(self, tx: Tx, index: VT, /) -> VT:
        return self.getitem(tx, index)

    def method_dunder_len(self, tx: Tx, /) -> VT:
        return ConstantVariable(len(self.items))

    def method_dunder_contains(self, tx: Tx, item: VT, /) -> VT:
        return call_operator(tx, operator.contains, [self, item])

    def _search(self, tx: Tx, name: str, value: VT, bounds: Sequence[VT]) -> VT:
        """``index``/``count``: folded over constant items (``[1].index(2)``: eager's
        ValueError), or each item compared as CPython does when the value or an item
        is not a constant (a user object with its own ``__eq__``)."""
        kind = tuple if issubclass(self.python_type(), tuple) else list  # (the message names it)
        if len(bounds) <= (2 if name == "index" else 0) and not all(
                v.is_python_constant() for v in (*self.items, value, *bounds)) and all(
                b.is_python_constant() and type(b.as_python_constant()) is int for b in bounds):
            return self._compare_each(tx, kind, name, value, *bounds)
        consts = kind(i.as_python_constant() for i in self.items)
        with errors_are_the_programs():
            return ConstantVariable(getattr(consts, name)(*[a.as_python_constant() for a in (value, *bounds)]))

    def method_index(self, tx: Tx, value: VT, /, *bounds: VT) -> VT:
        return self._search(tx, "index", value, [index_operand(tx, b) for b in bounds])

    def method_count(self, tx: Tx, value: VT, /, *rest: VT) -> VT:
        return self._search(tx, "count", value, rest)

    def method_dunder_iter(self, tx: Tx, /) -> VT:
        owner = self if isinstance(self.items, list) and self.mutable else None
        return iterators.ListIteratorVariable(self.items, owner=owner, cls=iterators.iterator_type(self))

    def _compare_each(self, tx: Tx, kind: type, name: str, value: VT, *bounds: VT) -> VT:
        """``index``/``count`` of a value that is not a constant (a user object with
        its own ``__eq__``): each item compared as CPython does, identity first,
        then ``item == value`` (``Objects/listobject.c``: ``list_index_impl``)."""
        n = len(self.items)
        start, stop = (list(b.as_python_constant() for b in bounds) + [0, n][len(bounds):])[:2]
        start, stop = (max(0, i + n) if i < 0 else min(i, n) for i in (start, stop))
        hits = []
        for i in range(start, stop) if name == "index" else range(n):
            if i >= len(self.items):  # an __eq__ shortened the list: CPython's loop reads its size afresh
                break
            item = self.items[i]
            if item.same_object(tx, value) or call_operator(tx, operator.eq, [item, value]).truthy(tx):
                if name == "index":
                    return ConstantVariable(i)
                hits.append(i)
        if name == "count":
            return ConstantVariable(len(hits))
        if kind is tuple:
            raise_traced(ValueError, "tuple.index(x): x not in tuple")
        text = value.repr_text(tx) if not value.is_python_constant() else ConstantVariable(repr(
            value.as_python_constant()))
        if isinstance(text, RuntimeValueVariable):  # object's repr, known after the graph: so is the message
            raise TracedException(ExceptionVariable(ValueError, [RuntimeValueVariable(value, not_in_list, str)]))
        if text is None or not text.is_python_constant():
            unimplemented(gb_type="unsupported container method", context=f"list.index of {value}, not found",
                          explanation="The ValueError's message holds the value's repr, not known at trace time.",
                          hints=(HINT_REWRITE,))
        raise_traced(ValueError, not_in_list(value.as_python_constant()) if value.is_python_constant() else (
            f"{text.as_python_constant()} is not in list"))

    def reconstruct_items(self, codegen: PyCodegen) -> None:
        for item in self.items:
            codegen.reconstruct(item)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.items!r})"


def _ordered_kind(vt: VT) -> type | None:
    """``list`` or ``tuple`` when ``vt`` orders as one (``list_richcompare``/
    ``tuplerichcompare`` take subclasses of their type only), else None."""
    cls = vt.python_type()
    return next((kind for kind in (list, tuple) if issubclass(cls, kind)), None)


class TupleVariable(BaseSequenceVariable):
    """A tuple. An exact tuple follows CPython's identities: ``t * 1``, ``t + ()``,
    ``() + t`` and ``t[:]`` give back ``t`` itself, and every empty tuple is one
    object (``Objects/tupleobject.c``)."""

    def python_type(self) -> type:
        return tuple

    def _exact(self) -> bool:
        return self.python_type() is tuple

    def binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        if op is operator.add and isinstance(other, TupleVariable) and other._exact() and self._exact():
            if not self.items or not other.items:
                return other if not self.items else self
        return super().binary_op(tx, op, other)

    def reflected_binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        if op is operator.mul and self._exact() and other.is_python_constant() and (
                other.as_python_constant() == 1 and type(other.as_python_constant()) in (int, bool)):
            return self
        return super().reflected_binary_op(tx, op, other)

    def getitem(self, tx: Tx, index: VT) -> VT:
        index = index_operand(tx, index)
        idx = index.as_python_constant() if index.is_python_constant() else None
        if self._exact() and isinstance(idx, slice) and idx.step in (None, 1) and idx.indices(
                len(self.items)) == (0, len(self.items), 1):
            return self
        return super().getitem(tx, index)

    def same_object(self, tx: Tx, other: VT) -> bool | None:
        """Two tuples of one type are distinct objects when their lengths or the
        identities of items at one position differ; two empty exact tuples are
        one object."""
        if isinstance(other, TupleVariable) and self is not other and self.python_type() is other.python_type():
            if len(self.items) != len(other.items) or any(
                    a.same_object(tx, b) is False for a, b in zip(self.items, other.items)):
                return False
            if not self.items and self._exact():
                return True
        return super().same_object(tx, other)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        self.reconstruct_items(codegen)
        codegen.emit("BUILD_TUPLE", len(self.items))


protocol.make_tuple.provide(TupleVariable)


class SizeVariable(TupleVariable):
    """``torch.Size``: a tuple of ints (constants or symbolic sizes)."""

    def python_type(self) -> type:
        return torch.Size

    def as_python_constant(self) -> Any:
        return torch.Size([i.as_python_constant() for i in self.items])

    def as_proxy(self) -> Any:
        return tuple(i.as_proxy() for i in self.items)

    def as_example(self) -> Any:
        return torch.Size([i.as_example() for i in self.items])

    def with_items(self, items: Sequence[VT]) -> VT:
        return SizeVariable(items)

    def method_numel(self, tx: Tx, /) -> VT:
        result: VT = ConstantVariable(1)
        for item in self.items:
            result = call_operator(tx, operator.mul, [result, item])
        return result

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(torch.Size)
        self.reconstruct_items(codegen)
        codegen.emit("BUILD_TUPLE", len(self.items))
        codegen.call(1)


class ListVariable(BaseSequenceVariable):
    """A list; mutable."""

    mutable = True
    live_iterator = True
    #: calls of its mutating methods so far (a sort tells by it whether its key wrote to the list)
    writes = 0

    def python_type(self) -> type:
        return list

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name in self.MUTATORS:
            self.writes += 1
        return super().call_method(tx, name, args, kwargs)

    def as_proxy(self) -> Any:
        return [i.as_proxy() for i in self.items]

    def as_example(self) -> Any:
        return [i.as_example() for i in self.items]

    def inplace_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``lst += it`` extends (a deque's extend respects its maxlen); ``lst *= n``
        repeats in place; other in-place operators are not modelled (None)."""
        if op is operator.iadd:
            self.call_method(tx, "extend", [other], {})
            return self
        other = index_operand(tx, other) if op is operator.imul else other
        if op is operator.imul and other.is_python_constant():
            tx.output.side_effects.mutate(self)
            self.items[:] = self.with_items(self.items * other.as_python_constant()).items
            return self
        return None

    MUTATORS = frozenset({"append", "extend", "insert", "pop", "clear", "reverse", "__setitem__", "__delitem__",
                          "remove", "sort", "__init__", "__iadd__", "__imul__"})

    def method_dunder_iadd(self, tx: Tx, other: VT, /) -> VT:
        """``lst.__iadd__(it)`` called as a method: ``lst += it``."""
        return self.inplace_op(tx, operator.iadd, other)

    def method_dunder_imul(self, tx: Tx, n: VT, /) -> VT:
        """``lst.__imul__(n)`` called as a method: ``lst *= n`` (a non-integer: eager's TypeError)."""
        const_int(tx, n)
        return self.inplace_op(tx, operator.imul, n)

    def method_append(self, tx: Tx, item: VT) -> VT:
        self.items.append(item)
        return ConstantVariable(None)

    def method_extend(self, tx: Tx, other: VT) -> VT:
        for_each_item(tx, other, self.items.append)
        return ConstantVariable(None)

    def method_insert(self, tx: Tx, index: VT, item: VT) -> VT:
        with errors_are_the_programs():  # an index that is no C ssize_t: eager's OverflowError
            self.items.insert(const_int(tx, index), item)
        return ConstantVariable(None)

    def method_pop(self, tx: Tx, index: VT | None = None) -> VT:
        with errors_are_the_programs():  # out of range, empty, too large: eager's IndexError, OverflowError
            return self.items.pop(-1 if index is None else const_int(tx, index))

    def method_clear(self, tx: Tx) -> VT:
        self.items.clear()
        return ConstantVariable(None)

    def method_dunder_init(self, tx: Tx, iterable: VT | None = None, /) -> VT:
        """``list.__init__`` (of a list subclass's instance): refilled from ``iterable``."""
        self.items.clear()
        if iterable is not None:
            self.method_extend(tx, iterable)
        return ConstantVariable(None)

    def method_reverse(self, tx: Tx) -> VT:
        self.items.reverse()
        return ConstantVariable(None)

    def method_dunder_setitem(self, tx: Tx, index: VT, value: VT) -> VT:
        idx = index_operand(tx, index).as_python_constant()
        with errors_are_the_programs():  # an index out of range, a step of 0...: eager's error
            if isinstance(idx, slice):
                self.items[idx] = value.unpack_var_sequence(tx)
            else:
                self.items[idx] = value
        return ConstantVariable(None)

    def method_dunder_delitem(self, tx: Tx, index: VT) -> VT:
        with errors_are_the_programs():
            del self.items[index_operand(tx, index).as_python_constant()]
        return ConstantVariable(None)

    def method_remove(self, tx: Tx, value: VT) -> VT:
        for n, item in enumerate(self.items):
            if call_operator(tx, operator.eq, [item, value]).truthy(tx):
                del self.items[n]
                return ConstantVariable(None)
        raise_traced(ValueError, self.not_found(value))

    def method_copy(self, tx: Tx) -> VT:
        return ListVariable(self.items)

    def method_sort(self, tx: Tx, *args: VT, **kwargs: VT) -> VT:
        if args:  # ``list.sort`` takes its two arguments by keyword only; eager's TypeError
            raise_traced(TypeError, "sort() takes no positional arguments")
        if len(kwargs) > 2:
            raise_traced(TypeError, f"sort() takes at most 2 keyword arguments ({len(kwargs)} given)")
        for name in kwargs.keys() - {"key", "reverse"}:
            raise_traced(TypeError, f"{name!r} is an invalid keyword argument for sort()")
        key = kwargs.get("key", ConstantVariable(None))
        return sorting.sort_in_place(tx, self, key, kwargs.get("reverse", ConstantVariable(False)).as_python_constant())

    def not_found(self, value: VT) -> str:
        """The ValueError message of ``remove(value)`` for a missing value."""
        return "list.remove(x): x not in list"

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        self.reconstruct_contents(codegen)

    def reconstruct_contents(self, codegen: PyCodegen) -> None:
        """A new list with the current items (side-effect replay, phase 1)."""
        self.reconstruct_items(codegen)
        codegen.emit("BUILD_LIST", len(self.items))

    def apply_contents(self, codegen: PyCodegen, temp: str) -> None:
        """``source[:] = temp`` (side-effect replay, phase 2)."""
        codegen.load_local(temp)
        codegen.load_source(self.source)
        codegen.load_const(slice(None))
        codegen.emit("STORE_SUBSCR")


def not_in_list(value: Any) -> str:
    """The message of ``list.index``'s ValueError for ``value``."""
    return f"{value!r} is not in list"


def read_items(tx: Tx, iterable: VT) -> list[VT]:
    """The items ``list(it)``, ``tuple(it)`` and ``sorted(it)`` read: an object
    whose class defines ``__len__`` or ``__length_hint__`` in Python as
    :func:`for_each_item` reads it (``iter()``, then its length hint), any other
    as it unpacks."""
    if not _sized_in_python(iterable):
        return iterable.unpack_var_sequence(tx)
    items: list[VT] = []
    for_each_item(tx, iterable, items.append)
    return items


def _sized_in_python(vt: VT) -> bool:
    """Whether ``vt``'s class defines ``__len__`` or ``__length_hint__`` in Python."""
    try:
        cls = vt.python_type()
    except Exception:  # noqa: BLE001 - a kind with no Python type of its own
        return False
    return any(isinstance(class_attribute(cls, name), types.FunctionType) for name in ("__len__", "__length_hint__"))


def for_each_item(tx: Tx, iterable: VT, add: Callable[[VT], Any]) -> None:
    """Feed ``iterable``'s items to ``add`` as ``list.extend``/``deque.extend`` take
    them (``Objects/listobject.c``: ``list_extend``): a list or tuple, the
    container itself included, is read whole first; anything else one item at
    a time, so a lazy iterator (``map``, a generator) whose code reads the
    container being filled sees the items added before it; between ``iter()``
    and the first item, the length hint of an object sized in Python."""
    if isinstance(iterable, (ListVariable, TupleVariable)):
        for item in iterable.unpack_var_sequence(tx):
            add(item)
        return
    iterator = iterable.get_iter(tx)
    if _sized_in_python(iterable):  # then ``PyObject_LengthHint``: its code runs, its errors are eager's
        protocol.wrap_const(tx, operator.length_hint).call_function(tx, [iterable], {})
    while (item := iterator.next_item(tx)) is not None:
        add(item)


class SliceVariable(VariableTracker):
    """``slice(start, stop, step)`` whose parts may be symbolic."""

    rebuilds_constant = True

    def __init__(self, start: VT, stop: VT, step: VT):
        super().__init__()
        self.parts = (start, stop, step)

    def python_type(self) -> type:
        return slice

    def is_python_constant(self) -> bool:
        return all(p.is_python_constant() for p in self.parts)

    def as_python_constant(self) -> Any:
        return slice(*[p.as_python_constant() for p in self.parts])

    def as_proxy(self) -> Any:
        return slice(*[p.as_proxy() for p in self.parts])

    def as_example(self) -> Any:
        return slice(*[p.as_example() for p in self.parts])

    def attr_start(self, tx: Tx) -> VT:
        return self.parts[0]

    def attr_stop(self, tx: Tx) -> VT:
        return self.parts[1]

    def attr_step(self, tx: Tx) -> VT:
        return self.parts[2]

    def method_indices(self, tx: Tx, length: VT, /) -> VT | None:
        """``s.indices(n)`` folded when the slice and ``n`` are constants (a step
        of 0, a negative length: eager's ValueError); else None (a graph break)."""
        bounds, length = index_operand(tx, self), index_operand(tx, length)
        if not (bounds.is_python_constant() and length.is_python_constant()):
            return None
        with errors_are_the_programs():
            return protocol.wrap_const(tx, bounds.as_python_constant().indices(length.as_python_constant()))

    def reconstruct(self, codegen: PyCodegen) -> None:
        for part in self.parts:
            codegen.reconstruct(part)
        codegen.emit("BUILD_SLICE", 3)
