"""Python containers: tuple, list, torch.Size, named tuples, dict, set, slice,
and the iterator used by ``for`` loops.

Items are VariableTrackers, so a list may mix constants, tensors and other
objects. Lists, dicts and sets are mutable: in-trace mutations update the VT;
when the VT has a source (the object existed before the call), the mutation is
recorded as a side effect and replayed on the real object after the graph runs.
"""
from __future__ import annotations

import collections
import operator
import types
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from bytegraph.breaks import Unsupported, unimplemented
from bytegraph.guards.guards import DictContains, DictKeysMatch, LenMatch
from bytegraph.guards.source import GetItemSource
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable, raise_traced, raise_traced_from
from bytegraph.variables.exceptions import ExceptionVariable, TracedException

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker


def _const_int(tx: Tx, vt: VT, what: str) -> int:
    value = vt.as_python_constant()
    if not isinstance(value, int):
        raise TypeError(f"{what} must be an int")
    return value


def _bad_method(container: VT, name: str) -> None:
    unimplemented(
        gb_type="unsupported container method",
        context=f"{container.python_type().__name__}.{name}",
        explanation=f"bytegraph does not model {container.python_type().__name__}.{name} on traced values.",
    )


class BaseSequenceVariable(VariableTracker):
    """Common behaviour of tuple-like and list-like VTs."""

    def __init__(self, items: Sequence[VT], source=None):
        super().__init__(source)
        self.items = list(items)

    def is_python_constant(self) -> bool:
        return all(i.is_python_constant() for i in self.items)

    def as_python_constant(self) -> Any:
        return self.python_type()([i.as_python_constant() for i in self.items])

    def as_proxy(self) -> Any:
        return self.python_type()([i.as_proxy() for i in self.items])

    def as_example(self) -> Any:
        return self.python_type()([i.as_example() for i in self.items])

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return True

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        return list(self.items)

    def truthy(self, tx: Tx) -> bool:
        return bool(self.items)

    def getitem(self, tx: Tx, index: VT) -> VT:
        idx = index.as_python_constant()
        if isinstance(idx, slice):
            return self.with_items(self.items[idx])
        if not isinstance(idx, int):
            if hasattr(idx, "__index__"):
                idx = operator.index(idx)
            else:
                unimplemented(
                    gb_type="unsupported index",
                    context=f"{self.python_type().__name__} indexed by {type(idx).__name__}",
                    explanation="Sequences can be indexed by constant ints and slices only.",
                )
        try:
            return self.items[idx]
        except IndexError:
            raise_traced(IndexError, f"{self.python_type().__name__} index out of range")

    def with_items(self, items: Sequence[VT]) -> VT:
        """A new sequence of the same kind holding ``items`` (no source)."""
        return type(self)(items)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, args[0])
        if name == "__len__" and not args:
            return ConstantVariable(len(self.items))
        if name == "__contains__" and len(args) == 1:
            return tx.call_builtin(operator.contains, [self, args[0]])
        if name in ("index", "count") and args and not kwargs:
            consts = [i.as_python_constant() for i in self.items]
            return ConstantVariable(getattr(consts, name)(*[a.as_python_constant() for a in args]))
        if name == "__iter__" and not args:
            return ListIteratorVariable(self.items, owner=self if isinstance(self.items, list) and self.mutable else None)
        return _bad_method(self, name)

    def reconstruct_items(self, codegen: PyCodegen) -> None:
        for item in self.items:
            codegen.reconstruct(item)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.items!r})"


class TupleVariable(BaseSequenceVariable):
    def python_type(self) -> type:
        return tuple

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        self.reconstruct_items(codegen)
        codegen.emit("BUILD_TUPLE", len(self.items))


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

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name == "numel" and not args:
            result: VT = ConstantVariable(1)
            for item in self.items:
                result = tx.call_builtin(operator.mul, [result, item])
            return result
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(torch.Size)
        self.reconstruct_items(codegen)
        codegen.emit("BUILD_TUPLE", len(self.items))
        codegen.call(1)


#: a class made by ``collections.namedtuple``: its helpers and ``__new__``
#: are the same code for every namedtuple, its fields ``_tuplegetter``s
_REFERENCE_NAMEDTUPLE = collections.namedtuple("_REFERENCE_NAMEDTUPLE", "a")
_NAMEDTUPLE_CODE = ("_make", "_replace", "_asdict", "__repr__", "__getnewargs__")
_NAMEDTUPLE_OWN = frozenset({*_NAMEDTUPLE_CODE, "_fields", "_field_defaults", "__new__", "__match_args__"})
#: class-body names that do not change how instances behave
_INERT_NAMES = frozenset({"__module__", "__qualname__", "__doc__", "__slots__", "__annotations__", "__dict__",
                          "__weakref__", "__orig_bases__", "__parameters__", "__firstlineno__",
                          "__static_attributes__"})


def _code_of(attr: Any) -> Any:
    return getattr(getattr(attr, "__func__", attr), "__code__", None)


