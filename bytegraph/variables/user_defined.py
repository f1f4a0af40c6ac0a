"""User-defined classes and their instances.

Attribute reads follow Python's lookup order: data descriptors of the class
(``property`` getters are inlined), then the instance ``__dict__`` (read through
a source, so guarded, or the value stored earlier in the trace), then other
class attributes (functions become bound methods), then ``__getattr__``.
"""
from __future__ import annotations

import collections
import functools
import inspect
import types

import torch
from typing import TYPE_CHECKING, Any, Sequence


from bytegraph.breaks import unimplemented, user_error
from bytegraph.graph.side_effects import DELETED
from bytegraph.guards.guards import DictContains, DictKeysMatch, IdMatch
from bytegraph.guards.source import AttrSource, ConstSource, ConvertSource, GetItemSource
from bytegraph.variables import builtin_bases, misc
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.containers.dicts import DictBaseView, DictVariable
from bytegraph.variables.containers.iterators import PythonIteratorVariable
from bytegraph.variables.constant import ConstantVariable, getattr_or_raise, raise_traced, raise_traced_from
from bytegraph.variables.exceptions import TracedException
from bytegraph.variables.functions import PartialVariable, UserFunctionVariable, UserMethodVariable
from bytegraph.variables.torch import AutogradFunctionApplyVariable

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker
_MISSING = object()
#: library classes that list a ``__getattribute__`` of their own which is
#: ``PyObject_GenericGetAttr`` (their C type slots name it explicitly:
#: Modules/_collectionsmodule.c, Objects/namespaceobject.c, Modules/_functoolsmodule.c)
_GENERIC_GETATTR_TYPES = (collections.defaultdict, collections.deque, types.SimpleNamespace, functools.partial)
_TUPLEGETTER = type(collections.namedtuple("_Probe", "a").a)  # a namedtuple field: the item at its index
#: methods of C types, and the type flag of classes made by a class statement
_C_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType)
_HEAPTYPE = 1 << 9
_TORCH_TENSOR_CLASSES = (torch.Tensor, torch._C.TensorBase)


def python_iterator(tx: Tx, iterator: VT) -> PythonIteratorVariable | None:
    """``iterator`` as a lazily stepped iterator when it is a user object with a Python ``__next__``."""
    if not isinstance(iterator, UserDefinedObjectVariable):
        return None
    next_fn = iterator.special_method(tx, "__next__")
    if not isinstance(next_fn, types.FunctionType):
        return None
    return PythonIteratorVariable(iterator, UserMethodVariable(next_fn, iterator))


_TYPE_MRO, _TYPE_DICT = type.__dict__["__mro__"], type.__dict__["__dict__"]


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


def object_has_attr(tx: Tx, obj: VT, name: str, getattr_dicts: Sequence[str] = ()) -> bool:
    """``hasattr(obj, name)`` for a user object or an ``nn.Module`` (a VT with
    ``value``): a pending store or delete in the trace answers first; for an
    object read from a source, guards that the dict the attribute was found in
    still holds it, or that the dicts it could appear in (the instance dict, the
    class's MRO, and ``getattr_dicts``: instance-dict entries a
    ``__getattr__`` reads) still lack it."""
    pending = tx.output.side_effects.pending_attr(obj, name)
    if pending is not None:
        return pending is not DELETED
    if obj.source is None:
        cls = obj.python_type()
        attr = class_attribute(cls, name)
        guard_class_lookup(tx, cls, name, attr)
        if not isinstance(obj, NewObjectVariable):
            return hasattr(obj.value, name)
        if obj.instance_attr(tx, name) is not None:
            return True
        if isinstance(attr, types.MemberDescriptorType):  # an unset __slots__ entry
            return False
        getter = inspect.isdatadescriptor(attr) or (
            attr is _MISSING and class_attribute(cls, "__getattr__") is not _MISSING)
        if getter:  # a property, descriptor or __getattr__ answers: run it, as hasattr does
            try:
                obj.var_getattr(tx, name)
            except TracedException as e:
                if issubclass(e.exc.exc_type, AttributeError):
                    return False
                raise
            return True
        return attr is not _MISSING
    instance_dict = getattr(obj.value, "__dict__", None)
    guarded_dicts = [(AttrSource(obj.source, "__dict__"), instance_dict)] if isinstance(
        instance_dict, dict) else []
    if instance_dict is not None and name in instance_dict:
        tx.output.guards.add(DictContains(guarded_dicts[0][0], name, True))
        return True
    attr = class_attribute(type(obj.value), name)
    guard_class_lookup(tx, type(obj.value), name, attr)
    if attr is not _MISSING:
        return True
    guarded_dicts += [(AttrSource(obj.source, h), obj.value.__dict__[h]) for h in getattr_dicts]
    for source, holder in guarded_dicts:
        present = name in holder
        tx.output.guards.add(DictContains(source, name, present))
        if present:
            return True
    return hasattr(obj.value, name)


