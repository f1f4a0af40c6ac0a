"""The hashable stand-ins dicts and sets are keyed by in the trace, and how a
lookup finds the one a key matches, as CPython's ``lookdict``/``set_lookkey``
do: a constant stands for itself; an object compared by identity (a tensor, a
module, a plain user object) by an :class:`IdentityKey`; an object whose class
has its own ``__eq__`` by an :class:`EqualityKey`, which carries the hash its
``__hash__`` returned in the trace.

A lookup of a key held by an :class:`EqualityKey`, or of any key in a container
holding one, compares the key with each held key of the same hash, in
insertion order: the same object is found without a comparison; otherwise the
held key's ``__eq__`` is called with the new key (reflected as CPython's
``PyObject_RichCompare`` does), traced, its errors the program's. A comparison
that changes the container starts the lookup again, as CPython's does."""
from __future__ import annotations

import operator
import types
from typing import TYPE_CHECKING, Any, Iterable, Protocol

import torch

from bytegraph.breaks import unimplemented
from bytegraph.variables.constant import ConstantVariable, raise_traced_from
from bytegraph.variables.objects.class_lookup import class_attribute
from bytegraph.variables.operators import call_operator
if TYPE_CHECKING:
    from bytegraph.variables.base import VariableTracker as VT
    from bytegraph.variables.tx import Tx


class IdentityKey:
    """A key compared by the identity of the object it stands for: its
    ``id()``, or for an object made in the trace, its VT's."""

    __slots__ = ("ident",)

    def __init__(self, ident: Any):
        self.ident = ident

    def __hash__(self) -> int:
        return hash(self.ident)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.ident == self.ident


class EqualityKey(IdentityKey):
    """A key whose class has its own ``__eq__``: the object's identity and the
    hash its ``__hash__`` gave (a container of such keys lays them out as
    CPython does: by that hash). Two are the same key when they stand for the
    same object hashed alike; equal distinct objects are matched by
    :func:`resolve`, which calls their ``__eq__``."""

    __slots__ = ("hash",)

    def __init__(self, ident: Any, hash_: int):
        super().__init__(ident)
        self.hash = hash_

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return type(other) is EqualityKey and other.ident == self.ident and other.hash == self.hash


class KeyPool(Protocol):
    """The keys a container holds, which a lookup in it compares a key with."""

    def held_keys(self) -> Iterable[Any]:
        """Each held key, in insertion order."""

    def held_vt(self, held: Any) -> VT:
        """The VT of the object a held key stands for."""

    def key_state(self) -> Any:
        """A value that changes when a key is added to or removed from the container."""

    def compares(self) -> bool:
        """Whether some held keys are :class:`EqualityKey` (a constant key is then compared with them)."""

    def probes_in_order(self) -> bool:
        """Whether CPython's lookup meets held keys of one hash in the order :meth:`held_keys`
        gives (a dict that deleted a key may have put a later one in the freed slot, met first)."""


def key_of(tx: Tx, key: VT, among: KeyPool | None = None, hashing: bool = True) -> Any:
    """The key ``key`` is looked up or stored under; among the keys of ``among``,
    the held one it matches (:func:`resolve`). An object whose class keeps
    object's ``__eq__`` but defines ``__hash__`` in Python is keyed by identity,
    its ``__hash__`` run in the trace; one whose class has its own ``__eq__`` by
    the hash its ``__hash__`` gives (``hashing``: once per lookup, as CPython's
    dict does; a key already held by a dict read from outside is not hashed
    again, and then only an identity key can be known)."""
    if key.is_python_constant():
        value = key.as_python_constant()
        try:
            hash(value)
        except TypeError as e:
            raise_traced_from(e)  # ``unhashable type: 'list'``
        hkey = value
    else:
        hkey = _object_key(tx, key, hashing)
    return hkey if among is None else resolve(tx, hkey, key, among)


def _object_key(tx: Tx, key: VT, hashing: bool) -> IdentityKey:
    cls = key.python_type()
    if issubclass(cls, torch.Tensor) or cls.__eq__ is object.__eq__ and cls.__hash__ is object.__hash__:
        return IdentityKey(_identity(tx, key))
    if cls.__eq__ is object.__eq__ and isinstance(class_attribute(cls, "__hash__"), types.FunctionType):
        if not hashing or key.hash_value(tx) is not None:  # its errors and side effects: the program's
            return IdentityKey(_identity(tx, key))
    elif hashing:
        hashed = key.hash_value(tx)  # (``__hash__ = None``: eager's TypeError)
        if isinstance(hashed, ConstantVariable):
            return EqualityKey(_identity(tx, key), hashed.value)
    unimplemented(
        gb_type="unsupported dict key",
        context=f"dict keyed by a {cls.__qualname__}, which defines its own __eq__/__hash__",
        explanation="Its hash is not known to the trace (or the key is held by a dict read from outside, "
                    "which bytegraph does not hash again), so lookups cannot be matched as CPython's are.",
        hints=("Key the dict by a constant (a string, an int) derived from the object.",),
    )


def _identity(tx: Tx, key: VT) -> Any:
    identity = key.identity(tx)
    cls = key.python_type()
    if identity is None and key.source is None and (issubclass(cls, torch.Tensor) or key.mutable):
        # made in the trace, where one VT stands for one object (as ``same_object`` answers)
        identity = ("made in the trace", id(key))
    if identity is None:
        unimplemented(gb_type="unsupported dict key", context=f"dict keyed by {key}",
                      explanation="Dict keys must be constants or objects bytegraph can compare by identity.")
    if key.source is not None:  # keys that are distinct objects now must stay distinct
        tx.output.identity_key_sources[key.source] = None
    return identity


def resolve(tx: Tx, hkey: Any, key: VT, among: KeyPool) -> Any:
    """The key of ``among`` a lookup of ``key`` (keyed ``hkey``) finds, else
    ``hkey``: the same key, or a held key of the same hash, one of the two an
    :class:`EqualityKey`, whose ``__eq__`` with ``key`` is true."""
    if type(hkey) is IdentityKey or type(hkey) is not EqualityKey and not among.compares():
        return hkey
    hashed = hkey.hash if type(hkey) is EqualityKey else hash(hkey)
    if not among.probes_in_order() and sum(1 for held in among.held_keys() if _compared(held, hkey, hashed)) > 1:
        unimplemented(
            gb_type="lookup order after a delete",
            context="a lookup among keys of one hash, with their own __eq__, in a dict that deleted a key",
            explanation="CPython reuses a deleted key's slot, so which of the keys it compares first "
                        "depends on its table layout, which bytegraph does not model.",
            hints=("Key the dict by a constant (a string, an int) derived from the object.",),
        )
    while True:
        state = among.key_state()
        for held in among.held_keys():
            if held == hkey and type(held) is type(hkey):
                return held
            if not _compared(held, hkey, hashed):
                continue
            equal = call_operator(tx, operator.eq, [among.held_vt(held), key]).truthy(tx)
            if among.key_state() != state:
                break  # the comparison changed the container: look again
            if equal:
                return held
        else:
            return hkey


def _compared(held: Any, hkey: Any, hashed: int) -> bool:
    """Whether a lookup of ``hkey`` (of hash ``hashed``) calls ``__eq__`` on ``held``."""
    return type(held) is not IdentityKey and EqualityKey in (type(held), type(hkey)) and hash(held) == hashed


def holds_equality_keys(keys: Iterable[Any]) -> bool:
    """Whether some of ``keys`` are :class:`EqualityKey` (lookups then compare)."""
    return any(type(k) is EqualityKey for k in keys)