def is_modelled_namedtuple(cls: Any) -> bool:
    """Whether :class:`NamedTupleVariable` models instances of ``cls``: a
    structseq (``torch.return_types``), or a ``collections.namedtuple`` class
    (also ``typing.NamedTuple``, and subclasses) whose tuple protocol and
    namedtuple helpers are the generated ones. A class that defines a dunder
    of its own (``__iter__``, ``__len__``, ``__eq__``, ``__init__``...) or
    redefines a helper or a field is a user class."""
    if not isinstance(cls, type) or type(cls) is not type or not issubclass(cls, tuple) or cls is tuple:
        return False
    mro = cls.__mro__
    base = mro[mro.index(tuple) - 1]  # the generated class
    if mro[mro.index(tuple):] != (tuple, object) or base.__bases__ != (tuple,):
        return False
    if "n_sequence_fields" in base.__dict__:  # a structseq (cannot be subclassed)
        return base is cls
    fields = base.__dict__.get("_fields")
    if not isinstance(fields, tuple) or getattr(cls, "__match_args__", None) != fields:
        return False
    for klass in mro[: mro.index(tuple)]:
        generated = _NAMEDTUPLE_OWN.union(fields) if klass is base else frozenset()
        for name in klass.__dict__:
            if name not in _INERT_NAMES and name not in generated and (
                name.startswith("__") or name in _NAMEDTUPLE_OWN or name in fields
            ):
                return False
    getter = type(_REFERENCE_NAMEDTUPLE.a)
    new = base.__dict__.get("__new__")
    return (
        all(_code_of(base.__dict__.get(n)) is _code_of(_REFERENCE_NAMEDTUPLE.__dict__[n]) for n in _NAMEDTUPLE_CODE)
        and getattr(getattr(new, "__func__", None), "__globals__", {}).get("_tuple_new") is tuple.__new__
        and all(type(base.__dict__.get(f)) is getter and base.__dict__[f].__reduce__()[1][0] == i
                for i, f in enumerate(fields))
    )


class NamedTupleVariable(TupleVariable):
    """A ``collections.namedtuple`` or ``torch.return_types`` structseq value."""

    def __init__(self, items: Sequence[VT], tuple_cls: type, source=None):
        super().__init__(items, source)
        self.tuple_cls = tuple_cls

    def python_type(self) -> type:
        return self.tuple_cls

    def fields(self) -> tuple[str, ...]:
        return self.tuple_cls.__match_args__

    def as_python_constant(self) -> Any:
        return self._build([i.as_python_constant() for i in self.items])

    def as_example(self) -> Any:
        return self._build([i.as_example() for i in self.items])

    def as_proxy(self) -> Any:
        return tuple(i.as_proxy() for i in self.items)

    def _build(self, values: list) -> Any:
        if hasattr(self.tuple_cls, "_make"):
            return self.tuple_cls._make(values)
        return self.tuple_cls(values)

    def with_items(self, items: Sequence[VT]) -> VT:
        return TupleVariable(items)

    def var_getattr(self, tx: Tx, name: str) -> VT:
        fields = self.fields()
        if name in fields:
            return self.items[fields.index(name)]
        if name == "_fields" and hasattr(self.tuple_cls, "_fields"):
            return ConstantVariable(self.tuple_cls._fields)
        return super().var_getattr(tx, name)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if hasattr(self.tuple_cls, "_fields"):  # collections.namedtuple helpers
            fields = self.fields()
            if name == "_asdict" and not args and not kwargs:
                return DictVariable({f: (ConstantVariable(f), v) for f, v in zip(fields, self.items)})
            if name == "_replace" and not args:
                unknown = set(kwargs) - set(fields)
                if unknown:
                    raise_traced(ValueError, f"Got unexpected field names: {sorted(unknown)!r}")
                return NamedTupleVariable([kwargs.get(f, v) for f, v in zip(fields, self.items)], self.tuple_cls)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(getattr(self.tuple_cls, "_make", self.tuple_cls))
        self.reconstruct_items(codegen)
        codegen.emit("BUILD_TUPLE", len(self.items))
        codegen.call(1)


class ListVariable(BaseSequenceVariable):
    """A list; mutable."""

    mutable = True

    def python_type(self) -> type:
        return list

    def as_proxy(self) -> Any:
        return [i.as_proxy() for i in self.items]

    def as_example(self) -> Any:
        return [i.as_example() for i in self.items]

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        mutator = _LIST_MUTATORS.get(name)
        if mutator is not None and not kwargs:
            tx.output.side_effects.mutate(self)
            return mutator(self, tx, *args)
        if name == "copy" and not args:
            return ListVariable(self.items)
        if name == "sort":
            tx.output.side_effects.mutate(self)
            key = kwargs.get("key", ConstantVariable(None))
            reverse = kwargs.get("reverse", ConstantVariable(False)).as_python_constant()
            self.items[:] = tx.sort_items(self.items, key, reverse)
            return ConstantVariable(None)
        return super().call_method(tx, name, args, kwargs)

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


def _list_append(lst: ListVariable, tx: Tx, item: VT) -> VT:
    lst.items.append(item)
    return ConstantVariable(None)


def _list_extend(lst: ListVariable, tx: Tx, other: VT) -> VT:
    lst.items.extend(tx.unpack(other))
    return ConstantVariable(None)


