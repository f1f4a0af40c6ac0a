"""Python dicts: dict, OrderedDict and defaultdict values, dicts read lazily
through a source, and their views.

A dict is mutable: in-trace mutations update the VT; when the VT has a source
(the object existed before the call), the mutation is recorded as a side
effect and replayed on the real object after the graph runs.
"""
from __future__ import annotations

import collections
import itertools
import operator
import types
from typing import TYPE_CHECKING, Any, Sequence

from bytegraph.guards.guards import DictContains, DictKeysMatch, LenMatch, compared_by_value
from bytegraph.guards.source import AttrSource, ConvertSource, GetItemSource
from bytegraph.variables.base import VariableTracker, bad_method
from bytegraph.variables.handlers import call_method_handler
from bytegraph.variables.constant import ConstantVariable, raise_traced, unmodelled_method
from bytegraph.variables.containers import reprs
from bytegraph.variables.containers.dict_keys import EqualityKey, holds_equality_keys, key_of, resolve
from bytegraph.variables.containers.dict_entries import DictIteratorVariable, EntryTable
from bytegraph.variables.containers.dict_views import DictViewVariable
from bytegraph.variables.containers.iterators import IteratorVariable
from bytegraph.variables.containers.sequences import BaseSequenceVariable, TupleVariable, for_each_item
from bytegraph.variables.exceptions import ExceptionVariable, TracedException
from bytegraph.variables.operators import call_operator
from bytegraph.variables.tx import wrap, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class DictOperators(VariableTracker):
    """The operators of dicts, shared by the eager and the lazy kinds:
    ``a | b``, ``a |= b`` (``update``) and ``k in d`` (a key lookup)."""

    def binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        if op in (operator.eq, operator.ne) and isinstance(other, DictOperators):
            same = dicts_equal(tx, as_dict(tx, self), as_dict(tx, other))
            return NotImplemented if same is None else ConstantVariable(same is (op is operator.eq))
        right = as_dict(tx, other) if op is operator.or_ else None
        return dict_union(tx, as_dict(tx, self), right) if right is not None else NotImplemented

    def inplace_op(self, tx: Tx, op: Any, other: VT) -> Any:
        if op is not operator.ior:
            return None
        self.call_method(tx, "update", [other], {})
        return self

    def contains_op(self, tx: Tx, item: VT) -> Any:
        return self.call_method(tx, "__contains__", [item], {})


