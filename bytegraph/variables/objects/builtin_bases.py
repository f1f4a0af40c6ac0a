"""The builtin part of instances of user subclasses of the builtin containers
and scalars (``tuple``, ``list``, ``dict``, ``OrderedDict``, ``defaultdict``,
``deque``, ``set``, ``frozenset``, ``str``, ``bytes``, ``int``, ``float``).

An instance of ``class MyList(list)`` is a user object (its class's Python
methods are inlined, its attributes live in its ``__dict__``) whose builtin
part is a plain value of its base. This module models that part, the
instance's *storage*: a VT of the base kind (``ListVariable``,
``DictVariable`` of the base's class, ``SetVariable``, ``DequeVariable``, a
constant for the immutable scalars) that the base type's own C methods act on
(``super().__contains__(v)``, ``len(self)``, ``self[1:3]``, ``set.add``,
``str.upper``), bypassing the subclass's Python overrides as the C methods do.

- an instance that existed before the call is read through the base type's
  C copy (``list.copy(obj)``, ``tuple.__getitem__(obj, slice(None))``,
  ``set.copy(obj)``, ``str.__str__(obj)``), so neither reading nor guarding
  calls an overridden ``__getitem__``/``__iter__``; list and set mutations are
  replayed on the real object with the base's own methods;
- an instance made in the trace (``tuple.__new__(cls, items)``,
  ``set.__new__(cls)`` then ``set.__init__``) holds its storage and is
  rebuilt the same way.

Operators the subclass leaves to its base (``==``, ``+``, ``|``, ``in``...)
apply to the storage, with the base type's result: ``MyTuple((1,)) + (2,)``
is a plain tuple and ``MySet([1]) | {2}`` a plain set, as eager gives.
"""
from __future__ import annotations

import collections
import operator
import types
from typing import TYPE_CHECKING, Any, Sequence

from bytegraph.breaks import unimplemented
from bytegraph.guards.guards import LenMatch
from bytegraph.guards.source import AttrSource, ConvertSource, GetItemSource
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable, raise_traced
from bytegraph.variables.containers import dicts
from bytegraph.variables.containers.deques import DequeVariable
from bytegraph.variables.containers.sequences import ListVariable, TupleVariable
from bytegraph.variables.containers.sets import SetVariable
from bytegraph.variables.operators import (
    BINARY_DUNDERS, INPLACE_TO_BINARY, UNARY_DUNDERS, PythonDunderOperators, call_operator, declines,
)
from bytegraph.variables.tx import wrap, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: the builtin types whose part of a subclass's instance is modelled, most derived first
MODELLED_BASES = (collections.OrderedDict, collections.defaultdict, collections.deque, dict, list, tuple, set,
                  frozenset, str, bytes, int, float)

#: the bases whose ``__new__`` makes the value from its arguments (their ``__init__`` is object's)
IMMUTABLE_BASES = (tuple, frozenset, str, bytes, int, float)

#: what an instance's comparisons accept as the other operand (the others: NotImplemented)
_COMPARABLE = {tuple: tuple, list: list, set: (set, frozenset), frozenset: (set, frozenset)}


def builtin_base(cls: type) -> type | None:
    """The modelled builtin base ``cls`` derives from, else None."""
    return next((base for base in MODELLED_BASES if issubclass(cls, base)), None)


def base_attr(base: type, name: str) -> Any:
    """``base.name`` as the class dict of ``base``'s MRO holds it (None when absent)."""
    return next((vars(k)[name] for k in base.__mro__ if name in vars(k)), None)


def tuple_items(obj: tuple) -> tuple:
    """A plain tuple of ``obj``'s items, read by tuple's own C code (no override runs)."""
    return tuple.__getitem__(obj, slice(None))


#: the C copy reading a pre-existing instance's builtin part, with its label in guards
_COPIES = {tuple: (tuple_items, "tuple_items"), list: (list.copy, "list.copy"), set: (set.copy, "set.copy"),
           frozenset: (frozenset.copy, "frozenset.copy"), str: (str.__str__, "str.__str__"),
           bytes: (bytes.__bytes__, "bytes.__bytes__"), int: (int.__int__, "int.__int__"),
           float: (float.__float__, "float.__float__")}


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