def _list_insert(lst: ListVariable, tx: Tx, index: VT, item: VT) -> VT:
    lst.items.insert(_const_int(tx, index, "index"), item)
    return ConstantVariable(None)


def _list_pop(lst: ListVariable, tx: Tx, index: VT | None = None) -> VT:
    try:
        return lst.items.pop(-1 if index is None else _const_int(tx, index, "index"))
    except IndexError as e:
        raise_traced(IndexError, str(e))


def _list_clear(lst: ListVariable, tx: Tx) -> VT:
    lst.items.clear()
    return ConstantVariable(None)


def _list_reverse(lst: ListVariable, tx: Tx) -> VT:
    lst.items.reverse()
    return ConstantVariable(None)


def _list_setitem(lst: ListVariable, tx: Tx, index: VT, value: VT) -> VT:
    idx = index.as_python_constant()
    if isinstance(idx, slice):
        lst.items[idx] = tx.unpack(value)
    else:
        lst.items[idx] = value
    return ConstantVariable(None)


def _list_delitem(lst: ListVariable, tx: Tx, index: VT) -> VT:
    del lst.items[index.as_python_constant()]
    return ConstantVariable(None)


def _list_remove(lst: ListVariable, tx: Tx, value: VT) -> VT:
    for n, item in enumerate(lst.items):
        if tx.call_builtin(operator.eq, [item, value]).truthy(tx):
            del lst.items[n]
            return ConstantVariable(None)
    raise_traced(ValueError, lst.not_found(value))


_LIST_MUTATORS: dict[str, Callable[..., VT]] = {
    "append": _list_append,
    "extend": _list_extend,
    "insert": _list_insert,
    "pop": _list_pop,
    "clear": _list_clear,
    "reverse": _list_reverse,
    "__setitem__": _list_setitem,
    "__delitem__": _list_delitem,
    "remove": _list_remove,
}


class DequeVariable(ListVariable):
    """A ``collections.deque``: a list with operations at both ends and a
    ``maxlen``. A bounded deque keeps its last ``maxlen`` items when items
    are added at the right (``append``, ``extend``, ``+=``, ``+``, ``*``) and
    its first when added at the left; ``insert`` into a full one raises."""

    def __init__(self, items: Sequence[VT], maxlen: int | None = None, source=None):
        super().__init__(items, source)
        self.maxlen = maxlen

    def python_type(self) -> type:
        return collections.deque

    def keep(self, items: list[VT], left: bool = False) -> list[VT]:
        """What this deque's ``maxlen`` keeps of ``items`` just added at one end."""
        if self.maxlen is None:
            return list(items)
        return items[: self.maxlen] if left else items[max(0, len(items) - self.maxlen) :]

    def with_items(self, items: Sequence[VT]) -> VT:
        return DequeVariable(self.keep(list(items)), self.maxlen)

    def not_found(self, value: VT) -> str:
        return f"{value.as_python_constant()!r} is not in deque"

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if not hasattr(collections.deque, name):  # list methods a deque lacks (sort)
            return _bad_method(self, name)
        if name in ("__getitem__", "__setitem__", "__delitem__") and args and isinstance(
            args[0].as_python_constant(), slice
        ):
            raise_traced(TypeError, "sequence index must be integer, not 'slice'")
        mutator = _DEQUE_MUTATORS.get(name)
        if mutator is not None and not kwargs:
            tx.output.side_effects.mutate(self)
            return mutator(self, tx, *args)
        if name == "copy" and not args:
            return DequeVariable(self.items, self.maxlen)
        return super().call_method(tx, name, args, kwargs)

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name == "maxlen":
            return ConstantVariable(self.maxlen)
        return super().var_getattr(tx, name)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(collections.deque)
        self.reconstruct_contents(codegen)
        codegen.load_const(self.maxlen)
        codegen.call(2)

    def apply_contents(self, codegen: PyCodegen, temp: str) -> None:
        """``source.clear(); source.extend(temp)``."""
        for method, method_args in (("clear", ()), ("extend", (temp,))):
            codegen.load_source(self.source)
            codegen.emit("LOAD_METHOD", method)
            for arg in method_args:
                codegen.load_local(arg)
            codegen.call(len(method_args))
            codegen.emit("POP_TOP")


def _deque_add(dq: DequeVariable, tx: Tx, items: list[VT], left: bool) -> VT:
    """Items added one by one at one end (``extendleft`` reverses them)."""
    dq.items[:] = dq.keep(items[::-1] + dq.items, left=True) if left else dq.keep(dq.items + items)
    return ConstantVariable(None)


def _deque_insert(dq: DequeVariable, tx: Tx, index: VT, item: VT) -> VT:
    if dq.maxlen is not None and len(dq.items) >= dq.maxlen:
        raise_traced(IndexError, "deque already at its maximum size")
    return _list_insert(dq, tx, index, item)


def _deque_pop(dq: DequeVariable, tx: Tx, *args: VT, left: bool = False) -> VT:
    if args:
        raise_traced(TypeError, f"deque.{'popleft' if left else 'pop'}() takes no arguments ({len(args)} given)")
    if not dq.items:
        raise_traced(IndexError, "pop from an empty deque")
    return dq.items.pop(0 if left else -1)