class DictVariable(DictOperators):
    """A dict (or OrderedDict/defaultdict) whose keys are known at trace time.

    ``items`` maps a hashable key (a constant, or an ``IdentityKey``/``EqualityKey``
    for an object: :mod:`.dict_keys`) to ``(key VT, value VT)``. As in CPython, storing
    under a key equal to one already there (``True`` for ``1``) keeps the
    original key object (:meth:`store`). A defaultdict keeps its
    ``default_factory`` (a VT), called for a missing key by ``d[k]`` only
    (``__missing__``), as eager does.
    """

    mutable = True
    live_iterator = True
    rebuilds_constant = True

    def __init__(self, items: dict[Any, tuple[VT, VT]], dict_cls: type = dict, source=None,
                 default_factory: VT | None = None):
        super().__init__(source)
        self.items = dict(items)
        self.dict_cls = dict_cls
        self.default_factory = default_factory
        #: CPython's entry table, its layout known for a small dict display (:mod:`.dict_entries`)
        self.entries = EntryTable(known=False)

    def python_type(self) -> type:
        return self.dict_cls

    def key_of(self, tx: Tx, key: VT) -> Any:
        """The key a lookup of ``key`` finds in this dict, else the one it is stored under (:mod:`.dict_keys`)."""
        return key_of(tx, key, self)

    def held_keys(self) -> list[Any]:
        return list(self.items)

    def held_vt(self, held: Any) -> VT:
        return self.items[held][0]

    def key_state(self) -> Any:
        return self.entries.changes, self.entries.deletions, len(self.items)

    def compares(self) -> bool:
        return holds_equality_keys(self.items)

    def probes_in_order(self) -> bool:
        return not self.entries.freed

    def lookup(self, tx: Tx, key: VT) -> VT | None:
        """The value held for ``key``, None when absent."""
        return self.items.get(self.key_of(tx, key), (None, None))[1]

    @reprs.cycle_safe
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

    def repr_text(self, tx: Tx) -> VT | None:
        return reprs.dict_repr(tx, self)

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return True

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        return [k for k, _ in self.items.values()]

    def store(self, tx: Tx, key: VT, value: VT, hkey: Any = None) -> None:
        """``d[key] = value``; an equal key already present keeps its own object.
        ``hkey``: the key another dict holds ``key`` under, its hash not asked again
        (CPython's ``dict_merge`` inserts with the stored hash)."""
        hkey = self.key_of(tx, key) if hkey is None else resolve(tx, hkey, key, self)
        old = self.items.get(hkey)
        if old is None:
            self.entries.insert(hkey)
        self.items[hkey] = (key if old is None else old[0], value)

    def attr_default_factory(self, tx: Tx) -> VT | None:
        if not issubclass(self.dict_cls, collections.defaultdict):
            return None
        return self.default_factory if self.default_factory is not None else ConstantVariable(None)

    def empty_like(self) -> DictVariable:
        """A new empty dict of this one's class (and default factory)."""
        return DictVariable({}, self.dict_cls, default_factory=self.default_factory)

    def getitem(self, tx: Tx, key: VT) -> VT:
        hkey = self.key_of(tx, key)
        if hkey in self.items:
            return self.items[hkey][1]
        if issubclass(self.dict_cls, collections.defaultdict):
            return self.method_dunder_missing(tx, key)
        _raise_key_error(key)

    def method_dunder_missing(self, tx: Tx, key: VT, /) -> VT:
        """``defaultdict.__missing__(key)``: ``self[key] = default_factory()``, or
        ``KeyError(key)`` without a factory."""
        factory = self.default_factory
        if not issubclass(self.dict_cls, collections.defaultdict):
            return bad_method(self, "__missing__")
        if factory is None or factory.is_python_constant() and factory.as_python_constant() is None:
            _raise_key_error(key)
        value = factory.call_function(tx, [], {})
        self.call_method(tx, "__setitem__", [key, value], {})
        return value

    def store_default_factory(self, tx: Tx, value: VT) -> bool:
        """``d.default_factory = f`` on a defaultdict made in the trace."""
        if not issubclass(self.dict_cls, collections.defaultdict) or self.source is not None:
            return False
        self.default_factory = value
        return True

    MUTATORS = frozenset({"__setitem__", "update", "pop", "setdefault", "clear", "__delitem__", "popitem",
                          "move_to_end", "__init__"})
    unhandled_method = unmodelled_method

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name in self.MUTATORS and self.dict_cls is types.MappingProxyType:  # a class's __dict__: read-only
            if name == "__setitem__":
                raise_traced(TypeError, "'mappingproxy' object does not support item assignment")
            if name == "__delitem__":
                raise_traced(TypeError, "'mappingproxy' object does not support item deletion")
            raise_traced(AttributeError, f"'mappingproxy' object has no attribute '{name}'")
        return super().call_method(tx, name, args, kwargs)

    def method_dunder_getitem(self, tx: Tx, key: VT, /) -> VT:
        return self.getitem(tx, key)

    def method_dunder_len(self, tx: Tx, /) -> VT:
        return ConstantVariable(len(self.items))

    def method_dunder_contains(self, tx: Tx, key: VT, /) -> VT:
        return ConstantVariable(self.key_of(tx, key) in self.items)

    def method_get(self, tx: Tx, key: VT, default: VT | None = None, /) -> VT:
        hkey = self.key_of(tx, key)
        if hkey in self.items:
            return self.items[hkey][1]
        return default if default is not None else ConstantVariable(None)

    def method_keys(self, tx: Tx, /) -> VT:
        return DictViewVariable(self, "keys")

    def method_values(self, tx: Tx, /) -> VT:
        return DictViewVariable(self, "values")

    def method_items(self, tx: Tx, /) -> VT:
        return DictViewVariable(self, "items")

    def method_copy(self, tx: Tx, /) -> VT:
        dict_cls = dict if self.dict_cls is types.MappingProxyType else self.dict_cls  # a mappingproxy copies its dict
        return DictVariable(self.items, dict_cls, default_factory=self.default_factory)

    def method_dunder_iter(self, tx: Tx, /) -> VT:
        return DictIteratorVariable(self, "keys")

    def method_dunder_setitem(self, tx: Tx, key: VT, value: VT, /) -> VT:
        self.store(tx, key, value)
        return ConstantVariable(None)

    def method_update(self, tx: Tx, /, *others: VT, **kwargs: VT) -> VT:  # (``update(self=1)`` is a key)
        if len(others) > 1:  # eager's messages: OrderedDict's update is MutableMapping's, in C
            raise_traced(TypeError, f"update() takes at most 1 positional argument ({len(others)} given)"
                         if issubclass(self.dict_cls, collections.OrderedDict) else
                         f"update expected at most 1 argument, got {len(others)}")
        for other in others:
            self._update_from(tx, as_dict(tx, other) or other)
        for kname, value in kwargs.items():
            self.store(tx, ConstantVariable(kname), value)
        return ConstantVariable(None)

    def method_dunder_or(self, tx: Tx, other: VT, /) -> VT | None:
        """``dict.__or__``: a plain dict, this one's items updated with another
        dict's; NotImplemented for anything else (None: the class has its own)."""
        right = as_dict(tx, other)
        if self.dict_cls.__or__ is not dict.__or__:
            return None
        if right is None:
            return ConstantVariable(NotImplemented)
        merged = DictVariable({})
        for key, value in [*self.items.values(), *right.items.values()]:
            merged.store(tx, key, value)
        return merged

    def method_dunder_ior(self, tx: Tx, other: VT, /) -> VT | None:
        """``dict.__ior__``: ``update(other)`` (its errors too), then this dict."""
        if self.dict_cls.__ior__ is not dict.__ior__:
            return None
        self.call_method(tx, "update", [other], {})
        return self

    def method_dunder_init(self, tx: Tx, *args: VT, **kwargs: VT) -> VT:
        """``dict.__init__`` (of a dict subclass's instance) updates; a
        defaultdict's takes its ``default_factory`` first."""
        if issubclass(self.dict_cls, collections.defaultdict):
            factory = args[0] if args else ConstantVariable(None)
            if not (factory.is_python_constant() and factory.as_python_constant() is None) and not any(
                    "__call__" in vars(k) for k in factory.python_type().__mro__):
                raise_traced(TypeError, "first argument must be callable or None")
            self.default_factory, args = factory, args[1:]
        if len(args) > 1:
            raise_traced(TypeError, f"expected at most 1 arguments, got {len(args)}"
                         if issubclass(self.dict_cls, collections.OrderedDict) else
                         f"dict expected at most 1 argument, got {len(args)}")
        return self.method_update(tx, *args, **kwargs)

    def _update_from(self, tx: Tx, other: VT) -> None:
        """``self.update(other)`` (``Objects/dictobject.c``: ``dict_update_arg``): a
        dict's items; an object with ``keys()``: ``other[k]`` for each key; else
        ``(key, value)`` pairs stored one at a time, so a generator reading this
        dict sees the pairs stored before it."""
        if isinstance(other, DictVariable):
            for hkey, (key, value) in list(other.items.items()):
                self.store(tx, key, value, hkey)
            return
        if not isinstance(other, (IteratorVariable, BaseSequenceVariable)) and other.has_attr(
                tx, "keys"):
            keys = other.var_getattr(tx, "keys").call_function(tx, [], {})
            for_each_item(tx, keys, lambda key: self.store(
                tx, key, call_operator(tx, operator.getitem, [other, key])))
            return
        count = itertools.count()

        def store_pair(pair: VT) -> None:
            items = pair.unpack_var_sequence(tx)
            n = next(count)
            if len(items) != 2:
                raise_traced(ValueError, f"dictionary update sequence element #{n} has length {len(items)}; "
                                         "2 is required")
            self.store(tx, *items)

        for_each_item(tx, other, store_pair)

    def method_pop(self, tx: Tx, key: VT, *default: VT) -> VT:
        hkey = self.key_of(tx, key)
        if hkey in self.items:
            self.entries.delete(hkey)
            return self.items.pop(hkey)[1]
        if len(default) == 1:
            return default[0]
        _raise_key_error(key)

    def method_setdefault(self, tx: Tx, key: VT, *default: VT) -> VT:
        hkey = self.key_of(tx, key)
        if hkey not in self.items:
            self.entries.insert(hkey)
            self.items[hkey] = (key, default[0] if default else ConstantVariable(None))
        return self.items[hkey][1]

    def method_dunder_delitem(self, tx: Tx, key: VT, /) -> VT:
        hkey = self.key_of(tx, key)
        if hkey not in self.items:
            _raise_key_error(key)
        self.entries.delete(hkey)
        del self.items[hkey]
        return ConstantVariable(None)

    def method_clear(self, tx: Tx, *args: VT) -> VT:
        if args:
            raise_traced(TypeError, f"{self.dict_cls.clear.__qualname__}() takes no arguments ({len(args)} given)")
        self.entries.clear()
        self.items.clear()
        return ConstantVariable(None)

    def method_popitem(self, tx: Tx, *args: VT, **kwargs: VT) -> VT:
        ordered = self.dict_cls is collections.OrderedDict
        if not ordered and args:
            raise_traced(TypeError, f"dict.popitem() takes no arguments ({len(args)} given)")
        if not ordered and kwargs:
            raise_traced(TypeError, "dict.popitem() takes no keyword arguments")
        if not self.items:
            raise_traced(KeyError, "dictionary is empty" if ordered else "popitem(): dictionary is empty")
        last = _flag(args, 0, kwargs, "last", True)
        hkey = next(reversed(self.items)) if last else next(iter(self.items))
        self.entries.pop_last(hkey)
        return TupleVariable(list(self.items.pop(hkey)))

    def method_move_to_end(self, tx: Tx, *args: VT, **kwargs: VT) -> VT:
        if self.dict_cls is not collections.OrderedDict:
            return bad_method(self, "move_to_end")
        hkey = self.key_of(tx, args[0])
        if hkey not in self.items:
            _raise_key_error(args[0])
        entry = self.items.pop(hkey)
        self.entries.moved()
        if _flag(args, 1, kwargs, "last", True):
            self.items[hkey] = entry
        else:
            self.items = {hkey: entry, **self.items}
        return ConstantVariable(None)

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