class DictBaseView(dicts.LazyDictVariable):
    """The plain-``dict`` items of a pre-existing instance of a dict subclass
    (read through ``dict.copy``, its ``source``), for ``super().get(...)``,
    ``dict.__setitem__(obj, ...)`` and the operators the subclass leaves to
    dict. Its items follow the instance's base (an OrderedDict's order, a
    defaultdict's factory); mutations are replayed on the instance itself
    (``owner_source``) by :func:`refill_dict`, never its overrides."""

    def __init__(self, owner: dict, source: Any, owner_source: Any):
        super().__init__(dict.copy(owner), source)
        self.owner_source = owner_source
        self.owner = owner
        # whose semantics the items follow (order-sensitive ==, move_to_end, __missing__)
        self.base = next(b for b in (collections.OrderedDict, collections.defaultdict, dict) if isinstance(owner, b))

    def python_type(self) -> type:
        return self.base

    def holding(self, tx: Tx, items: dict, factory: VT | None) -> dicts.DictVariable:
        if self.base is collections.defaultdict:  # the factory, read (and guarded) on the instance
            factory = wrap(tx, self.owner.default_factory, AttrSource(self.owner_source, "default_factory"))
        return BaseDictItems(items, self.owner_source, self.source, self.base, factory)


class BaseDictItems(dicts.DictVariable):
    """A :class:`DictBaseView` once materialized."""

    def __init__(self, items: dict, owner_source: Any, source: Any, base: type = dict, factory: VT | None = None):
        super().__init__(items, base, source, default_factory=factory)
        self.owner_source = owner_source

    def apply_contents(self, codegen: PyCodegen, temp: str) -> None:
        """``refill_dict(obj, temp, base)`` (side-effect replay, phase 2)."""
        codegen.load_callable(refill_dict)
        codegen.load_source(self.owner_source)
        codegen.load_local(temp)
        codegen.load_const(self.dict_cls)
        codegen.call(3)
        codegen.emit("POP_TOP")


def refill_dict(obj: dict, items: dict, base: type) -> None:
    """Make ``obj``'s builtin part hold ``items`` with its base's own C methods
    (an OrderedDict's keep its order links), never the subclass's overrides."""
    base.clear(obj)
    for key, value in items.items():
        base.__setitem__(obj, key, value)


class BaseSetView(SetVariable):
    """The members of a pre-existing instance of a set subclass, read through
    ``set.copy`` (``source``); mutations are replayed on the instance itself
    (``owner_source``) with ``set.clear`` and ``set.update``, never its overrides."""

    def __init__(self, items: Sequence[VT], source: Any, owner_source: Any, tx: Tx):
        super().__init__(items, set, source, tx)
        self.owner_source = owner_source

    def apply_contents(self, codegen: PyCodegen, temp: str) -> None:
        """``set.clear(obj); set.update(obj, temp)`` (side-effect replay, phase 2)."""
        apply_by_base_methods(codegen, (set.clear, set.update), self.owner_source, temp)


class BaseDequeView(DequeVariable):
    """The items of a pre-existing instance of a deque subclass (or a plain
    deque), read through ``deque_items`` (``source``); mutations are replayed on the
    instance itself (``owner_source``) with ``deque.clear`` and ``deque.extend``."""

    def __init__(self, items: Sequence[VT], maxlen: int | None, source: Any, owner_source: Any):
        super().__init__(items, maxlen, source)
        self.owner_source = owner_source

    def apply_contents(self, codegen: PyCodegen, temp: str) -> None:
        """``deque.clear(obj); deque.extend(obj, temp)`` (side-effect replay, phase 2)."""
        apply_by_base_methods(codegen, (collections.deque.clear, collections.deque.extend), self.owner_source, temp)


def deque_items(obj: collections.deque) -> list:
    """A list of ``obj``'s items, read by deque's own C iterator (no override runs)."""
    return list(collections.deque.__iter__(obj))