def bind_class_attribute(tx: Tx, owner: VT, cls: type, name: str, attr: Any) -> VT:
    """Apply the descriptor protocol of class attribute ``attr`` to ``owner``
    (an instance VT), inlining Python-level getters."""
    if isinstance(attr, (types.FunctionType, staticmethod, classmethod, property)):
        guard_class_attribute(tx, owner, name, attr)
    if isinstance(attr, staticmethod):
        return tx.wrap_const(attr.__func__)
    if isinstance(attr, classmethod):
        return UserMethodVariable(attr.__func__, tx.wrap_const(cls)) if isinstance(
            attr.__func__, types.FunctionType
        ) else tx.wrap_const(getattr(cls, name))
    if isinstance(attr, types.FunctionType):
        # sourced as ``owner.name`` when that is this function (not under super()),
        # so its closure and defaults are read through guards
        plain = owner.source is not None and class_attribute(type(owner_value(owner)), name) is attr
        return UserMethodVariable(attr, owner, AttrSource(owner.source, name) if plain else None)
    if isinstance(attr, property):
        if attr.fget is None:
            user_error(
                "AttributeError",
                context=f"unreadable property {cls.__name__}.{name}",
                hint="Read a property that has a getter.",
            )
        if isinstance(attr.fget, types.FunctionType):
            return tx.wrap_const(attr.fget).call_function(tx, [owner], {})
        if owner.source is not None and not isinstance(attr.fget, functools.partial) and not isinstance(
                class_attribute(type(attr.fget), "__call__"), types.FunctionType):
            # a getter in C (a pybind11 property's instancemethod): read natively, its value guarded
            return tx.wrap(getattr_or_raise(owner_value(owner), name), AttrSource(owner.source, name))
        # a partial or a callable object as getter: read through the property, so it is traced like any callable
        fget = tx.wrap(attr.fget, AttrSource(ConstSource(attr, f"{cls.__qualname__}.{name}"), "fget"))
        return fget.call_function(tx, [owner], {})
    if isinstance(attr, functools._lru_cache_wrapper):  # a cached function used as a method
        guard_class_attribute(tx, owner, name, attr)
        return PartialVariable(tx.wrap_const(attr), [owner], {})
    if isinstance(attr, types.MemberDescriptorType) and isinstance(owner, UserDefinedObjectVariable):  # __slots__
        return _slot_value(tx, owner, cls, name, attr)
    objclass = getattr(attr, "__objclass__", None)
    if isinstance(objclass, type) and issubclass(objclass, (dict, tuple, list)) and isinstance(
            owner, UserDefinedObjectVariable):
        return builtin_bases.SlotMethodVariable(objclass, name, owner)
    if type(attr) is _TUPLEGETTER and isinstance(owner, UserDefinedObjectVariable):
        return owner.seq_storage(tx).getitem(tx, ConstantVariable(attr.__reduce__()[1][0]))
    builtin_method = isinstance(  # or a C type's getset (``deque.maxlen``): read natively, value guarded
        attr,
        (types.MethodDescriptorType, types.WrapperDescriptorType, types.BuiltinFunctionType,
         types.ClassMethodDescriptorType, types.GetSetDescriptorType),
    )
    if builtin_method and owner.source is not None:
        return tx.wrap(getattr(owner_value(owner), name), AttrSource(owner.source, name))
    if builtin_method or hasattr(type(attr), "__get__"):
        unimplemented(
            gb_type="unsupported descriptor",
            context=f"{cls.__name__}.{name} ({type(attr).__name__})",
            explanation="bytegraph does not model this kind of class attribute.",
        )
    if owner.source is not None:
        return tx.wrap(attr, AttrSource(AttrSource(owner.source, "__class__"), name))
    guard_class_lookup(tx, cls, name, attr)  # an object made in the trace: its class still answers attr
    return tx.wrap(attr, AttrSource(ConstSource(cls, cls.__qualname__), name))


