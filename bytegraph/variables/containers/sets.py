"""Python sets and frozensets.

A set's members are keyed as a dict's keys are (:mod:`.dict_keys`): a
constant by its value, an object hashed by identity (a tensor, a module, a
parameter, a plain user object) by an ``IdentityKey``, an object with its own
``__eq__`` by an ``EqualityKey`` (its traced hash; a lookup calls ``__eq__``). Set operations run on
the real set of keys, so membership, ``add``/``discard`` and the operators
follow CPython's hashing: a tensor is found only by identity (its hash is its
``id``), never compared with ``==``.

Iteration order is the real set's for constants and ``EqualityKey`` members
(laid out by the hashes CPython's set has); a set of more than one
member with an identity-hashed one iterates in an order fixed by ``id()``
values only known at run time, a graph break.

A set is mutable: in-trace mutations update the VT; when the VT has a source
(the object existed before the call), the mutation is recorded as a side
effect and replayed on the real object after the graph runs
(``dicts.apply_by_clear_update``).
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from bytegraph.breaks import unimplemented, user_error
from bytegraph.variables.base import VariableTracker, bad_method
from bytegraph.variables.handlers import handler_name
from bytegraph.variables.constant import ConstantVariable, raise_traced_from, unmodelled_method
from bytegraph.variables.containers.dict_views import DictViewVariable
from bytegraph.variables.containers.dict_keys import EqualityKey, IdentityKey, holds_equality_keys, key_of, resolve
from bytegraph.variables.containers.dicts import DictVariable, apply_by_clear_update
from bytegraph.variables.containers.iterators import SetIteratorVariable
from bytegraph.variables.exceptions import ExceptionVariable, TracedException
from bytegraph.variables.objects.class_lookup import class_attribute
from bytegraph.variables.tx import frozenset_members, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: operators between two sets: a new set or a bool, computed on the members' keys.
SET_OPERATORS = frozenset({
    operator.or_, operator.and_, operator.sub, operator.xor, operator.le, operator.lt, operator.ge,
    operator.gt, operator.eq, operator.ne,
})

#: in-place set operators -> the set method that performs them.
SET_INPLACE = {
    operator.ior: "update", operator.iand: "intersection_update",
    operator.isub: "difference_update", operator.ixor: "symmetric_difference_update",
}

#: set methods whose arguments are members (the others take iterables).
MEMBER_ARGUMENT_METHODS = frozenset({"add", "discard", "remove", "__contains__"})
#: the member methods that look their argument up (CPython retries an unhashable set as a frozenset)
LOOKUP_METHODS = frozenset({"discard", "remove", "__contains__"})


class _Keys:
    """The keys of some members and the VTs of the object ones; a lookup pool
    (:class:`.dict_keys.KeyPool`) of the keys of ``owner`` (the set operated on)
    and of those keyed since, which a member with its own ``__eq__`` is compared with."""

    def __init__(self, owner: SetVariable | None = None) -> None:
        self.objects: dict[IdentityKey, VT] = dict(owner.objects) if owner is not None else {}
        self.owner = owner
        #: keys met since, in order (a set built from an iterable compares each item with the earlier ones)
        self.added: dict[Any, None] = {}
        self.equality = owner is not None and holds_equality_keys(owner.values)

    def held_keys(self) -> list[Any]:
        return [*(self.owner.values if self.owner is not None else ()), *self.added]

    def held_vt(self, held: Any) -> VT:
        return self.vt(held)

    def key_state(self) -> Any:
        return frozenset(self.owner.values) if self.owner is not None else None

    def compares(self) -> bool:
        return self.equality

    def probes_in_order(self) -> bool:
        return True  # the keys are held in a real set, whose deletes and inserts are the program's

    def key(self, tx: Tx | None, item: VT, held: Any = None) -> Any:
        """The key ``item`` is held under here; ``held``: the key a set or an exact dict
        holds it under, whose hash CPython copies rather than asks again."""
        if tx is None:  # only constants are made without a translator
            return item.as_python_constant()
        key = key_of(tx, item, self) if held is None else resolve(tx, held, item, self)
        self.equality = self.equality or type(key) is EqualityKey
        if isinstance(key, IdentityKey):
            self.objects.setdefault(key, item)
        self.added[key] = None
        return key

    def lookup_key(self, tx: Tx, item: VT) -> Any:
        """The key ``in``, ``remove`` and ``discard`` look ``item`` up by: a set
        (unhashable) as the frozenset of its members, as CPython retries
        (``Objects/setobject.c``: ``set_contains``); an instance of a frozenset
        subclass that keeps frozenset's ``__hash__`` and ``__eq__`` hashes and
        compares as the frozenset of its members."""
        cls = item.python_type()
        if not issubclass(cls, (set, frozenset)) or not _hashed_as_frozenset(cls):
            return self.key(tx, item)
        members = item if isinstance(item, SetVariable) else getattr(item, "base_storage", None)
        if members is None:
            return self.key(tx, item)  # a kind that does not model its members: as any other key
        keys = frozenset(_Keys().of_iterable(tx, members if isinstance(members, SetVariable) else members(tx)))
        # (members with their own ``__eq__``: compared as keys of the set, which only a traced __eq__ can)
        return self.key(tx, item) if holds_equality_keys(keys) else keys

    def of_iterable(self, tx: Tx, iterable: VT) -> Iterable[Any]:
        """The keys of ``iterable``'s items: a set's own keys, a constant
        frozenset's or keys view's members, else each item of iterating it;
        each compared with the keys held when some have their own ``__eq__``."""
        if isinstance(iterable, SetVariable) and (self.owner is None or not holds_equality_keys(
                [*self.owner.values, *iterable.values])):
            self.objects.update(iterable.objects)
            return iterable.values
        if isinstance(iterable, SetVariable):  # a set of the members matched, for the operators
            members = _Keys(iterable)
            return type(iterable.values)(self.key(tx, members.vt(k), k) for k in list(iterable.values))
        if isinstance(iterable, DictVariable) and iterable.python_type() is dict:  # (``set_update_internal``)
            return [self.key(tx, key_vt, k) for k, (key_vt, _) in list(iterable.items.items())]
        if not _constant_operand(iterable):
            return [self.key(tx, item) for item in iterable.unpack_var_sequence(tx)]
        constant = iterable.as_python_constant()
        if self.owner is None or not holds_equality_keys(self.owner.values):
            return constant
        matched = [self.key(tx, ConstantVariable(k)) for k in constant]
        return frozenset(matched) if type(constant) is frozenset else dict.fromkeys(matched).keys()

    def vt(self, key: Any) -> VT:
        return self.objects[key] if isinstance(key, IdentityKey) else ConstantVariable(key)

    def new_set(self, keys: set | frozenset) -> SetVariable:
        result = SetVariable([], type(keys))
        result.values = type(keys)(keys)
        result.objects = {k: self.objects[k] for k in keys if isinstance(k, IdentityKey)}
        return result


def _on_keys(name: str) -> Callable[..., VT]:
    """A ``method_<name>`` handler of :class:`SetVariable`: the set method
    ``name`` run on the real set of keys; a result set is a new VT."""

    def handler(self: SetVariable, tx: Tx, *args: VT) -> VT:
        method = getattr(self.values, name, None)
        if method is None:  # a frozenset's mutators
            return bad_method(self, name)
        keys = _Keys(self)
        if name in LOOKUP_METHODS:
            operands = [keys.lookup_key(tx, a) for a in args]
        elif name in MEMBER_ARGUMENT_METHODS:
            operands = [keys.key(tx, a) for a in args]
        else:
            operands = [keys.of_iterable(tx, a) for a in args]
        keys.objects.update(self.objects)  # (members a traced ``__eq__`` added meanwhile)
        if name == "pop" and _by_identity(self.values) and len(self.values) > 1:
            _unknown_order(self, "pop()")
        try:
            result = method(*operands)
        except KeyError as e:
            if _by_identity(e.args):
                user_error("KeyError", context=f"{name} of an object not in the set", hint="Use discard().")
            raise TracedException(ExceptionVariable(KeyError, args))  # the key given, not the one looked up
        except TypeError as e:
            raise_traced_from(e)
        self.objects = {k: keys.objects[k] for k in self.values if isinstance(k, IdentityKey)}
        if result is self.values:  # frozenset.copy() is the frozenset itself
            return self
        if isinstance(result, (set, frozenset)):
            return keys.new_set(result)
        if isinstance(result, IdentityKey):
            return keys.vt(result)
        return wrap_const(tx, result)

    handler.__name__ = handler_name("method_", name)
    return handler


def _constant_operand(vt: VT) -> bool:
    """Whether ``vt`` is a set operator's operand known now other than a
    SetVariable: a constant frozenset, or a keys view of constant keys."""
    return vt.is_python_constant() and (vt.python_type() is frozenset or isinstance(vt, DictViewVariable))


def _hashed_as_frozenset(cls: type) -> bool:
    """Whether a set lookup of an instance of ``cls`` (a set or frozenset type)
    is one of the frozenset of its members: a set type left unhashable
    (retried as a frozenset), or a frozenset type that keeps frozenset's hash
    and equality."""
    if issubclass(cls, set):
        return class_attribute(cls, "__hash__") is None
    return all(class_attribute(cls, name) is vars(frozenset)[name] for name in ("__hash__", "__eq__"))


def _by_identity(keys: Iterable[Any]) -> bool:
    """Whether some of ``keys`` stand for objects hashed by identity (whose ``id()`` only run time knows)."""
    return any(type(k) is IdentityKey for k in keys)


def _unknown_order(vt: SetVariable, doing: str) -> None:
    unimplemented(
        gb_type="set order of identity-hashed members",
        context=f"{doing} on a {vt.set_cls.__name__} of {len(vt.values)} members, some hashed by identity",
        explanation="The order of such a set follows the id() of its objects, known only when the code runs.",
        hints=("Keep the objects in a list (or a dict, which keeps insertion order) when their order matters.",),
    )


class SetVariable(VariableTracker):
    """A set or frozenset. ``values`` is the real set of the members' keys
    (constants, or ``IdentityKey`` for objects hashed by identity);
    ``objects`` maps each ``IdentityKey`` to its member's VT.

    ``tx`` is needed to key members that are not constants.
    """

    mutable = True
    live_iterator = True
    rebuilds_constant = True

    def __init__(self, items: Sequence[VT], set_cls: type = set, source=None, tx: Tx | None = None):
        super().__init__(source)
        keys = _Keys()
        self.values = set_cls(keys.key(tx, i) for i in items)
        self.objects = keys.objects
        self.set_cls = set_cls

    @staticmethod
    def from_iterable(tx: Tx, iterable: VT | None, set_cls: type) -> SetVariable:
        """``set(iterable)`` / ``frozenset(iterable)``: a new set of its items."""
        keys = _Keys()
        return keys.new_set(set_cls(keys.of_iterable(tx, iterable) if iterable is not None else ()))

    def python_type(self) -> type:
        return self.set_cls

    def is_python_constant(self) -> bool:
        return not self.objects

    def as_python_constant(self) -> Any:
        if self.objects:
            return super().as_python_constant()
        return self.set_cls(self.values)

    def truthy(self, tx: Tx) -> bool:
        return bool(self.values)

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return True

    def members(self, doing: str) -> list[VT]:
        """The members in iteration order (a graph break when only run time knows it)."""
        if _by_identity(self.values) and len(self.values) > 1:
            _unknown_order(self, doing)
        keys = _Keys(self)
        return [keys.vt(k) for k in self.values]

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        return self.members("iterating")

    def copy_as(self, set_cls: type) -> SetVariable:
        """A new set of the same members (``copy.copy``)."""
        keys = _Keys(self)
        return keys.new_set(set_cls(self.values))

    def contains_op(self, tx: Tx, item: VT) -> Any:
        return self.call_method(tx, "__contains__", [item], {})

    def _operator_keys(self, tx: Tx, other: VT) -> tuple[_Keys, Any] | None:
        """The keys of a set operator's operand: a set's, a constant frozenset's,
        or a keys view's of constant keys; None for any other operand."""
        if not isinstance(other, SetVariable) and not _constant_operand(other):
            return None
        keys = _Keys(self)
        return keys, keys.of_iterable(tx, other)

    def binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``a | b``, ``a <= b``...: a new set (never an operand) or a bool; a keys
        view of constant keys takes part as the set of its keys."""
        operand = self._operator_keys(tx, other) if op in SET_OPERATORS else None
        if operand is None:
            return NotImplemented
        keys, right = operand
        return _set_result(keys, op(self.values, right))

    def reflected_binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``d.keys() | s``, ``frozenset(...) | s``...: the keys view's or the
        constant frozenset's set operators, on its constant members."""
        if op not in SET_OPERATORS or not _constant_operand(other):
            return NotImplemented
        operand = self._operator_keys(tx, other)
        if operand is None:
            return NotImplemented
        keys, left = operand
        return _set_result(keys, op(left, self.values))

    def inplace_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``s |= t``...: a set's own in-place operator (``update``...) takes a
        set or frozenset; for any other operand, and on a frozenset (which has
        none), NotImplemented: Python falls back to the binary operator."""
        if self.set_cls is not set or op not in SET_INPLACE or not issubclass(other.python_type(), (set, frozenset)):
            return NotImplemented
        if not isinstance(other, SetVariable):
            return None  # an instance of a user subclass: a graph break
        self.call_method(tx, SET_INPLACE[op], [other], {})
        return self

    MUTATORS = frozenset({"add", "discard", "remove", "update", "clear", "pop", "difference_update",
                          "intersection_update", "symmetric_difference_update"})

    unhandled_method = unmodelled_method

    def method_dunder_iter(self, tx: Tx, /) -> VT:
        return SetIteratorVariable(self)

    # mutators (MUTATORS marks the side effect) and readers, run on the real set of keys
    method_add = _on_keys("add")
    method_discard = _on_keys("discard")
    method_remove = _on_keys("remove")
    method_update = _on_keys("update")
    method_clear = _on_keys("clear")
    method_pop = _on_keys("pop")
    method_difference_update = _on_keys("difference_update")
    method_intersection_update = _on_keys("intersection_update")
    method_symmetric_difference_update = _on_keys("symmetric_difference_update")
    method_dunder_contains = _on_keys("__contains__")
    method_dunder_len = _on_keys("__len__")
    method_union = _on_keys("union")
    method_intersection = _on_keys("intersection")
    method_difference = _on_keys("difference")
    method_symmetric_difference = _on_keys("symmetric_difference")
    method_issubset = _on_keys("issubset")
    method_issuperset = _on_keys("issuperset")
    method_isdisjoint = _on_keys("isdisjoint")
    method_copy = _on_keys("copy")

    def method_dunder_init(self, tx: Tx, *args: VT, **kwargs: VT) -> VT:
        """``set.__init__`` refills the set (at most one iterable, no keywords:
        eager's TypeError); frozenset's (object's) takes anything and does nothing."""
        if self.set_cls is not set:
            return ConstantVariable(None)
        if kwargs or len(args) > 1:
            try:  # the arity error does not depend on the values: eager's own message
                set().__init__(*[()] * len(args), **dict.fromkeys(kwargs, ()))
            except TypeError as e:
                raise_traced_from(e)
        iterable = args[0] if args else None
        tx.output.side_effects.mutate(self)
        if iterable is not None and iterable.is_python_constant() and not iterable.has_unpack_var_sequence(tx):
            self.values.clear()  # eager empties the set, then finds the argument is not iterable
            self.objects = {}
        refill = SetVariable.from_iterable(tx, iterable, set)
        self.values.clear()
        self.values.update(refill.values)
        self.objects = refill.objects
        return ConstantVariable(None)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.set_cls is frozenset and not self.objects:
            codegen.load_const(frozenset(self.values))
        elif self.set_cls is frozenset:
            codegen.load_callable(frozenset)
            self.reconstruct_contents(codegen)
            codegen.call(1)
        elif self.source is not None:
            codegen.load_source(self.source)
        else:
            self.reconstruct_contents(codegen)

    def reconstruct_contents(self, codegen: PyCodegen) -> None:
        for key in self.values:  # BUILD_SET hashes the members again: any order gives the same set
            if isinstance(key, IdentityKey):
                codegen.reconstruct(self.objects[key])
            else:
                codegen.load_const(key)
        codegen.emit("BUILD_SET", len(self.values))

    def apply_contents(self, codegen: PyCodegen, temp: str) -> None:
        apply_by_clear_update(codegen, self.source, temp)

    def __repr__(self) -> str:
        return f"SetVariable({self.values!r})"


def _set_result(keys: _Keys, result: Any) -> VT:
    """A set operator's result: a new set (never an operand) or a bool."""
    if isinstance(result, (set, frozenset)):
        return keys.new_set(result)
    return ConstantVariable(result)


frozenset_members.provide(lambda value: SetVariable([ConstantVariable(v) for v in value], frozenset))