def read_storage(tx: Tx, obj: Any, source: Any) -> VT:
    """The storage of ``obj``, a pre-existing instance read from ``source``
    through the base type's C copy (guarded through that copy): a sequence's
    length and items, a set's members, a scalar's value."""
    base = builtin_base(type(obj))
    if issubclass(base, dict):  # read key by key, as a dict is
        return DictBaseView(obj, ConvertSource(source, dict.copy, "dict.copy"), source)
    if base is collections.deque:
        copied = ConvertSource(source, deque_items, "deque_items")
        items = deque_items(obj)
        tx.output.guards.add(LenMatch(copied, list, len(items)))
        maxlen = wrap(tx, obj.maxlen, AttrSource(source, "maxlen")).as_python_constant()
        wrapped = [wrap(tx, item, GetItemSource(copied, i)) for i, item in enumerate(items)]
        return BaseDequeView(wrapped, maxlen, copied, source)
    copy, label = _COPIES[base]
    copied = ConvertSource(source, copy, label)
    value = copy(obj)
    if base in (set, frozenset) and type(obj) is base:  # (the builder wraps one of members it can key)
        unimplemented(gb_type="unsupported set input", context=f"a {base.__name__} of {len(obj)} members passed in",
                      explanation="Its members are not all constants or objects compared by identity: only run "
                                  "time can hash and compare them (as CPython did when they were added).",
                      hints=("Pass a list, or a set of constants (strings, ints) derived from the objects.",))
    if base not in (tuple, list):
        plain = wrap(tx, value, copied)
        if base is not set:
            return plain
        return BaseSetView(plain.unpack_var_sequence(tx), copied, source, tx)
    tx.output.guards.add(LenMatch(copied, base, len(value)))
    wrapped = [wrap(tx, item, GetItemSource(copied, i)) for i, item in enumerate(value)]
    return BaseListView(wrapped, copied, source) if base is list else TupleVariable(wrapped)


def new_storage(cls: type) -> VT | None:
    """The empty storage of an instance of ``cls`` made in the trace (None: no modelled base)."""
    base = builtin_base(cls)
    if base is None:
        return None
    if issubclass(base, dict):
        return dicts.DictVariable({}, base, default_factory=ConstantVariable(None) if base is not dict and issubclass(
            base, collections.defaultdict) else None)
    empty = {list: lambda: ListVariable([]), tuple: lambda: TupleVariable([]), set: lambda: SetVariable([], set),
             frozenset: lambda: SetVariable([], frozenset), collections.deque: lambda: DequeVariable([])}
    return empty[base]() if base in empty else ConstantVariable(base())


