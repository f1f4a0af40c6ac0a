"""Python's attribute lookup on a class, without running descriptors:
:func:`class_attribute` (``name`` along the MRO, or :data:`_MISSING`), and the
guards that keep a lookup made at trace time valid (the class still resolves
``name`` to the same object, the instance dict still lacks it)."""
from __future__ import annotations


from typing import TYPE_CHECKING, Any


from bytegraph.guards.guards import DictContains, IdMatch
from bytegraph.guards.source import AttrSource, ConstSource, GetItemSource
from bytegraph.variables.base import VariableTracker

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker
_MISSING = object()

_TYPE_MRO, _TYPE_DICT = type.__dict__["__mro__"], type.__dict__["__dict__"]

#: Py_TPFLAGS_HEAPTYPE: a class made by a class statement (or type()), or by C code from a spec
HEAPTYPE = 1 << 9


def python_classes_only(cls: type) -> bool:
    """Whether every class of ``cls``'s MRO but ``object`` is made by a class
    statement (no builtin base, whose C slots and storage the class would have)."""
    return all(k.__flags__ & HEAPTYPE for k in cls.__mro__[:-1])


def class_attribute(cls: type, name: str) -> Any:
    """``name`` on ``cls``'s MRO, no descriptor invoked, or _MISSING (type's own
    ``__mro__``/``__dict__``: a metaclass may shadow them with properties)."""
    namespace = next((ns for k in _TYPE_MRO.__get__(cls) if name in (ns := _TYPE_DICT.__get__(k))), None)
    return _MISSING if namespace is None else namespace[name]


def guard_not_in_instance_dict(tx: Tx, owner: VT, name: str) -> None:
    """Guard that ``owner.__dict__`` still lacks ``name``: the trace resolved
    ``owner.name`` past the instance dict (to the class, ``__getattr__``, or
    nothing), which an instance attribute set later would shadow."""
    if owner.source is not None and isinstance(getattr(owner_value(owner), "__dict__", None), dict):
        tx.output.guards.add(DictContains(AttrSource(owner.source, "__dict__"), name, False))


def guard_class_attribute(tx: Tx, owner: VT, name: str, attr: Any) -> None:
    """Guard that ``name`` on ``type(owner)`` is still ``attr`` (a method,
    property... found on the class), so replacing it on the class recompiles.

    A normal lookup is guarded through ``owner.__class__.name`` (which also sees
    a subclass overriding it later); an attribute reached through ``super()``
    is guarded as the defining class's own ``__dict__`` entry.
    """
    if owner.source is None:
        return
    cls = type(owner_value(owner))
    if class_attribute(cls, name) is attr:
        source: Any = AttrSource(AttrSource(owner.source, "__class__"), name)
        if isinstance(attr, classmethod):
            source, expected = AttrSource(source, "__func__"), attr.__func__
        else:
            expected = getattr(cls, name)
            if expected is not getattr(cls, name):  # a descriptor that builds a new object per access
                expected = _MISSING
        if expected is not _MISSING:
            tx.output.guards.add(IdMatch.of(source, expected))
            return
    klass = next((k for k in cls.__mro__ if k.__dict__.get(name) is attr), None)
    if klass is not None:
        source = GetItemSource(AttrSource(ConstSource(klass, klass.__qualname__), "__dict__"), name)
        tx.output.guards.add(IdMatch.of(source, attr))


def guard_class_lookup(tx: Tx, cls: type, name: str, attr: Any) -> None:
    """Guard that ``cls.name`` still resolves to ``attr`` (to nothing when
    ``attr`` is _MISSING): the classes of the MRO before the defining one still
    lack ``name`` and the defining class's entry is still ``attr``, so
    replacing or shadowing it on a class recompiles. Builtin classes are
    immutable and not guarded."""
    for klass in cls.__mro__:
        if klass.__module__ == "builtins":
            continue
        namespace = AttrSource(ConstSource(klass, klass.__qualname__), "__dict__")
        if attr is not _MISSING and klass.__dict__.get(name, _MISSING) is attr:
            tx.output.guards.add(IdMatch.of(GetItemSource(namespace, name), attr))
            return
        tx.output.guards.add(DictContains(namespace, name, False))


def owner_value(vt: VT) -> Any:
    return vt.value  # type: ignore[attr-defined]
