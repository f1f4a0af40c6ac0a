"""``__slots__`` entries of user objects: reading one (what the trace stored,
else the real object's value, whether it is set guarded) and the message CPython
gives for a store on an object without ``__dict__``. Imports
:mod:`.user_objects` as a module: each calls the other."""
from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Any

from bytegraph.graph.side_effects import DELETED
from bytegraph.guards.guards import RecomputedMatch
from bytegraph.guards.source import AttrSource
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import raise_traced, raise_traced_from
from bytegraph.variables.objects import user_objects
from bytegraph.variables.objects.class_lookup import owner_value
from bytegraph.variables.tx import wrap, wrap_const
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker


def _member_owner_name(cls: type) -> str:
    """How an unset slot's AttributeError names the class: its name, and from 3.13 its
    fully qualified name (``PyType_GetFullyQualifiedName``: no module for builtins and __main__)."""
    if sys.version_info < (3, 13):
        return cls.__name__
    return cls.__qualname__ if cls.__module__ in ("builtins", "__main__") else f"{cls.__module__}.{cls.__qualname__}"


def slot_value(tx: Tx, owner: VT, cls: type, name: str, slot: Any) -> VT:
    """``owner.name`` for a ``__slots__`` entry: what the trace stored, else the real value."""
    stored = owner.slot_values.get(name) if isinstance(owner, user_objects.NewObjectVariable) else (
        tx.output.side_effects.pending_attr(owner, name))
    if stored is not None and stored is not DELETED:
        return stored
    if stored is DELETED or isinstance(owner, user_objects.NewObjectVariable):
        raise_traced(AttributeError, f"{_member_owner_name(cls)!r} object has no attribute {name!r}")  # unset
    try:
        value = slot.__get__(owner_value(owner), cls)
    except AttributeError as e:
        if owner.source is not None:
            guard_slot_set(tx, owner, name, slot)
        raise_traced_from(e)
    return wrap(tx, value, AttrSource(owner.source, name)) if owner.source is not None else wrap_const(tx, value)


def _slot_is_set(obj: Any, slot: Any) -> bool:
    try:
        slot.__get__(obj)
    except AttributeError:
        return False
    return True


def guard_slot_set(tx: Tx, owner: VT, name: str, slot: Any) -> bool:
    """Whether the ``__slots__`` entry ``slot`` of the object read from
    ``owner.source`` is set, guarded."""
    present = _slot_is_set(owner.value, slot)
    tx.output.guards.add(RecomputedMatch(owner.source, (owner.source,), functools.partial(_slot_is_set, slot=slot),
                                         present, f"whether slot {name!r} is set"))
    return present


class _Slotted:
    __slots__ = ()


def _slotted_store_suffix() -> str:
    """What the running Python adds to "object has no attribute" when storing
    on an object without ``__dict__`` (3.13: "and no __dict__ for setting new
    attributes")."""
    try:
        _Slotted().name = None  # type: ignore[attr-defined]
    except AttributeError as e:
        return str(e).split("'name'", 1)[1]
    raise AssertionError("a class with empty __slots__ took a new attribute")  # pragma: no cover


SLOTTED_STORE_SUFFIX = _slotted_store_suffix()