def call_new(tx: Tx, base: type, cls: type, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """The storage ``base.__new__(cls, *args)`` gives an instance: an immutable
    base's value made from the arguments (``tuple(items)``, ``str(obj)``...), a
    mutable base's empty value (its ``__init__`` fills it)."""
    if base in IMMUTABLE_BASES:
        return wrap_const(tx, base).call_function(tx, args, kwargs)
    return new_storage(cls if issubclass(cls, base) else base)


#: builtin bases whose ``copy()`` builds the copy by calling the instance's own type
_TYPE_CALLING_COPIES = (collections.OrderedDict, collections.defaultdict, collections.deque)


def call_base_method(tx: Tx, obj: VT, cls: type, base: type, name: str, args: Sequence[VT],
                     kwargs: dict[str, VT]) -> VT:
    """``base.name(obj, *args)``, the base's C method on ``obj``'s builtin part
    (its storage), unless the C method itself calls back into the class
    (:data:`_CALLING_BACK`)."""
    items = storage(tx, obj)
    calls_back = _CALLING_BACK.get(name)
    result = calls_back(tx, obj, cls, base, items, args, kwargs) if calls_back is not None else None
    return result if result is not None else items.call_method(tx, name, args, kwargs)


def _missing_key(tx: Tx, obj: VT, cls: type, base: type, items: VT, args: Sequence[VT],
                 kwargs: dict[str, VT]) -> VT | None:
    """``dict.__getitem__`` of a missing key calls the class's ``__missing__``."""
    if not issubclass(base, dict) or len(args) != 1:
        return None
    missing = obj.python_method(tx, "__missing__")
    if missing is not None and not items.call_method(tx, "__contains__", args, {}).as_python_constant():
        return missing.call_function(tx, args, {})
    return None


def _typed_copy(tx: Tx, obj: VT, cls: type, base: type, items: VT, args: Sequence[VT],
                kwargs: dict[str, VT]) -> VT | None:
    """The copy of an OrderedDict, defaultdict or deque subclass's instance is
    ``type(obj)(obj)`` (``(factory, obj)``, ``(obj, maxlen)``), as their C code makes it."""
    if args or kwargs or base not in _TYPE_CALLING_COPIES:
        return None
    plain = dicts.as_dict(tx, items) or items
    ctor_args = [obj]
    if base is collections.defaultdict:
        ctor_args.insert(0, plain.default_factory or ConstantVariable(None))
    if base is collections.deque and plain.maxlen is not None:
        ctor_args.append(ConstantVariable(plain.maxlen))
    return wrap_const(tx, cls).call_function(tx, ctor_args, {})


#: C methods of builtin bases that call back into the instance's class: their
#: result, or None when the call is the storage's own
_CALLING_BACK = {"__getitem__": _missing_key, "copy": _typed_copy, "__copy__": _typed_copy}


def leaves_to_base(obj: Any, tx: Tx, name: str) -> bool:
    """Whether ``type(obj).name`` is its builtin base's own method (the class does not override it)."""
    base = builtin_base(obj.python_type())
    if base is None:
        return False
    attr = base_attr(base, name)
    return attr is not None and obj.special_method(tx, name) is attr


def storage(tx: Tx, obj: Any) -> VT:
    """The builtin part of an instance of a subclass of a builtin type."""
    return obj.base_storage(tx)


def operand(tx: Tx, vt: VT) -> VT:
    """``vt`` as its base type's method sees it: the storage of a user container, else itself."""
    has_storage = hasattr(vt, "base_storage") and builtin_base(vt.python_type()) is not None
    return storage(tx, vt) if has_storage else vt


#: operators whose C code on an OrderedDict, defaultdict or deque makes its result
#: from a copy by the instance's own type, then applies the in-place operator
_TYPE_CALLING_OPERATORS = {operator.or_: operator.ior, operator.add: operator.iadd, operator.mul: operator.imul}


def _leaves_operator_to_base(obj: Any, tx: Tx, name: str, reflected: bool) -> bool:
    """Whether the base's C operator answers ``name`` for ``obj``: the class leaves
    the dunder to its base; for a reflected operator the base lacks (``"a" + s``,
    ``4 - i``), the other operand's C operator takes ``obj`` as its builtin part."""
    if leaves_to_base(obj, tx, name):
        return True
    base = builtin_base(obj.python_type())
    return reflected and base is not None and base_attr(base, name) is None and not isinstance(
        obj.special_method(tx, name), types.FunctionType)


def binary_op(tx: Tx, op: Any, obj: Any, other: VT, reflected: bool) -> Any:
    """``obj op other`` (``other op obj`` when ``reflected``) by the base
    type's operator when the class leaves the dunder to it; else NotImplemented."""
    names = BINARY_DUNDERS.get(op)
    if names is None or not _leaves_operator_to_base(obj, tx, names[1 if reflected else 0], reflected):
        return NotImplemented
    mine, theirs = (dicts.as_dict(tx, vt) or vt for vt in (storage(tx, obj), operand(tx, other)))
    if issubclass(builtin_base(obj.python_type()), (set, frozenset)) and declines(mine, names[1 if reflected else 0],
                                                                                theirs):
        return NotImplemented  # eager's TypeError names the subclass, not its base
    cls = obj.python_type()
    base = builtin_base(cls)
    if base in _TYPE_CALLING_COPIES and op in _TYPE_CALLING_OPERATORS and issubclass(
            theirs.python_type(), collections.deque if op is operator.add else int if op is operator.mul else dict):
        if not reflected or op is operator.mul:  # ``type(obj)(obj)``, then ``|=``/``+=``/``*=``
            made = call_base_method(tx, obj, cls, base, "copy", [], {})
            return call_operator(tx, _TYPE_CALLING_OPERATORS[op], [made, other])
        if op is operator.or_:  # ``other | obj``: ``type(obj)(other)`` updated with obj
            made = wrap_const(tx, cls).call_function(tx, [theirs] if base is collections.OrderedDict else [
                mine.default_factory or ConstantVariable(None), theirs], {})
            made.call_method(tx, "update", [obj], {})
            return made
    comparable = dict if issubclass(base, dict) else _COMPARABLE.get(base)
    if comparable is not None and op in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
                                         operator.ge) and not issubclass(theirs.python_type(), comparable):
        return NotImplemented  # tuples compare with tuples only, lists with lists, dicts with dicts, sets with sets
    return call_operator(tx, op, [theirs, mine] if reflected else [mine, theirs])