def _deque_rotate(dq: DequeVariable, tx: Tx, n: VT | None = None) -> VT:
    steps = 1 if n is None else _const_int(tx, n, "n")
    if dq.items:
        steps %= len(dq.items)
        dq.items[:] = dq.items[len(dq.items) - steps :] + dq.items[: len(dq.items) - steps]
    return ConstantVariable(None)


_DEQUE_MUTATORS: dict[str, Callable[..., VT]] = {
    **_LIST_MUTATORS,
    "append": lambda dq, tx, item: _deque_add(dq, tx, [item], left=False),
    "appendleft": lambda dq, tx, item: _deque_add(dq, tx, [item], left=True),
    "extend": lambda dq, tx, other: _deque_add(dq, tx, tx.unpack(other), left=False),
    "extendleft": lambda dq, tx, other: _deque_add(dq, tx, tx.unpack(other), left=True),
    "insert": _deque_insert,
    "pop": _deque_pop,
    "popleft": lambda dq, tx, *args: _deque_pop(dq, tx, *args, left=True),
    "rotate": _deque_rotate,
}


class SliceVariable(VariableTracker):
    """``slice(start, stop, step)`` whose parts may be symbolic."""

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

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name in ("start", "stop", "step"):
            return self.parts[("start", "stop", "step").index(name)]
        return super().var_getattr(tx, name)

    def reconstruct(self, codegen: PyCodegen) -> None:
        for part in self.parts:
            codegen.reconstruct(part)
        codegen.emit("BUILD_SLICE", 3)