def _slot_value(tx: Tx, owner: UserDefinedObjectVariable, cls: type, name: str, slot: Any) -> VT:
    """``owner.name`` for a ``__slots__`` entry: what the trace stored, else the real value."""
    stored = owner.instance_attr(tx, name) if isinstance(owner, NewObjectVariable) else (
        tx.output.side_effects.pending_attr(owner, name))
    if stored is not None and stored is not DELETED:
        return stored
    if stored is DELETED or isinstance(owner, NewObjectVariable):
        raise_traced(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}")  # an unset slot
    try:
        value = slot.__get__(owner_value(owner), cls)
    except AttributeError as e:
        raise_traced_from(e)
    return tx.wrap(value, AttrSource(owner.source, name)) if owner.source is not None else tx.wrap_const(value)


def owner_value(vt: VT) -> Any:
    return vt.value  # type: ignore[attr-defined]


class UserDefinedClassVariable(VariableTracker):
    """A class object (not torch's, not a builtin container type)."""

    def __init__(self, cls: type, source=None):
        super().__init__(source)
        self.value = cls

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def truthy(self, tx: Tx) -> bool:
        return True

    def var_getattr(self, tx: Tx, name: str) -> VT:
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is DELETED:
            raise_traced(AttributeError, f"type object {self.value.__name__!r} has no attribute {name!r}")
        if pending is not None:
            return pending
        if name == "apply" and issubclass(self.value, torch.autograd.Function):
            return AutogradFunctionApplyVariable(self.value)
        attr = class_attribute(self.value, name)
        if attr is _MISSING:  # an attribute of the metaclass (``__name__``, ``__mro__``...), or none
            if not hasattr(self.value, name):
                guard_class_lookup(tx, self.value, name, _MISSING)  # AttributeError until a class gains it
            return tx.wrap_const(getattr_or_raise(self.value, name))
        if isinstance(attr, (staticmethod, classmethod)):
            guard_class_lookup(tx, self.value, name, attr)
        if isinstance(attr, staticmethod):
            return tx.wrap_const(attr.__func__)
        if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
            return UserMethodVariable(attr.__func__, self)
        if isinstance(attr, types.FunctionType):
            src = AttrSource(self.source, name) if self.source else None
            return UserFunctionVariable(attr, src)
        if isinstance(attr, _C_METHODS) and attr.__objclass__ is self.value and not self.value.__flags__ & _HEAPTYPE:
            return builtin_bases.SlotMethodVariable(self.value, name, None)  # ``list_iterator.__length_hint__(it)``
        src = AttrSource(self.source, name) if self.source else None
        value = getattr_or_raise(self.value, name)
        return tx.wrap(value, src) if src else tx.wrap_const(value)

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return tx.construct_object(self, args, kwargs)

    def has_attr(self, tx: Tx, name: str) -> bool:
        """``hasattr(cls, name)``: a pending store or delete answers first; the
        lookup through the MRO is guarded."""
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is not None:
            return pending is not DELETED
        guard_class_lookup(tx, self.value, name, class_attribute(self.value, name))
        return hasattr(self.value, name)

    def store_attr(self, tx: Tx, name: str, value: VT) -> None:
        """``cls.name = value`` (a side effect on the class, replayed after the
        graph) when the metaclass stores plainly and ``name`` is no descriptor
        of the metaclass."""
        meta = type(self.value)
        if meta.__setattr__ is not type.__setattr__ or inspect.isdatadescriptor(class_attribute(meta, name)) or (
                self.source is None):
            unimplemented(
                gb_type="unsupported attribute store",
                context=f"setting {name!r} on class {self.value.__qualname__}",
                explanation="The class's metaclass customises attribute stores, or the class has no source.",
                hints=("Set the class attribute outside the compiled function.",),
            )
        tx.output.side_effects.store_attr(self, name, value)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
        else:
            codegen.load_const(self.value)

    def __repr__(self) -> str:
        return f"UserDefinedClassVariable({self.value.__qualname__})"