class LazyDictVariable(DictOperators):
    """A dict that existed before the call, read key by key through its source.

    Reading one key guards only that key's presence (and its value's facts);
    whatever needs the whole dict (iteration, ``len``, mutation, rebuilding)
    *materializes* it: every key is guarded in order and every value wrapped,
    and this VT then delegates to that :class:`DictVariable`.
    """

    mutable = True
    live_iterator = True

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
            for index, (key, value) in enumerate(self.value.items()):
                vt = self._read.get(key)
                if vt is None:
                    vt = wrap(tx, value, GetItemSource(self.source, key))
                if compared_by_value(key):
                    items[key] = (wrap_const(tx, key), vt)
                else:  # an object key (a tensor, a module): read as ``list(d)[index]``, found by identity
                    key_vt = wrap(tx, key, GetItemSource(ConvertSource(self.source, list, "list"), index))
                    items[key_of(tx, key_vt, hashing=False)] = (key_vt, vt)
            factory = None
            if isinstance(self.value, collections.defaultdict):  # its factory, read (and guarded) through the source
                factory = wrap(tx, self.value.default_factory, AttrSource(self.source, "default_factory"))
            self.full = self.holding(tx, items, factory)
        return self.full

    def holding(self, tx: Tx, items: dict, factory: VT | None) -> DictVariable:
        """The materialized dict of ``items``."""
        return DictVariable(items, type(self.value), self.source, default_factory=factory)

    def _lookup(self, tx: Tx, key: VT) -> VT | None:
        """The value for ``key`` (None when absent), guarding only that key."""
        if self.full is not None:
            return self.full.lookup(tx, key)
        hkey = key.as_python_constant() if key.is_python_constant() else None
        if type(hkey) not in (str, int):
            return self.materialize(tx).lookup(tx, key)
        present = hkey in self.value
        tx.output.guards.add(DictContains(self.source, hkey, present))
        if not present:
            return None
        if hkey not in self._read:
            self._read[hkey] = wrap(tx, self.value[hkey], GetItemSource(self.source, hkey))
        return self._read[hkey]

    def _length(self, tx: Tx) -> int:
        """``len()`` guarded by length only (no need to pin the keys)."""
        if self.full is not None:
            return len(self.full.items)
        tx.output.guards.add(LenMatch(self.source, type(self.value), len(self.value)))
        return len(self.value)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        """Reads of one key, and the length, by the handlers below; anything
        else (or a missing key for ``d[k]``) on the materialized dict."""
        result = call_method_handler(self, tx, name, args, kwargs)
        return result if result is not None else self.materialize(tx).call_method(tx, name, args, kwargs)

    def method_dunder_len(self, tx: Tx, /) -> VT:
        return ConstantVariable(self._length(tx))

    def method_dunder_contains(self, tx: Tx, key: VT, /) -> VT:
        return ConstantVariable(self._lookup(tx, key) is not None)

    def method_dunder_getitem(self, tx: Tx, key: VT, /) -> VT | None:
        return self._lookup(tx, key)  # None: raised (or __missing__) by the materialized dict

    def method_get(self, tx: Tx, key: VT, default: VT | None = None, /) -> VT:
        found = self._lookup(tx, key)
        if found is not None:
            return found
        return default if default is not None else ConstantVariable(None)

    def attr_default_factory(self, tx: Tx) -> VT | None:
        if not isinstance(self.value, collections.defaultdict):
            return None
        return self.materialize(tx).var_getattr(tx, "default_factory")

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