class DictVariable(VariableTracker):
    """A dict (or OrderedDict/defaultdict) whose keys are known at trace time.

    ``items`` maps a hashable key (a constant, or ``IdentityKey`` for objects
    compared by identity) to ``(key VT, value VT)``. As in CPython, storing
    under a key equal to one already there (``True`` for ``1``) keeps the
    original key object (:meth:`store`). A defaultdict keeps its
    ``default_factory`` (a VT), called for a missing key by ``d[k]`` only
    (``__missing__``), as eager does.
    """

    mutable = True

    def __init__(self, items: dict[Any, tuple[VT, VT]], dict_cls: type = dict, source=None,
                 default_factory: VT | None = None):
        super().__init__(source)
        self.items = dict(items)
        self.dict_cls = dict_cls
        self.default_factory = default_factory

    def python_type(self) -> type:
        return self.dict_cls

    @staticmethod
    def key_of(tx: Tx, key: VT) -> Any:
        if key.is_python_constant():
            value = key.as_python_constant()
            try:
                hash(value)
            except TypeError:
                unimplemented(
                    gb_type="user error",
                    context=f"unhashable dict key {type(value).__name__}",
                    explanation="The traced code raises TypeError; it runs natively so the error is the eager one.",
                    hints=("Use a hashable key.",),
                )
            return value
        cls = key.python_type()
        if not issubclass(cls, torch.Tensor) and (cls.__eq__ is not object.__eq__ or cls.__hash__ is not object.__hash__):
            unimplemented(
                gb_type="unsupported dict key",
                context=f"dict keyed by a {cls.__qualname__}, which defines its own __eq__/__hash__",
                explanation="bytegraph compares such keys by identity only; equal but distinct keys would miss.",
                hints=("Key the dict by a constant (a string, an int) derived from the object.",),
            )
        identity = tx.identity_of(key)
        if identity is None:
            unimplemented(
                gb_type="unsupported dict key",
                context=f"dict keyed by {key}",
                explanation="Dict keys must be constants or objects bytegraph can compare by identity.",
            )
        if key.source is not None:  # keys that are distinct objects now must stay distinct
            tx.output.identity_key_sources[key.source] = None
        return IdentityKey(identity)

    def is_python_constant(self) -> bool:
        factory_known = self.default_factory is None or self.default_factory.is_python_constant()
        return factory_known and all(k.is_python_constant() and v.is_python_constant() for k, v in self.items.values())

    def as_python_constant(self) -> Any:
        pairs = [(k.as_python_constant(), v.as_python_constant()) for k, v in self.items.values()]
        if self.dict_cls is collections.defaultdict:
            return collections.defaultdict(self.default_factory.as_python_constant(), pairs)
        return self.dict_cls(pairs)

    def as_proxy(self) -> Any:
        return {k.as_python_constant(): v.as_proxy() for k, v in self.items.values()}

    def as_example(self) -> Any:
        return {k.as_python_constant(): v.as_example() for k, v in self.items.values()}

    def truthy(self, tx: Tx) -> bool:
        return bool(self.items)

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return True

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        return [k for k, _ in self.items.values()]

    def store(self, tx: Tx, key: VT, value: VT) -> None:
        """``d[key] = value``; an equal key already present keeps its own object."""
        hkey = self.key_of(tx, key)
        old = self.items.get(hkey)
        self.items[hkey] = (key if old is None else old[0], value)

    def empty_like(self) -> DictVariable:
        """A new empty dict of this one's class (and default factory)."""
        return DictVariable({}, self.dict_cls, default_factory=self.default_factory)

    def getitem(self, tx: Tx, key: VT) -> VT:
        hkey = self.key_of(tx, key)
        if hkey in self.items:
            return self.items[hkey][1]
        factory = self.default_factory
        if factory is not None and not (factory.is_python_constant() and factory.as_python_constant() is None):
            value = factory.call_function(tx, [], {})  # defaultdict.__missing__
            self._mutate(tx, "__setitem__", [key, value], {})
            return value
        _raise_key_error(key)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, args[0])
        if name == "__len__" and not args:
            return ConstantVariable(len(self.items))
        if name == "__contains__" and len(args) == 1:
            return ConstantVariable(self.key_of(tx, args[0]) in self.items)
        if name == "get" and 1 <= len(args) <= 2 and not kwargs:
            hkey = self.key_of(tx, args[0])
            if hkey in self.items:
                return self.items[hkey][1]
            return args[1] if len(args) == 2 else ConstantVariable(None)
        if name == "keys" and not args:
            return DictViewVariable(self, "keys")
        if name == "values" and not args:
            return DictViewVariable(self, "values")
        if name == "items" and not args:
            return DictViewVariable(self, "items")
        if name == "copy" and not args:
            return DictVariable(self.items, self.dict_cls, default_factory=self.default_factory)
        if name == "__iter__" and not args:
            return DictIteratorVariable(self, "keys")
        if name in ("__setitem__", "update", "pop", "setdefault", "clear", "__delitem__", "popitem", "move_to_end"):
            return self._mutate(tx, name, args, kwargs)
        return _bad_method(self, name)

    def _mutate(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        tx.output.side_effects.mutate(self)
        if name == "__setitem__":
            self.store(tx, *args)
            return ConstantVariable(None)
        if name == "update":
            for other in args:
                other = as_dict(tx, other) or other
                pairs = list(other.items.values()) if isinstance(other, DictVariable) else map(tx.unpack, tx.unpack(other))
                for key, value in pairs:
                    self.store(tx, key, value)
            for kname, value in kwargs.items():
                self.store(tx, ConstantVariable(kname), value)
            return ConstantVariable(None)
        if name == "pop":
            hkey = self.key_of(tx, args[0])
            if hkey in self.items:
                return self.items.pop(hkey)[1]
            if len(args) == 2:
                return args[1]
            _raise_key_error(args[0])
        if name == "setdefault":
            hkey = self.key_of(tx, args[0])
            if hkey not in self.items:
                self.items[hkey] = (args[0], args[1] if len(args) > 1 else ConstantVariable(None))
            return self.items[hkey][1]
        if name == "__delitem__":
            hkey = self.key_of(tx, args[0])
            if hkey not in self.items:
                _raise_key_error(args[0])
            del self.items[hkey]
            return ConstantVariable(None)
        if name == "clear":
            self.items.clear()
            return ConstantVariable(None)
        if name == "popitem":
            ordered = self.dict_cls is collections.OrderedDict
            if not ordered and args:
                raise_traced(TypeError, f"dict.popitem() takes no arguments ({len(args)} given)")
            if not ordered and kwargs:
                raise_traced(TypeError, "dict.popitem() takes no keyword arguments")
            if not self.items:
                raise_traced(KeyError, "dictionary is empty" if ordered else "popitem(): dictionary is empty")
            last = _flag(args, 0, kwargs, "last", True)
            hkey = next(reversed(self.items)) if last else next(iter(self.items))
            return TupleVariable(list(self.items.pop(hkey)))
        if name == "move_to_end" and self.dict_cls is collections.OrderedDict:
            hkey = self.key_of(tx, args[0])
            if hkey not in self.items:
                _raise_key_error(args[0])
            entry = self.items.pop(hkey)
            if _flag(args, 1, kwargs, "last", True):
                self.items[hkey] = entry
            else:
                self.items = {hkey: entry, **self.items}
            return ConstantVariable(None)
        return _bad_method(self, name)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        if self.dict_cls is dict:
            self.reconstruct_contents(codegen)
            return
        codegen.load_callable(self.dict_cls)
        if self.dict_cls is collections.defaultdict:
            codegen.reconstruct(self.default_factory)
        self.reconstruct_contents(codegen)
        codegen.call(2 if self.dict_cls is collections.defaultdict else 1)

    def reconstruct_contents(self, codegen: PyCodegen) -> None:
        for key, value in self.items.values():
            codegen.reconstruct(key)
            codegen.reconstruct(value)
        codegen.emit("BUILD_MAP", len(self.items))

    def apply_contents(self, codegen: PyCodegen, temp: str) -> None:
        """``source.clear(); source.update(temp)``: keeps identity and key order."""
        apply_by_clear_update(codegen, self.source, temp)

    def __repr__(self) -> str:
        return f"DictVariable({list(self.items)!r})"


def _raise_key_error(key: VT) -> None:
    """The traced program raises ``KeyError(key)`` (with the key object itself)."""
    raise TracedException(ExceptionVariable(KeyError, [key]))


class LazyDictVariable(VariableTracker):
    """A dict that existed before the call, read key by key through its source.

    Reading one key guards only that key's presence (and its value's facts);
    whatever needs the whole dict (iteration, ``len``, mutation, rebuilding)
    *materializes* it: every key is guarded in order and every value wrapped,
    and this VT then delegates to that :class:`DictVariable`.
    """

    mutable = True

    def __init__(self, value: dict, source: Any):
        super().__init__(source)
        self.value = value
        self._read: dict[Any, VT] = {}
        self.full: DictVariable | None = None

    def python_type(self) -> type:
        return type(self.value)

    def materialize(self, tx: Tx) -> DictVariable:
        if self.full is None:
            tx.output.guards.add(DictKeysMatch(self.source, type(self.value), tuple(self.value)))
            items = {}
            for key, value in self.value.items():
                vt = self._read.get(key)
                if vt is None:
                    vt = tx.wrap(value, GetItemSource(self.source, key))
                items[key] = (tx.wrap_const(key), vt)
            self.full = DictVariable(items, type(self.value), self.source)
        return self.full

    def _lookup(self, tx: Tx, key: VT) -> VT | None:
        """The value for ``key`` (None when absent), guarding only that key."""
        if self.full is not None:
            return self.full.items.get(DictVariable.key_of(tx, key), (None, None))[1]
        hkey = key.as_python_constant()
        if type(hkey) not in (str, int):
            return self.materialize(tx).items.get(DictVariable.key_of(tx, key), (None, None))[1]
        present = hkey in self.value
        tx.output.guards.add(DictContains(self.source, hkey, present))
        if not present:
            return None
        if hkey not in self._read:
            self._read[hkey] = tx.wrap(self.value[hkey], GetItemSource(self.source, hkey))
        return self._read[hkey]

    def _length(self, tx: Tx) -> int:
        """``len()`` guarded by length only (no need to pin the keys)."""
        if self.full is not None:
            return len(self.full.items)
        tx.output.guards.add(LenMatch(self.source, type(self.value), len(self.value)))
        return len(self.value)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name == "__len__" and not args:
            return ConstantVariable(self._length(tx))
        if name == "__contains__" and len(args) == 1:
            return ConstantVariable(self._lookup(tx, args[0]) is not None)
        if name in ("__getitem__", "get") and 1 <= len(args) <= (1 if name == "__getitem__" else 2) and not kwargs:
            found = self._lookup(tx, args[0])
            if found is not None:
                return found
            if name == "get":
                return args[1] if len(args) == 2 else ConstantVariable(None)
        return self.materialize(tx).call_method(tx, name, args, kwargs)

    def truthy(self, tx: Tx) -> bool:
        return self._length(tx) > 0

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return True

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        return self.materialize(tx).unpack_var_sequence(tx)

    def is_python_constant(self) -> bool:
        return False

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_source(self.source)

    def __repr__(self) -> str:
        return f"LazyDictVariable({self.source})"


class DictBaseView(LazyDictVariable):
    """The plain-``dict`` behaviour of an instance of a dict subclass, for
    ``super().get(...)`` and friends inside the subclass's methods. Read-only:
    mutating through it is a graph break."""

    READS = frozenset({"get", "__getitem__", "__contains__", "keys", "values", "items", "__len__", "__iter__", "copy"})

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name not in self.READS:
            unimplemented(
                gb_type="unsupported container method",
                context=f"dict.{name} on an instance of {type(self.value).__qualname__}",
                explanation="Mutating a dict subclass through its dict base methods is not traced yet.",
                hints=("Move the mutation out of the compiled function.",),
            )
        return super().call_method(tx, name, args, kwargs)


def as_dict(tx: Tx, vt: VT) -> DictVariable | None:
    """``vt`` as a DictVariable (materializing a lazy dict), or None if it is not a dict."""
    if isinstance(vt, LazyDictVariable):
        return vt.materialize(tx)
    return vt if isinstance(vt, DictVariable) else None


def _flag(args: Sequence[VT], index: int, kwargs: dict[str, VT], name: str, default: Any) -> Any:
    """Constant value of an optional positional-or-keyword argument."""
    if len(args) > index:
        return args[index].as_python_constant()
    return kwargs[name].as_python_constant() if name in kwargs else default


class IdentityKey:
    """A dict key compared by the identity of the object it stands for."""

    __slots__ = ("ident",)

    def __init__(self, ident: int):
        self.ident = ident

    def __hash__(self) -> int:
        return hash(self.ident)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IdentityKey) and other.ident == self.ident


