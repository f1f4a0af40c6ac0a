"""Instances of user classes: :class:`UserDefinedObjectVariable` (an object
that existed before the call, read from a source) and :class:`NewObjectVariable`
(one made in the trace), Python's descriptor protocol on their class
attributes (:func:`bind_class_attribute`), ``hasattr`` (:func:`object_has_attr`),
and :class:`SlotMethodVariable` (a builtin type's method applied to one).

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
from typing import TYPE_CHECKING, Any, Sequence

import torch

from bytegraph.breaks import unimplemented, user_error
from bytegraph.graph.side_effects import DELETED
from bytegraph.guards.guards import DictContains, DictKeysMatch
from bytegraph.guards.source import AttrSource, ConstSource
from bytegraph.variables.base import VariableTracker, bound_method_type
from bytegraph.variables.handlers import method_handler
from bytegraph.variables.callables.functions import PartialVariable, UserMethodVariable
from bytegraph.variables.constant import (
    ConstantVariable, getattr_or_raise, is_constant_value, raise_traced, raise_traced_from,
)
from bytegraph.variables.containers.dicts import DictVariable
from bytegraph.variables.exceptions import TracedException
from bytegraph.variables.objects import builtin_bases, user_classes
from bytegraph.variables.objects.class_lookup import (
    _MISSING,
    class_attribute,
    guard_class_attribute,
    guard_class_lookup,
    guard_not_in_instance_dict,
    owner_value,
)
from bytegraph.variables.objects.special_methods import SpecialMethods
from bytegraph.variables.operators import IMMUTABLE_BUILTIN_TYPES, fold, tp_name
from bytegraph.variables.tx import wrap, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker
#: library classes that list a ``__getattribute__`` of their own which is
#: ``PyObject_GenericGetAttr`` (their C type slots name it explicitly:
#: Modules/_collectionsmodule.c, Objects/namespaceobject.c, Modules/_functoolsmodule.c)
_GENERIC_GETATTR_TYPES = (collections.defaultdict, collections.deque, types.SimpleNamespace, functools.partial)
_TUPLEGETTER = type(collections.namedtuple("_Probe", "a").a)  # a namedtuple field: the item at its index
_TORCH_TENSOR_CLASSES = (torch.Tensor, torch._C.TensorBase)


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
        return wrap_const(tx, attr.__func__)
    if isinstance(attr, classmethod):
        return UserMethodVariable(attr.__func__, wrap_const(tx, cls)) if isinstance(
            attr.__func__, types.FunctionType
        ) else wrap_const(tx, getattr(cls, name))
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
            return wrap_const(tx, attr.fget).call_function(tx, [owner], {})
        if owner.source is not None and not isinstance(attr.fget, functools.partial) and not isinstance(
                class_attribute(type(attr.fget), "__call__"), types.FunctionType):
            # a getter in C (a pybind11 property's instancemethod): read natively, its value guarded
            return wrap(tx, getattr_or_raise(owner_value(owner), name), AttrSource(owner.source, name))
        # a partial or a callable object as getter: read through the property, so it is traced like any callable
        fget = wrap(tx, attr.fget, AttrSource(ConstSource(attr, f"{cls.__qualname__}.{name}"), "fget"))
        return fget.call_function(tx, [owner], {})
    if isinstance(attr, functools._lru_cache_wrapper):  # a cached function used as a method
        guard_class_attribute(tx, owner, name, attr)
        return PartialVariable(wrap_const(tx, attr), [owner], {})
    if isinstance(attr, types.MemberDescriptorType) and isinstance(owner, UserDefinedObjectVariable):  # __slots__
        return _slot_value(tx, owner, cls, name, attr)
    objclass = getattr(attr, "__objclass__", None)
    base_method = isinstance(objclass, type) and builtin_bases.builtin_base(objclass) is not None
    if (base_method or attr is object.__init__) and isinstance(owner, UserDefinedObjectVariable):
        if isinstance(attr, types.GetSetDescriptorType):  # ``deque.maxlen``: the builtin part's attribute
            if owner.source is None:
                return owner.base_storage(tx).var_getattr(tx, name)
        else:
            return SlotMethodVariable(objclass, name, owner)
    if type(attr) is _TUPLEGETTER and isinstance(owner, UserDefinedObjectVariable):
        return owner.base_storage(tx).getitem(tx, ConstantVariable(attr.__reduce__()[1][0]))
    builtin_method = isinstance(  # or a C type's getset (``deque.maxlen``): read natively, value guarded
        attr,
        (types.MethodDescriptorType, types.WrapperDescriptorType, types.BuiltinFunctionType,
         types.ClassMethodDescriptorType, types.GetSetDescriptorType),
    )
    if builtin_method and owner.source is not None:
        return wrap(tx, getattr(owner_value(owner), name), AttrSource(owner.source, name))
    if builtin_method or hasattr(type(attr), "__get__"):
        unimplemented(
            gb_type="unsupported descriptor",
            context=f"{cls.__name__}.{name} ({type(attr).__name__})",
            explanation="bytegraph does not model this kind of class attribute.",
        )
    if owner.source is not None:
        return wrap(tx, attr, AttrSource(AttrSource(owner.source, "__class__"), name))
    guard_class_lookup(tx, cls, name, attr)  # an object made in the trace: its class still answers attr
    return wrap(tx, attr, AttrSource(ConstSource(cls, cls.__qualname__), name))


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
    return wrap(tx, value, AttrSource(owner.source, name)) if owner.source is not None else wrap_const(tx, value)


def instance_answer_of_object(vt: VT, cls: Any) -> tuple[type, bool]:
    """``isinstance`` of a VT holding the real object (``vt.value``): asked of the
    object when it is read from a source (its ``__class__`` may differ), else of its type."""
    if vt.source is None:
        return VariableTracker.instance_answer(vt, cls)
    return type(vt.value), isinstance(vt.value, cls)


class UserDefinedObjectVariable(SpecialMethods, builtin_bases.BaseTypeOperators, VariableTracker):
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

    instance_answer = instance_answer_of_object

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
            return wrap_const(tx, instance_dict[name])
        return wrap(tx, instance_dict[name], AttrSource(self.source, name))

    def instance_dict(self, tx: Tx) -> VT:
        if self.source is None:
            return super().var_getattr(tx, "__dict__")
        return wrap(tx, self.value.__dict__, AttrSource(self.source, "__dict__"))

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

    def base_storage(self, tx: Tx) -> VT:
        """The builtin part of an instance of a subclass of a builtin type
        (:mod:`~bytegraph.variables.objects.builtin_bases`), read once without
        the subclass's overrides (also in guards): its mutations are seen by later reads."""
        if self.source is None:
            unsupported_base(self.python_type(), "builtin storage")
        if getattr(self, "_storage", None) is None:
            self._storage = builtin_bases.read_storage(tx, self.value, self.source)
        return self._storage

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
        found = self.attr_from_handler(tx, name)  # __dict__; __class__ unless the class overrides it
        if found is not None:
            return found
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

    def attr_dunder_dict(self, tx: Tx) -> VT:
        return self.instance_dict(tx)

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
            wrap_const(tx, attr.fset).call_function(tx, [self, value], {})
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
            handler = method_handler(self, tx, name, args, kwargs, prefix="object_")
            result = handler() if handler is not None else None
            if result is not None:
                return result
        cls = self.python_type()
        if base is not object and issubclass(cls, base) and builtin_bases.builtin_base(cls) is not None:
            return builtin_bases.call_base_method(tx, self, cls, base, name, args, kwargs)
        return unsupported_base(base, name)

    # ``object.<name>(self, ...)`` called explicitly (:meth:`call_slot`) ----------------
    def object_dunder_getattribute(self, tx: Tx, name: VT, /) -> VT:
        return self.generic_getattr(tx, name.as_python_constant())

    def object_dunder_setattr(self, tx: Tx, name: VT, value: VT, /) -> VT:
        self.generic_setattr(tx, name.as_python_constant(), value)
        return ConstantVariable(None)

    def object_dunder_delattr(self, tx: Tx, name: VT, /) -> VT:
        self.delete_raw(tx, name.as_python_constant())
        return ConstantVariable(None)

    def object_dunder_init(self, tx: Tx, *args: VT, **kwargs: VT) -> VT | None:
        """object_init ignores arguments a ``__new__`` of the class took (None: eager's TypeError)."""
        if (args or kwargs) and self.python_type().__new__ is object.__new__:
            return None
        return ConstantVariable(None)

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
        self.base_items = builtin_bases.new_storage(cls)  # the builtin part of a subclass of a builtin type

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

    def base_storage(self, tx: Tx) -> VT:
        if self.base_items is None:
            unsupported_base(self.cls, "builtin storage")
        return self.base_items

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.base_items is not None:
            builtin_bases.reconstruct_new(codegen, self.cls, self.base_items)
        else:
            builtin_base = next(k for k in self.cls.__mro__ if k.__module__ == "builtins")
            codegen.load_callable(builtin_base.__new__)
            codegen.load_const(self.cls)
            codegen.call(1)
        for key, value in self.attrs.items.values():
            codegen.call_on_top(object.__setattr__, key, value)

    def __repr__(self) -> str:
        return f"NewObjectVariable({self.cls.__qualname__})"


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