def dict_of(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> DictVariable:
    """``dict(*args, **kwargs)``: a new dict, filled as ``dict.update`` fills one."""
    if len(args) > 1:
        raise_traced(TypeError, f"dict expected at most 1 argument, got {len(args)}")
    result = DictVariable({})
    result.call_method(tx, "update", list(args), kwargs)
    return result


def as_dict(tx: Tx, vt: VT) -> DictVariable | None:
    """``vt`` as a DictVariable (materializing a lazy dict), or None if it is not a dict."""
    if isinstance(vt, LazyDictVariable):
        return vt.materialize(tx)
    return vt if isinstance(vt, DictVariable) else None


def dicts_equal(tx: Tx, a: DictVariable, b: DictVariable) -> bool | None:
    """``a == b`` for dicts of the builtin classes (CPython's ``dict_equal``: the same keys, each value of ``a``
    is or equals ``b``'s; two OrderedDicts also compare order); None for classes with their own ``__eq__``."""
    if any(d.dict_cls.__eq__ not in (dict.__eq__, collections.OrderedDict.__eq__) for d in (a, b)):
        return None
    ordered = all(issubclass(d.dict_cls, collections.OrderedDict) for d in (a, b))
    if len(a.items) != len(b.items):
        return False
    for key, (key_vt, value) in list(a.items.items()):
        found = b.items.get(resolve(tx, key, key_vt, b), (None, None))[1]
        if found is None or not (value.same_object(tx, found) or call_operator(
                tx, operator.eq, [value, found]).truthy(tx)):
            return False
    return not ordered or _same_order(tx, a, b)


def _same_order(tx: Tx, a: DictVariable, b: DictVariable) -> bool:
    """Whether two OrderedDicts hold equal keys in the same order (each pair compared by ``==``, identity first)."""
    return all(x == y or EqualityKey in (type(x), type(y)) and call_operator(tx, operator.eq, [x_vt, y_vt]).truthy(tx)
               for (x, (x_vt, _)), (y, (y_vt, _)) in zip(a.items.items(), b.items.items()))


def dict_union(tx: Tx, a: DictVariable, b: DictVariable) -> DictVariable:
    """``a | b``: ``b``'s kind (class, default factory) when its class is a
    proper subclass of ``a``'s (its ``__ror__`` goes first: OrderedDict,
    defaultdict), else ``a``'s; ``a``'s items updated with ``b``'s."""
    b_first = b.dict_cls is not a.dict_cls and issubclass(b.dict_cls, a.dict_cls)
    merged = (b if b_first else a).empty_like()
    for key, value in [*a.items.values(), *b.items.values()]:
        merged.store(tx, key, value)
    return merged


def _flag(args: Sequence[VT], index: int, kwargs: dict[str, VT], name: str, default: Any) -> Any:
    """Constant value of an optional positional-or-keyword argument."""
    if len(args) > index:
        return args[index].as_python_constant()
    return kwargs[name].as_python_constant() if name in kwargs else default


def apply_by_clear_update(codegen: PyCodegen, source: Any, temp: str) -> None:
    """``source.clear(); source.update(temp)`` in the generated code."""
    for method, args in (("clear", ()), ("update", (temp,))):
        codegen.load_source(source)
        codegen.emit("LOAD_METHOD", method)
        for arg in args:
            codegen.load_local(arg)
        codegen.call(len(args))
        codegen.emit("POP_TOP")