class DictViewVariable(VariableTracker):
    """``d.keys()``, ``d.values()`` or ``d.items()`` of a DictVariable."""

    def __init__(self, dict_vt: DictVariable, kind: str):
        super().__init__()
        self.dict_vt = dict_vt
        self.kind = kind

    def python_type(self) -> type:
        return type(getattr({}, self.kind)())

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

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name == "__len__":
            return ConstantVariable(len(self.dict_vt.items))
        if name == "__contains__" and self.kind == "keys":
            return self.dict_vt.call_method(tx, "__contains__", args, kwargs)
        if name == "__iter__":
            return DictIteratorVariable(self.dict_vt, self.kind)
        return _bad_method(self, name)

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.reconstruct(self.dict_vt)
        codegen.emit("LOAD_METHOD", self.kind)
        codegen.call(0)


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
        return _bad_method(self, name)

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


def apply_by_clear_update(codegen: PyCodegen, source: Any, temp: str) -> None:
    """``source.clear(); source.update(temp)`` in the generated code."""
    for method, args in (("clear", ()), ("update", (temp,))):
        codegen.load_source(source)
        codegen.emit("LOAD_METHOD", method)
        for arg in args:
            codegen.load_local(arg)
        codegen.call(len(args))
        codegen.emit("POP_TOP")

    def __repr__(self) -> str:
        return f"SetVariable({self.values!r})"