class BaseTypeOperators(PythonDunderOperators):
    """Operators of user objects: the class's Python dunder, else, for a
    subclass of a builtin type leaving the dunder to its base, the base's
    operator on the storage (``base_storage(tx)``)."""

    def binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        result = super().binary_op(tx, op, other)
        if result is NotImplemented:
            result = binary_op(tx, op, self, other, False)
        return self._ne_from_eq(tx, op, other) if result is NotImplemented else result

    def reflected_binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        result = super().reflected_binary_op(tx, op, other)
        if result is NotImplemented:
            result = binary_op(tx, op, self, other, True)
        return self._ne_from_eq(tx, op, other) if result is NotImplemented else result

    def unary_op(self, tx: Tx, op: Any) -> Any:
        """``-self``, ``abs(self)``...: the class's Python dunder, else the base's
        operator on the builtin part (``-IntSub(5)`` is the int ``-5``)."""
        result = super().unary_op(tx, op)
        if result is NotImplemented and op in UNARY_DUNDERS and leaves_to_base(self, tx, UNARY_DUNDERS[op]):
            return call_operator(tx, op, [storage(tx, self)])
        return result

    def _ne_from_eq(self, tx: Tx, op: Any, other: VT) -> Any:
        """``self != other`` with object's own ``__ne__``: ``self.__eq__(other)``
        inverted, NotImplemented when that is (``Objects/typeobject.c``:
        ``object_richcompare``); NotImplemented for other operators."""
        if op is not operator.ne or self.special_method(tx, "__ne__") is not object.__ne__:
            return NotImplemented
        equal = self.binary_op(tx, operator.eq, other)
        return NotImplemented if equal is NotImplemented else ConstantVariable(not equal.truthy(tx))

    def inplace_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``self op= other``: the class's Python ``__iadd__``...; the base's
        (``list.__iadd__`` extends the storage and gives back the object);
        without one, Python's fallback to the binary operator (NotImplemented)."""
        name = "__i" + BINARY_DUNDERS[INPLACE_TO_BINARY[op]][0][2:] if op in INPLACE_TO_BINARY else None
        if name is None:
            return super().inplace_op(tx, op, other)
        if leaves_to_base(self, tx, name):
            items = dicts.as_dict(tx, storage(tx, self)) or storage(tx, self)
            if declines(items, name, operand(tx, other)):
                return NotImplemented  # ``set.__ior__`` of a non-set: Python's fallback to the binary operator
            done = items.inplace_op(tx, op, operand(tx, other))
            return None if done is None or done is NotImplemented else self  # None: a graph break
        if not any(name in vars(klass) for klass in self.python_type().__mro__):
            return NotImplemented
        result = self._call_dunder(tx, name, [other])
        return super().inplace_op(tx, op, other) if result is NotImplemented and self.python_method(
            tx, name) is None else result

    def contains_op(self, tx: Tx, item: VT) -> Any:
        """``item in self``: the base's on the storage, or the class's Python
        ``__contains__``; with ``__contains__ = None`` or a class that is not
        iterable either (no ``__iter__``, no ``__getitem__``), eager's TypeError;
        else NotImplemented (iterated)."""
        if leaves_to_base(self, tx, "__contains__"):
            return call_operator(tx, operator.contains, [storage(tx, self), item])
        name = self.python_type().__name__
        if self.special_method(tx, "__contains__") is None:
            raise_traced(TypeError, f"'{name}' object is not a container")
        if not self.has_iteration_protocol(tx):
            raise_traced(TypeError, f"argument of type '{name}' is not iterable")
        return super().contains_op(tx, item)


def reconstruct_new(codegen: PyCodegen, cls: type, storage: VT) -> None:
    """Push a rebuilt instance made in the trace: ``base.__new__(cls, value)`` for
    an immutable base, else ``base.__new__(cls)`` filled with the base's own
    methods (``list.extend``, ``set.update``, ``deque.__init__``,
    ``dict.__setitem__`` per item, its ``default_factory`` stored)."""
    base = builtin_base(cls)
    codegen.load_callable(base.__new__)
    codegen.load_const(cls)
    if base in IMMUTABLE_BASES:
        codegen.reconstruct(storage)
    codegen.call(2 if base in IMMUTABLE_BASES else 1)
    if base is list and storage.items:
        codegen.call_on_top(list.extend, storage)
    if base is set and storage.values:
        codegen.call_on_top(set.update, storage)
    if base is collections.deque:
        codegen.call_on_top(collections.deque.__init__, storage, ConstantVariable(storage.maxlen))
    if issubclass(base, dict):
        for key, value in storage.items.values():
            codegen.call_on_top(base.__setitem__, key, value)
    if issubclass(base, collections.defaultdict):
        codegen.call_on_top(object.__setattr__, ConstantVariable("default_factory"), storage.default_factory)


def apply_by_base_methods(codegen: PyCodegen, methods: tuple, owner: Any, temp: str) -> None:
    """``clear(owner); fill(owner, temp)`` in the generated code (``methods``: the
    base's own C ``clear`` and ``update``/``extend``): a subclass instance's
    builtin part refilled, never through its overrides."""
    for method, args in zip(methods, ((), (temp,))):
        codegen.load_callable(method)
        codegen.load_source(owner)
        for arg in args:
            codegen.load_local(arg)
        codegen.call(1 + len(args))
        codegen.emit("POP_TOP")