class UserDefinedObjectVariable(builtin_bases.BaseTypeOperators, VariableTracker):
    """An instance of a user class that existed before the call (read from a source).

    Attribute reads follow Python's lookup (see the module docstring); reads of
    the instance ``__dict__`` are guarded through the source. Stores go through
    a Python ``__setattr__`` override when the class has one (inlined), and
    end as side effects replayed on the real object.
    """

    mutable = True

    def __init__(self, value: Any, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    # ---- instance storage (what differs for objects created in the trace) -----------
    def instance_attr(self, tx: Tx, name: str) -> VT | None:
        """The instance ``__dict__`` entry ``name`` as a VT, or None when absent."""
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is DELETED:
            return None
        if pending is not None:
            return pending
        instance_dict = getattr(self.value, "__dict__", None)
        if instance_dict is None or name not in instance_dict:
            guard_not_in_instance_dict(tx, self, name)
            return None
        if self.source is None:
            return tx.wrap_const(instance_dict[name])
        return tx.wrap(instance_dict[name], AttrSource(self.source, name))

    def instance_dict(self, tx: Tx) -> VT:
        if self.source is None:
            return super().var_getattr(tx, "__dict__")
        return tx.wrap(self.value.__dict__, AttrSource(self.source, "__dict__"))

    def attribute_items(self, tx: Tx) -> list[tuple[str, VT]]:
        """The instance ``__dict__``'s current entries, in order, as VTs (what
        the trace stored or deleted so far included); its keys are guarded."""
        if self.source is None:
            unimplemented(
                gb_type="unsupported copy",
                context=f"copy of {self} that has no source",
                explanation="bytegraph cannot enumerate the attributes of this object.",
                hints=("Copy the object outside the compiled function.",),
            )
        names = list(getattr(self.value, "__dict__", {}))
        tx.output.guards.add(DictKeysMatch(AttrSource(self.source, "__dict__"), dict, tuple(names)))
        names += [n for n in tx.output.side_effects.pending_attr_names(self) if n not in names]
        return [(name, vt) for name in names if (vt := self.instance_attr(tx, name)) is not None]

    def store_raw(self, tx: Tx, name: str, value: VT) -> None:
        """``object.__setattr__(self, name, value)``."""
        tx.output.side_effects.store_attr(self, name, value, raw=self._custom("__setattr__"))

    def has_attr(self, tx: Tx, name: str) -> bool:
        return object_has_attr(tx, self, name)

    def delete_attr(self, tx: Tx, name: str) -> None:
        """``del obj.name``: through a Python ``__delattr__`` override (inlined),
        else from the instance dict (not descriptors)."""
        cls = self.python_type()
        delattr_fn = class_attribute(cls, "__delattr__")
        if isinstance(delattr_fn, types.FunctionType):
            UserMethodVariable(delattr_fn, self).call_function(tx, [ConstantVariable(name)], {})
            return
        if delattr_fn is object.__delattr__ and not inspect.isdatadescriptor(class_attribute(cls, name)):
            self.delete_raw(tx, name)
            return
        super().delete_attr(tx, name)

    def delete_raw(self, tx: Tx, name: str) -> None:
        """``object.__delattr__(self, name)``: from the instance dict, guarded on
        whether the real object had the attribute."""
        if self.source is None:
            unimplemented(
                gb_type="attribute delete",
                context=f"del {self}.{name}",
                explanation="bytegraph cannot delete attributes of this object, which has no source.",
                hints=("Move the del out of the compiled function.",),
            )
        existed = name in getattr(self.value, "__dict__", {})
        tx.output.guards.add(DictContains(AttrSource(self.source, "__dict__"), name, existed))
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is DELETED or (pending is None and not existed):
            _no_attribute(self.python_type(), name)
        tx.output.side_effects.delete_attr(self, name, existed)

    def dict_storage(self, tx: Tx) -> VT:
        """The plain-dict contents of an instance of a dict subclass."""
        if self.source is None:
            unsupported_base(self.python_type(), "dict storage")
        # the base dict's own storage, read without the subclass's overrides (also in guards)
        if getattr(self, "_dict", None) is None:  # one view per object: its mutations are seen by later reads
            self._dict = DictBaseView(dict.copy(self.value), ConvertSource(self.source, dict.copy, "dict.copy"),
                                      self.source)
        return self._dict

    def seq_storage(self, tx: Tx) -> VT:
        """The plain tuple/list contents of an instance of a tuple or list subclass."""
        if self.source is None:
            unsupported_base(self.python_type(), "sequence storage")
        if getattr(self, "_seq", None) is None:
            self._seq = builtin_bases.read_storage(tx, self.value, self.source)
        return self._seq

    def _custom(self, dunder: str) -> bool:
        return isinstance(class_attribute(self.python_type(), dunder), types.FunctionType)

    # ---- attributes ----------------------------------------------------------------------
    def var_getattr(self, tx: Tx, name: str) -> VT:
        cls = self.python_type()
        getattribute = class_attribute(cls, "__getattribute__")
        if isinstance(getattribute, types.FunctionType):
            return UserMethodVariable(getattribute, self).call_function(tx, [ConstantVariable(name)], {})
        generic = isinstance(getattribute, types.WrapperDescriptorType) and (
            getattribute.__objclass__.__module__ == "builtins" or getattribute.__objclass__ in _GENERIC_GETATTR_TYPES
        )
        if not generic:
            unimplemented(
                gb_type="custom __getattribute__",
                context=f"{cls.__qualname__}.__getattribute__",
                explanation="This object's class overrides __getattribute__ in C; bytegraph cannot trace it.",
            )
        return self.generic_getattr(tx, name)

    def generic_getattr(self, tx: Tx, name: str) -> VT:
        """``object.__getattribute__(self, name)`` then ``__getattr__``."""
        cls = self.python_type()
        if name == "__dict__":
            return self.instance_dict(tx)
        if name == "__class__":
            return tx.wrap_const(cls)
        attr = class_attribute(cls, name)
        if attr is not _MISSING and inspect.isdatadescriptor(attr):
            return bind_class_attribute(tx, self, cls, name, attr)
        found = self.instance_attr(tx, name)
        if found is not None:
            return found
        if attr is not _MISSING:
            return bind_class_attribute(tx, self, cls, name, attr)
        getattr_fn = self.special_method(tx, "__getattr__")
        if isinstance(getattr_fn, types.FunctionType):
            return UserMethodVariable(getattr_fn, self).call_function(tx, [ConstantVariable(name)], {})
        guard_class_lookup(tx, cls, name, _MISSING)  # AttributeError until a class gains the attribute
        _no_attribute(cls, name)

    def store_attr(self, tx: Tx, name: str, value: VT) -> None:
        """``self.name = value``: through a Python ``__setattr__`` or a property
        setter when the class defines one (inlined), else a plain store."""
        cls = self.python_type()
        setattr_fn = class_attribute(cls, "__setattr__")
        if isinstance(setattr_fn, types.FunctionType):
            UserMethodVariable(setattr_fn, self).call_function(tx, [ConstantVariable(name), value], {})
            return
        self.generic_setattr(tx, name, value)

    def generic_setattr(self, tx: Tx, name: str, value: VT) -> None:
        """``object.__setattr__(self, name, value)``: data descriptors of the class
        first (property setters are inlined), else the instance dict."""
        cls = self.python_type()
        attr = class_attribute(cls, name)
        if isinstance(attr, property):
            if attr.fset is None:
                raise_traced(AttributeError, f"property {name!r} of {cls.__qualname__!r} object has no setter")
            tx.wrap_const(attr.fset).call_function(tx, [self, value], {})
            return
        if inspect.isdatadescriptor(attr) and not isinstance(attr, types.MemberDescriptorType):
            unimplemented(
                gb_type="unsupported attribute store",
                context=f"setting {name!r} on {cls.__qualname__} ({type(attr).__name__} descriptor)",
                explanation="This assignment runs a descriptor bytegraph does not model.",
                hints=("Move the assignment out of the compiled function.",),
            )
        if cls.__dictoffset__ == 0 and not isinstance(attr, types.MemberDescriptorType):  # __slots__, no __dict__
            raise_traced(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}{_SLOTTED_STORE_SUFFIX}")
        self.store_raw(tx, name, value)

    def call_slot(self, tx: Tx, base: type, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        """``base.name(self, *args)`` for a builtin base type, bypassing Python overrides."""
        if base is object:
            if name == "__getattribute__":
                return self.generic_getattr(tx, args[0].as_python_constant())
            if name == "__setattr__":
                self.generic_setattr(tx, args[0].as_python_constant(), args[1])
                return ConstantVariable(None)
            if name == "__delattr__":
                self.delete_raw(tx, args[0].as_python_constant())
                return ConstantVariable(None)
            cls = self.python_type()
            if name == "__init__" and (not (args or kwargs) or cls.__new__ is not object.__new__):
                return ConstantVariable(None)  # object_init ignores arguments a __new__ of the class took
        if issubclass(base, dict) and issubclass(self.python_type(), dict):
            if name == "__init__":
                return self.dict_storage(tx).call_method(tx, "update", args, kwargs)
            return self.dict_storage(tx).call_method(tx, name, args, kwargs)
        if base in (tuple, list) and issubclass(self.python_type(), base):
            return builtin_bases.call_base_method(tx, self.seq_storage(tx), base, name, args, kwargs)
        return unsupported_base(base, name)

    # ---- protocols -------------------------------------------------------------------------
    def special_method(self, tx: Tx, name: str) -> Any:
        """``type(self).name`` as Python's implicit special-method lookup finds it
        (on the class, never the instance), guarded so that replacing or
        adding it on a class recompiles; _MISSING when absent."""
        cls = self.python_type()
        attr = class_attribute(cls, name)
        guard_class_lookup(tx, cls, name, attr)
        return attr

    def python_method(self, tx: Tx, name: str) -> VT | None:
        """The special method ``name`` bound to self when it is a Python function, else None."""
        fn = self.special_method(tx, name)
        return UserMethodVariable(fn, self) if isinstance(fn, types.FunctionType) else None

    def enter(self, tx: Tx) -> VT:
        """``with self``: inline ``__enter__``."""
        return self._context_method(tx, "__enter__").call_function(tx, [], {})

    def exit(self, tx: Tx, args: Sequence[VT]) -> VT:
        """Leaving ``with self``: inline ``__exit__(exc_type, exc, traceback)``."""
        padded = list(args) + [ConstantVariable(None)] * (3 - len(args))
        return self._context_method(tx, "__exit__").call_function(tx, padded, {})

    def _context_method(self, tx: Tx, name: str) -> VT:
        method = self.python_method(tx, name)
        if method is None:
            unimplemented(
                gb_type="unsupported context manager",
                context=f"with {self.python_type().__qualname__} ({name} is not written in Python)",
                explanation="bytegraph traces context managers whose __enter__/__exit__ are Python functions.",
                hints=("Move the with block out of the compiled function.",),
            )
        return method

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        call = self.special_method(tx, "__call__")
        if isinstance(call, types.FunctionType):
            return tx.inline_call(UserMethodVariable(call, self), [self, *args], kwargs)
        return super().call_function(tx, args, kwargs)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name.startswith("__") and name.endswith("__"):  # a protocol (len(), obj[i]...): the class's method
            method = self.python_method(tx, name)
            if method is not None:
                result = method.call_function(tx, args, kwargs)
                if name == "__len__" and result.is_python_constant():
                    return ConstantVariable(checked_special_result(name, result.as_python_constant()))
                return result
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def truthy(self, tx: Tx) -> bool:
        cls = self.python_type()
        for dunder in ("__bool__", "__len__"):
            fn = self.special_method(tx, dunder)
            if fn is not _MISSING:
                if isinstance(fn, types.FunctionType):
                    result = UserMethodVariable(fn, self).call_function(tx, [], {}).as_python_constant()
                    return bool(checked_special_result(dunder, result))
                if issubclass(cls, dict):
                    return self.dict_storage(tx).truthy(tx)
                if builtin_bases.leaves_to_base(self, tx, dunder):
                    return self.seq_storage(tx).truthy(tx)
                return super().truthy(tx)
        return True

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return self.special_method(tx, "__iter__") is not _MISSING

    def lazy_iterator(self, tx: Tx) -> VT | None:
        """``iter(self)`` through a Python ``__iter__`` (None without one): stepped
        one ``__next__`` at a time when it returns a Python iterator."""
        iter_fn = self.special_method(tx, "__iter__")
        if not isinstance(iter_fn, types.FunctionType):
            return None
        iterator = UserMethodVariable(iter_fn, self).call_function(tx, [], {})
        if not hasattr(iterator.python_type(), "__next__"):
            raise_traced(TypeError, f"iter() returned non-iterator of type '{iterator.python_type().__name__}'")
        return python_iterator(tx, iterator) or iterator

    def str_text(self, tx: Tx) -> VT | None:
        """``str(self)`` when the class answers it in Python: its ``__str__``, or, with
        object's ``__str__``, its ``__repr__`` (``Objects/object.c``: ``PyObject_Str``);
        object's repr (it holds the address) is made after the graph; None when other C code would answer."""
        method = self.python_method(tx, "__str__")
        if method is None and self.special_method(tx, "__str__") is object.__str__:
            method = self.python_method(tx, "__repr__")
            if self.special_method(tx, "__repr__") is object.__repr__:
                return misc.RuntimeStrVariable(self)
        if method is None:
            return None
        result = method.call_function(tx, [], {})
        if not (result.is_python_constant() and isinstance(result.as_python_constant(), str)):
            raise_traced(TypeError, f"__str__ returned non-string (type {result.python_type().__name__})")
        return result

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        iterator = self.lazy_iterator(tx)
        if iterator is not None:
            return tx.unpack(iterator)
        if issubclass(self.python_type(), dict):
            return self.dict_storage(tx).unpack_var_sequence(tx)
        if builtin_bases.leaves_to_base(self, tx, "__iter__"):
            return self.seq_storage(tx).unpack_var_sequence(tx)
        return super().unpack_var_sequence(tx)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        super().reconstruct(codegen)

    def __repr__(self) -> str:
        return f"UserDefinedObjectVariable({self.python_type().__qualname__})"


class NewObjectVariable(UserDefinedObjectVariable):
    """An instance of a user class created during the trace.

    Its instance dict is a :class:`DictVariable` (so ``obj.__dict__`` is live);
    instances of dict subclasses also hold their dict contents. When the object
    outlives the graph it is rebuilt without running ``__init__`` again:
    the base type's ``__new__``, then ``object.__setattr__`` per attribute and
    the base dict's ``__setitem__`` per item.
    """

    def __init__(self, cls: type):
        super().__init__(None)
        self.cls = cls
        self.attrs = DictVariable({})
        self.dict_items = DictVariable({}) if issubclass(cls, dict) else None
        self.seq_items = builtin_bases.new_storage(cls)  # a tuple/list subclass's items

    def python_type(self) -> type:
        return self.cls

    def instance_attr(self, tx: Tx, name: str) -> VT | None:
        entry = self.attrs.items.get(name)
        return entry[1] if entry is not None else None

    def instance_dict(self, tx: Tx) -> VT:
        return self.attrs

    def attribute_items(self, tx: Tx) -> list[tuple[str, VT]]:
        return [(name, value) for name, (_, value) in self.attrs.items.items()]

    def store_raw(self, tx: Tx, name: str, value: VT) -> None:
        self.attrs.items[name] = (ConstantVariable(name), value)

    def delete_raw(self, tx: Tx, name: str) -> None:
        if name not in self.attrs.items:
            _no_attribute(self.cls, name)
        del self.attrs.items[name]

    def dict_storage(self, tx: Tx) -> VT:
        if self.dict_items is None:
            unsupported_base(self.cls, "dict storage")
        return self.dict_items

    def seq_storage(self, tx: Tx) -> VT:
        return self.seq_items

    def reconstruct(self, codegen: PyCodegen) -> None:
        builtin_base = next(k for k in self.cls.__mro__ if k.__module__ == "builtins" or k is collections.OrderedDict)
        if self.seq_items is not None:
            builtin_bases.reconstruct_new(codegen, self.cls, self.seq_items)
        else:
            codegen.load_callable(builtin_base.__new__)
            codegen.load_const(self.cls)
            codegen.call(1)
        if builtin_base is list and self.seq_items.items:
            codegen.call_on_top(list.extend, self.seq_items)
        for key, value in self.attrs.items.values():
            codegen.call_on_top(object.__setattr__, key, value)
        for key, value in (self.dict_items.items.values() if self.dict_items is not None else ()):
            codegen.call_on_top(builtin_base.__setitem__, key, value)

    def __repr__(self) -> str:
        return f"NewObjectVariable({self.cls.__qualname__})"


def checked_special_result(name: str, result: Any) -> Any:
    """What Python makes of ``__bool__``/``__len__``'s result: ``len()`` gives an
    int (``True`` -> 1); a result of the wrong type or a negative length raises
    eager's TypeError/ValueError in the traced program."""
    if name == "__bool__" and type(result) is not bool:
        raise_traced(TypeError, f"__bool__ should return bool, returned {type(result).__name__}")
    if name == "__len__":
        if not isinstance(result, int):
            raise_traced(TypeError, f"'{type(result).__name__}' object cannot be interpreted as an integer")
        if result < 0:
            raise_traced(ValueError, "__len__() should return >= 0")
        return int(result)
    return result


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


_SLOTTED_STORE_SUFFIX = _slotted_store_suffix()


def _no_attribute(cls: type, name: str) -> None:
    """Raise eager's AttributeError for a missing instance attribute."""
    raise_traced(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}")


def unsupported_base(base: type, name: str) -> VT:
    unimplemented(
        gb_type="unsupported builtin base method",
        context=f"{base.__qualname__}.{name} on a user object",
        explanation="bytegraph does not model this method of a builtin base class on user objects.",
        hints=("Move this code out of the compiled function.",),
    )