class IteratorVariable(VariableTracker):
    """Base of iterators the translator can advance at trace time."""

    mutable = True

    def next_item(self, tx: Tx) -> VT | None:
        """The next item, or None when exhausted."""
        raise NotImplementedError(type(self).__name__)

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return True

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        items = []
        while (item := self.next_item(tx)) is not None:
            items.append(item)
        return items

    def truthy(self, tx: Tx) -> bool:
        return True

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name == "__iter__":
            return self
        if name == "__next__":
            item = self.next_item(tx)
            if item is None:
                raise_traced(StopIteration)
            return item
        return _bad_method(self, name)


class GeneratorVariable(IteratorVariable):
    """A generator created in the trace; ``frame`` is its suspended inlined
    frame (an ``InliningTranslator``), advanced to the next ``yield`` by
    :meth:`next_item` and closed by ``close()``.

    A generator dropped while suspended is closed by CPython when it is
    collected, running its ``finally``/``with`` cleanup then; the trace does
    not track references, so it cannot tell when that happens. Instead the
    compiled frame checks, wherever a graph ends, for a generator of the trace
    suspended where closing it would run code, and if there is one breaks the
    graph at the call that created it, so it is a real generator at run time
    (see ``InstructionTranslator.check_suspended_generators``). A generator
    live after the graph breaks there too (see :meth:`reconstruct`).
    """

    def __init__(self, frame: Any):
        super().__init__()
        self.frame = frame

    def python_type(self) -> type:
        return types.GeneratorType

    def next_item(self, tx: Tx) -> VT | None:
        """The next yielded item, None once exhausted.

        Raises:
            TracedException: what the generator's frame raises (PEP 479 applied).
        """
        return self.frame.resume_generator(tx)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name == "close" and not args and not kwargs:
            self.frame.close_generator(tx)
            return ConstantVariable(None)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen: PyCodegen) -> None:
        """A traced generator's suspended frame cannot be rebuilt.

        Raises:
            Unsupported: moved to the instruction that created the generator,
                so the frame breaks there and the generator is a real one.
        """
        try:
            unimplemented(
                gb_type="cannot reconstruct",
                context=f"generator {self.frame.code.co_qualname} is live after the graph",
                explanation="A generator traced in the compiled region cannot be rebuilt in the generated code; "
                "the generator is created natively instead.",
                hints=("Consume the generator inside the compiled function.",),
            )
        except Unsupported as brk:
            self.frame.birth.relocate(brk)
            raise

    def __repr__(self) -> str:
        return f"GeneratorVariable({self.frame.code.co_qualname})"


class ListIteratorVariable(IteratorVariable):
    """An iterator over items known at trace time (loops are unrolled).

    With an ``owner`` (a list VT: ``iter(some_list)``) ``items`` is the list's
    own item list, not a copy: items appended to the list during the loop are
    visited, as in eager, and an iterator that outlives the graph is rebuilt
    as a ``list_iterator`` over that list (later appends are seen); others are
    rebuilt as an iterator over a tuple of the remaining items.
    """

    def __init__(self, items: Sequence[VT], index: int = 0, owner: VT | None = None):
        super().__init__()
        self.owner = owner
        self.items = owner.items if owner is not None else list(items)
        self.index = index

    def python_type(self) -> type:
        return type(iter([]))

    def next_item(self, tx: Tx) -> VT | None:
        """The next item, or None when exhausted."""
        if self.index >= len(self.items):
            return None
        item = self.items[self.index]
        self.index += 1
        return item

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        rest = self.items[self.index :]
        self.index = len(self.items)
        return rest

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.owner is not None:
            codegen.load_callable(iterator_at)
            codegen.reconstruct(self.owner)
            codegen.load_const(self.index)
            codegen.call(2)
            return
        for item in self.items[self.index :]:
            codegen.reconstruct(item)
        codegen.emit("BUILD_TUPLE", len(self.items) - self.index)
        codegen.emit("GET_ITER")

    def __repr__(self) -> str:
        return f"ListIteratorVariable({self.index}/{len(self.items)})"


def iterator_at(items: Any, index: int) -> Any:
    """``iter(items)`` advanced past ``index`` items (an escaping iterator, rebuilt)."""
    iterator = iter(items)
    for _ in range(index):
        next(iterator)
    return iterator