def call_new(tx: Tx, base: type, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``base.__new__(cls, *args)`` for a modelled builtin base: a plain value
    when ``cls`` is the base itself (``tuple.__new__(tuple, it)``), else a new
    instance of the subclass holding its builtin part (an immutable base's value
    made from the arguments; a mutable base's empty value, which its
    ``__init__`` fills)."""
    if not args or not args[0].is_python_constant() or not isinstance(args[0].as_python_constant(), type):
        raise_traced(TypeError, f"{base.__name__}.__new__(X): X is not a type object")
    cls = args[0].as_python_constant()
    if not issubclass(cls, base):
        raise_traced(TypeError, f"{base.__name__}.__new__({cls.__name__}): {cls.__name__} is not a subtype of "
                                f"{base.__name__}")
    if base in _NO_KEYWORD_NEW and kwargs:  # refused unless the class's own __init__ takes them (tuple_new)
        if cls is base or cls.__init__ is base.__init__:
            raise_traced(TypeError, f"{base.__name__}() takes no keyword arguments")
        kwargs = {}
    if base is tuple and len(args) > 2:
        raise_traced(TypeError, f"tuple expected at most 1 argument, got {len(args) - 1}")
    if base is list and cls.__init__ is list.__init__:  # list's __new__ takes anything: its __init__ checks
        if kwargs:
            raise_traced(TypeError, "list() takes no keyword arguments")
        if len(args) > 2:
            raise_traced(TypeError, f"list expected at most 1 argument, got {len(args) - 1}")
    storage = builtin_bases.call_new(tx, base, cls, args[1:], kwargs)
    if cls is base:
        return storage
    obj = NewObjectVariable(cls)
    obj.base_items = storage
    return obj


#: builtins whose __new__ takes no keywords, and ignores them for a subclass with an __init__ of its own
_NO_KEYWORD_NEW = (tuple, float, frozenset)


class SlotMethodVariable(VariableTracker):
    """A method of a builtin type applied to a user object, bypassing the
    object's Python overrides: ``super().__setattr__``, ``object.__setattr__(obj, ...)``,
    ``dict.__setitem__(obj, ...)``. Unbound (``obj`` None) until called with
    the instance as first argument."""

    def __init__(self, base: type, name: str, obj: VT | None):
        super().__init__()
        self.base = base
        self.name = name
        self.obj = obj

    def python_type(self) -> type:
        if self.obj is None:  # the descriptor itself
            return type(getattr(self.base, self.name))
        return bound_method_type(vars(self.base).get(self.name, getattr(self.base, self.name)))

    def var_getattr(self, tx: Tx, name: str) -> VT:
        """``set.issubset.__name__``, ``__qualname__``, ``__doc__``: the method's own
        read-only constants (a bound one has the same); ``__self__`` of a bound one."""
        if name == "__self__" and self.obj is not None:
            return self.obj
        value = getattr(getattr(self.base, self.name), name, None)
        if name in ("__name__", "__qualname__", "__doc__", "__text_signature__") and is_constant_value(value):
            return ConstantVariable(value)
        return super().var_getattr(tx, name)

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        obj, rest = (self.obj, list(args)) if self.obj is not None else (args[0] if args else None, list(args[1:]))
        if self.base is object and self.name == "__init__" and obj is not None:
            cls = obj.python_type()  # ``Objects/typeobject.c``: object_init refuses extra arguments, or not
            if (rest or kwargs) and (cls.__init__ is not object.__init__ or cls.__new__ is object.__new__):
                raise_traced(TypeError, f"{tp_name(cls) if cls.__init__ is object.__init__ else 'object'}.__init__() "
                             "takes exactly one argument (the instance to initialize)")
            return ConstantVariable(None)
        if self.base is object and self.name == "__new__" and isinstance(obj, user_classes.UserDefinedClassVariable):
            cls = obj.value
            if (rest or kwargs) and (cls.__new__ is not object.__new__ or cls.__init__ is object.__init__):
                raise_traced(TypeError, "object.__new__() takes exactly one argument (the type to instantiate)")
            return NewObjectVariable(cls)
        if self.name == "__new__" and self.base in IMMUTABLE_BUILTIN_TYPES and builtin_bases.builtin_base(
                self.base) is not self.base and obj is not None and obj.is_python_constant() and (
                obj.as_python_constant() is self.base):  # ``bool.__new__(bool, 1)``: bool(1), folded
            return fold(tx, self.base.__new__, [obj, *rest], kwargs) or unsupported_base(self.base, self.name)
        if self.name == "__new__" and obj is not None and builtin_bases.builtin_base(self.base) is self.base:
            return call_new(tx, self.base, [obj, *rest], kwargs)
        if isinstance(obj, UserDefinedObjectVariable):
            return obj.call_slot(tx, self.base, self.name, rest, kwargs)
        if obj is not None and self.base is not object and issubclass(obj.python_type(), self.base):
            return obj.call_method(tx, self.name, rest, kwargs)  # ``str.count(s, "x")``: s's own VT models it
        return unsupported_base(self.base, self.name)

    def reconstruct(self, codegen: PyCodegen) -> None:
        method = getattr(self.base, self.name)
        if self.obj is None:
            codegen.load_const(method)
            return
        codegen.load_callable(types.MethodType)
        codegen.load_const(method)
        codegen.reconstruct(self.obj)
        codegen.call(2)
