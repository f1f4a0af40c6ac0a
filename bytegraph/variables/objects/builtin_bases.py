"""The builtin part of instances of user subclasses of ``tuple`` and ``list``
(and the operators of ``dict`` subclasses, whose storage is in ``dicts.py``).

An instance of ``class MyList(list)`` is a user object (its class's Python
methods are inlined, its attributes live in its ``__dict__``) whose items are
those of a plain list. This module models that plain part: its *storage*, a
:class:`~bytegraph.variables.containers.sequences.TupleVariable` or ``ListVariable``
that the base type's own methods act on (``super().__contains__(v)``,
``len(self)``, ``self[1:3]``, ``list.append``), bypassing the subclass's
Python overrides as the C methods do.

- an instance that existed before the call is read through the base type's
  C copy (``list.copy(obj)``, ``tuple.__getitem__(obj, slice(None))``), so
  neither reading nor guarding calls an overridden ``__getitem__``/``__iter__``;
  list mutations are replayed on the real object with
  ``list.__setitem__(obj, slice(None), items)``;
- an instance made in the trace (``tuple.__new__(cls, items)``,
  ``list.__new__(cls)``) holds its storage and is rebuilt the same way.

Operators the subclass leaves to its base (``==``, ``+``, ``in``...) apply to
the storage, with the base type's result: ``MyTuple((1,)) + (2,)`` is a plain
tuple, as eager gives.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Sequence

from bytegraph.guards.guards import LenMatch
from bytegraph.guards.source import ConvertSource, GetItemSource
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.containers import dicts
from bytegraph.variables.containers.sequences import ListVariable, TupleVariable
from bytegraph.variables.operators import BINARY_DUNDERS, INPLACE_TO_BINARY, PythonDunderOperators, call_operator
from bytegraph.variables.tx import wrap
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


def sequence_base(cls: type) -> type | None:
    """``tuple`` or ``list`` when ``cls`` derives from it, else None."""
    return tuple if issubclass(cls, tuple) else list if issubclass(cls, list) else None


def tuple_items(obj: tuple) -> tuple:
    """A plain tuple of ``obj``'s items, read by tuple's own C code (no override runs)."""
    return tuple.__getitem__(obj, slice(None))


_COPIES = {tuple: (tuple_items, "tuple_items"), list: (list.copy, "list.copy")}


class BaseListView(ListVariable):
    """The list items of a pre-existing instance of a list subclass, read
    through ``list.copy`` (``source``); mutations are replayed on the instance
    itself (``owner_source``) with ``list.__setitem__``, never its overrides."""

    def __init__(self, items: Sequence[VT], source: Any, owner_source: Any):
        super().__init__(items, source)
        self.owner_source = owner_source

    def with_items(self, items: Sequence[VT]) -> VT:
        return ListVariable(items)  # a slice or a copy is a plain new list

    def apply_contents(self, codegen: PyCodegen, temp: str) -> None:
        """``list.__setitem__(obj, slice(None), temp)`` (side-effect replay, phase 2)."""
        codegen.load_callable(list.__setitem__)
        codegen.load_source(self.owner_source)
        codegen.load_const(slice(None))
        codegen.load_local(temp)
        codegen.call(3)
        codegen.emit("POP_TOP")


def read_storage(tx: Tx, obj: Any, source: Any) -> VT:
    """The storage of ``obj``, a pre-existing instance read from ``source``:
    its length and items guarded through the base type's copy."""
    base = sequence_base(type(obj))
    copy, label = _COPIES[base]
    copied = ConvertSource(source, copy, label)
    items = copy(obj)
    tx.output.guards.add(LenMatch(copied, base, len(items)))
    wrapped = [wrap(tx, item, GetItemSource(copied, i)) for i, item in enumerate(items)]
    return BaseListView(wrapped, copied, source) if base is list else TupleVariable(wrapped)


def new_storage(cls: type) -> VT | None:
    """The empty storage of an instance of ``cls`` made in the trace (None: no sequence base)."""
    base = sequence_base(cls)
    return None if base is None else TupleVariable([]) if base is tuple else ListVariable([])