class SetIteratorVariable(ListIteratorVariable):
    """``iter(a_set)``: the set's items at that time; a change of the set's size
    before the next step is eager's RuntimeError (a graph break, so the native
    run raises it)."""

    def __init__(self, set_vt: SetVariable):
        super().__init__(set_vt.unpack_var_sequence(None))
        self.set_vt = set_vt
        self.size = len(set_vt.values)

    def python_type(self) -> type:
        return type(iter(set()))

    def next_item(self, tx: Tx) -> VT | None:
        if len(self.set_vt.values) != self.size:
            unimplemented(
                gb_type="user error",
                context="Set changed size during iteration",
                explanation="The traced code raises RuntimeError; it runs natively so the error is the eager one.",
                hints=("Iterate over a copy (list(s)) when changing the set in the loop.",),
            )
        return super().next_item(tx)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if len(self.set_vt.values) != self.size:  # its next step raises, as the real iterator's would
            codegen.load_callable(ChangedSetIterator)
            codegen.call(0)
            return
        codegen.load_callable(iterator_at)  # the set's own iterator: later changes raise natively too
        codegen.reconstruct(self.set_vt)
        codegen.load_const(self.index)
        codegen.call(2)


class ChangedSetIterator:
    """Stands for an iterator over a set whose size changed: its next step raises eager's error."""

    def __iter__(self) -> "ChangedSetIterator":
        return self

    def __next__(self) -> Any:
        raise RuntimeError("Set changed size during iteration")


class DictIteratorVariable(IteratorVariable):
    """``iter(d)`` or ``iter(d.keys()/values()/items())`` of a DictVariable.

    Keys are visited in their order when iteration started; values are read at
    each step. Changing the dict's size meanwhile is eager's RuntimeError.
    """

    def __init__(self, dict_vt: DictVariable, kind: str = "keys"):
        super().__init__()
        self.dict_vt = dict_vt
        self.kind = kind
        self.keys = list(dict_vt.items)
        self.size = len(dict_vt.items)
        self.index = 0

    def python_type(self) -> type:
        return type(iter(getattr({}, self.kind)()))

    def next_item(self, tx: Tx) -> VT | None:
        if len(self.dict_vt.items) != self.size or (
            self.index < len(self.keys) and self.keys[self.index] not in self.dict_vt.items
        ):
            unimplemented(
                gb_type="user error",
                context="dictionary changed size during iteration",
                explanation="The traced code raises RuntimeError; it runs natively so the error is the eager one.",
                hints=("Iterate over a copy (list(d)) when changing the dict in the loop.",),
            )
        if self.index >= len(self.keys):
            return None
        key, value = self.dict_vt.items[self.keys[self.index]]
        self.index += 1
        if self.kind == "keys":
            return key
        if self.kind == "values":
            return value
        return TupleVariable([key, value])

    def __repr__(self) -> str:
        return f"DictIteratorVariable({self.kind}, {self.index}/{len(self.keys)})"


class EnumerateVariable(IteratorVariable):
    """``enumerate(it, start)``: advances ``it`` one item per step (lazy, as in eager)."""

    def __init__(self, iterator: IteratorVariable, start: int):
        super().__init__()
        self.iterator = iterator
        self.count = start

    def python_type(self) -> type:
        return enumerate

    def next_item(self, tx: Tx) -> VT | None:
        item = self.iterator.next_item(tx)
        if item is None:
            return None
        self.count += 1
        return TupleVariable([ConstantVariable(self.count - 1), item])


class ZipVariable(IteratorVariable):
    """``zip(*iterators, strict=...)``: one item from each iterator per step,
    stopping at the first exhausted one (items already taken are dropped, as in eager)."""

    def __init__(self, iterators: Sequence[IteratorVariable], strict: bool):
        super().__init__()
        self.iterators = list(iterators)
        self.strict = strict

    def python_type(self) -> type:
        return zip

    def next_item(self, tx: Tx) -> VT | None:
        if not self.iterators:
            return None
        items = []
        for n, iterator in enumerate(self.iterators):
            item = iterator.next_item(tx)
            if item is None:
                if self.strict and (n > 0 or any(it.next_item(tx) is not None for it in self.iterators[1:])):
                    unimplemented(
                        gb_type="user error",
                        context="zip(strict=True) over iterables of different lengths",
                        explanation="The traced code raises ValueError; it runs natively so the error is the eager one.",
                        hints=("Zip iterables of equal length.",),
                    )
                return None
            items.append(item)
        return TupleVariable(items)


class MapVariable(IteratorVariable):
    """``map(fn, *iterators)``: calls ``fn`` (traced) one step at a time."""

    def __init__(self, fn: VT, iterators: Sequence[IteratorVariable]):
        super().__init__()
        self.fn = fn
        self.iterators = list(iterators)

    def python_type(self) -> type:
        return map

    def next_item(self, tx: Tx) -> VT | None:
        args = []
        for iterator in self.iterators:
            item = iterator.next_item(tx)
            if item is None:
                return None
            args.append(item)
        return self.fn.call_function(tx, args, {})


class FilterVariable(IteratorVariable):
    """``filter(fn, iterator)`` (``fn`` None: truth of the item), one step at a time."""

    def __init__(self, fn: VT | None, iterator: IteratorVariable):
        super().__init__()
        self.fn = fn
        self.iterator = iterator

    def python_type(self) -> type:
        return filter

    def next_item(self, tx: Tx) -> VT | None:
        while (item := self.iterator.next_item(tx)) is not None:
            keep = item if self.fn is None else self.fn.call_function(tx, [item], {})
            if keep.truthy(tx):
                return item
        return None