def call_base_method(tx: Tx, storage: VT, base: type, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``base.name(obj, *args)`` on the storage; ``list.__init__(iterable)`` refills it."""
    if name == "__init__" and base is list:
        storage.call_method(tx, "clear", [], {})
        if args:
            storage.call_method(tx, "extend", list(args), kwargs)
        return ConstantVariable(None)
    return storage.call_method(tx, name, args, kwargs)


def container_base(cls: type) -> type | None:
    """``tuple``, ``list`` or ``dict`` when ``cls`` derives from it, else None."""
    return sequence_base(cls) or (dict if issubclass(cls, dict) else None)


def leaves_to_base(obj: Any, tx: Tx, name: str) -> bool:
    """Whether ``type(obj).name`` is its container base's own method (the class does not override it)."""
    base = container_base(obj.python_type())
    return base is not None and name in vars(base) and obj.special_method(tx, name) is vars(base)[name]


def storage(tx: Tx, obj: Any) -> VT:
    """The plain tuple, list or dict contents of an instance of a container subclass."""
    return obj.dict_storage(tx) if issubclass(obj.python_type(), dict) else obj.seq_storage(tx)


def operand(tx: Tx, vt: VT) -> VT:
    """``vt`` as its base type's method sees it: the storage of a user container, else itself."""
    has_storage = hasattr(vt, "seq_storage") and container_base(vt.python_type()) is not None
    return storage(tx, vt) if has_storage else vt


def binary_op(tx: Tx, op: Any, obj: Any, other: VT, reflected: bool) -> Any:
    """``obj op other`` (``other op obj`` when ``reflected``) by the base
    type's operator when the class leaves the dunder to it; else NotImplemented."""
    names = BINARY_DUNDERS.get(op)
    if names is None or not leaves_to_base(obj, tx, names[1 if reflected else 0]):
        return NotImplemented
    mine, theirs = (dicts.as_dict(tx, vt) or vt for vt in (storage(tx, obj), operand(tx, other)))
    if op in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge) and (
            not issubclass(theirs.python_type(), container_base(obj.python_type()))):
        return NotImplemented  # tuples compare with tuples only, lists with lists, dicts with dicts
    return call_operator(tx, op, [theirs, mine] if reflected else [mine, theirs])


class BaseTypeOperators(PythonDunderOperators):
    """Operators of user objects: the class's Python dunder, else, for a
    tuple or list subclass leaving the dunder to its base, the base's operator
    on the storage (``seq_storage(tx)``)."""

    def binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        result = super().binary_op(tx, op, other)
        return binary_op(tx, op, self, other, False) if result is NotImplemented else result

    def reflected_binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        result = super().reflected_binary_op(tx, op, other)
        return binary_op(tx, op, self, other, True) if result is NotImplemented else result

    def inplace_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``self op= other``: the class's Python ``__iadd__``...; the base's
        (``list.__iadd__`` extends the storage and gives back the object);
        without one, Python's fallback to the binary operator (NotImplemented)."""
        name = "__i" + BINARY_DUNDERS[INPLACE_TO_BINARY[op]][0][2:] if op in INPLACE_TO_BINARY else None
        if name is None:
            return super().inplace_op(tx, op, other)
        if leaves_to_base(self, tx, name):
            items = storage(tx, self)
            done = (dicts.as_dict(tx, items) or items).inplace_op(tx, op, operand(tx, other))
            return None if done is None or done is NotImplemented else self  # None: a graph break
        if not any(name in vars(klass) for klass in self.python_type().__mro__):
            return NotImplemented
        result = self._call_dunder(tx, name, [other])
        return super().inplace_op(tx, op, other) if result is NotImplemented and self.python_method(
            tx, name) is None else result

    def contains_op(self, tx: Tx, item: VT) -> Any:
        if leaves_to_base(self, tx, "__contains__"):
            return call_operator(tx, operator.contains, [storage(tx, self), item])
        return super().contains_op(tx, item)


def reconstruct_new(codegen: PyCodegen, cls: type, storage: VT) -> None:
    """Push ``tuple.__new__(cls, items)`` or ``list.__new__(cls)`` (filled
    afterwards with ``list.extend``) for an instance made in the trace."""
    base = sequence_base(cls)
    codegen.load_callable(base.__new__)
    codegen.load_const(cls)
    if base is tuple:
        codegen.reconstruct(storage)
    codegen.call(2 if base is tuple else 1)
