"""Instances of user classes: :class:`UserDefinedObjectVariable` (an object
that existed before the call, read from a source) and :class:`NewObjectVariable`
(one made in the trace), Python's descriptor protocol on their class
attributes (:func:`bind_class_attribute`) and ``hasattr`` (:func:`object_has_attr`);
their ``__slots__`` entries are :mod:`.slots`, builtin methods applied to them
:mod:`.slot_methods`.

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
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.handlers import method_handler
from bytegraph.variables.callables.functions import PartialVariable, UserMethodVariable
from bytegraph.variables.constant import (
    ConstantVariable, getattr_or_raise, raise_traced,
)
from bytegraph.variables.containers.dicts import DictVariable
from bytegraph.variables.exceptions import TracedException
from bytegraph.variables.objects import builtin_bases, slot_methods, slots
from bytegraph.variables.objects.class_lookup import (
    _MISSING,
    class_attribute,
    guard_class_attribute,
    guard_class_lookup,
    guard_not_in_instance_dict,
    owner_value,
)
from bytegraph.variables.objects.special_methods import SpecialMethods
from bytegraph.variables.operators import tp_name
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
        if isinstance(attr, types.MemberDescriptorType):  # a __slots__ entry: set or not
            return name in obj.slot_values
        if obj.instance_attr(tx, name) is not None:
            return True
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
    if isinstance(attr, types.MemberDescriptorType):  # a __slots__ entry, set or not
        return slots.guard_slot_set(tx, obj, name, attr)
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
        return slots.slot_value(tx, owner, cls, name, attr)
    objclass = getattr(attr, "__objclass__", None)
    base_method = isinstance(objclass, type) and builtin_bases.builtin_base(objclass) is not None
    if (base_method or attr is object.__init__) and isinstance(owner, UserDefinedObjectVariable):
        if isinstance(attr, types.GetSetDescriptorType):  # ``deque.maxlen``: the builtin part's attribute
            if owner.source is None:
                return owner.base_storage(tx).var_getattr(tx, name)
        else:
            return slot_methods.SlotMethodVariable(objclass, name, owner)
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
        attr = class_attribute(cls, name)
        if delattr_fn is object.__delattr__ and not inspect.isdatadescriptor(attr):
            self.delete_raw(tx, name)
            return
        if delattr_fn is object.__delattr__ and isinstance(attr, types.MemberDescriptorType) and self.delete_slot(
                tx, name, attr):
            return
        super().delete_attr(tx, name)

    def delete_slot(self, tx: Tx, name: str, slot: Any) -> bool:
        """``del obj.name`` of a ``__slots__`` entry: False (a break) unless the
        trace set it or the real object has it (its value then read, so guarded)."""
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is DELETED:
            raise_traced(AttributeError, name)
        existed = self.source is not None and slots.guard_slot_set(tx, self, name, slot)
        if pending is None and not existed:
            return False
        tx.output.side_effects.delete_attr(self, name, existed)
        return True

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

    def dir_names(self, tx: Tx) -> VT | None:
        """``dir(self)`` as ``object.__dir__`` answers it: the sorted names of the
        instance ``__dict__`` (keys guarded) and of ``dir(type(self))``; None (a
        break) when the class overrides ``__dir__``, ``__dict__`` or ``__class__``."""
        cls = self.python_type()
        own_dict = class_attribute(cls, "__dict__")
        if class_attribute(cls, "__dir__") is not object.__dir__ or class_attribute(
                cls, "__class__") is not object.__dict__["__class__"] or not (
                own_dict is _MISSING or type(own_dict) is types.GetSetDescriptorType):
            return None
        class_names = wrap_const(tx, cls).dir_names(tx)
        if class_names is None:
            return None
        own = [k for k, _ in self.attribute_items(tx)] if cls.__dictoffset__ else []
        if not all(isinstance(k, str) for k in own):
            return None
        return wrap_const(tx, sorted({*own, *class_names.as_python_constant()}))

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
        if name == "__dict__" and type(attr) is types.GetSetDescriptorType and cls.__dictoffset__:
            if not isinstance(value, DictVariable) or value.python_type() is not dict:  # subtype_setdict: PyDict_Check
                if not value.is_python_constant() or isinstance(value.as_python_constant(), dict):
                    unimplemented(gb_type="unsupported attribute store", context=f"{self}.__dict__ = {value}",
                                  explanation="bytegraph sets an instance __dict__ only to a plain dict it traces "
                                              "(stores bypass a dict subclass's own bookkeeping).",
                                  hints=("Assign a plain dict.",))
                raise_traced(TypeError, f"__dict__ must be set to a dictionary, not a '{tp_name(value.python_type())}'")
            self.replace_dict(tx, value)
            return
        if inspect.isdatadescriptor(attr) and not isinstance(attr, types.MemberDescriptorType):
            unimplemented(
                gb_type="unsupported attribute store",
                context=f"setting {name!r} on {cls.__qualname__} ({type(attr).__name__} descriptor)",
                explanation="This assignment runs a descriptor bytegraph does not model.",
                hints=("Move the assignment out of the compiled function.",),
            )
        if cls.__dictoffset__ == 0 and not isinstance(attr, types.MemberDescriptorType):  # __slots__, no __dict__
            raise_traced(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}{slots.SLOTTED_STORE_SUFFIX}")
        self.store_raw(tx, name, value)

    def replace_dict(self, tx: Tx, new_dict: VT) -> None:
        """``self.__dict__ = new_dict`` (a dict): on an object that existed before
        the call it is a graph break, as later reads would need the new dict's entries."""
        unimplemented(
            gb_type="unsupported attribute store",
            context=f"{self}.__dict__ = {new_dict}",
            explanation="bytegraph replaces the __dict__ only of objects made in the trace.",
            hints=("Replace the __dict__ outside the compiled function, or update it in place.",),
        )

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

    Its instance dict is a :class:`DictVariable` (so ``obj.__dict__`` is live), its
    ``__slots__`` entries are kept apart;
    instances of dict subclasses also hold their dict contents. When the object
    outlives the graph it is rebuilt without running ``__init__`` again:
    the base type's ``__new__``, then ``object.__setattr__`` per attribute and
    the base dict's ``__setitem__`` per item.
    """

    def __init__(self, cls: type):
        super().__init__(None)
        self.cls = cls
        self.attrs, self.dict_replaced = DictVariable({}), False
        self.slot_values: dict[str, VT] = {}  # the ``__slots__`` entries set, by name
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
        if isinstance(class_attribute(self.cls, name), types.MemberDescriptorType):
            self.slot_values[name] = value
        else:
            self.attrs.call_method(tx, "__setitem__", [ConstantVariable(name), value], {})

    def delete_attr(self, tx: Tx, name: str) -> None:
        """``del obj.name``; an unset ``__slots__`` entry raises ``AttributeError(name)``."""
        slot = isinstance(class_attribute(self.cls, name), types.MemberDescriptorType)
        if slot and class_attribute(self.cls, "__delattr__") is object.__delattr__:
            if self.slot_values.pop(name, None) is None:
                raise_traced(AttributeError, name)
            return
        super().delete_attr(tx, name)

    def delete_raw(self, tx: Tx, name: str) -> None:
        if name not in self.attrs.items:
            _no_attribute(self.cls, name)
        self.attrs.call_method(tx, "__delitem__", [ConstantVariable(name)], {})

    def replace_dict(self, tx: Tx, new_dict: VT) -> None:
        """Later reads and stores use ``new_dict`` itself (it may be read through
        another name): the rebuilt object gets it as its ``__dict__``. A dict
        read from a source is a graph break (its entries are read lazily)."""
        if new_dict.source is not None:
            super().replace_dict(tx, new_dict)
        self.attrs = new_dict
        self.dict_replaced = True

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
        for name, value in self.slot_values.items():
            codegen.call_on_top(object.__setattr__, ConstantVariable(name), value)
        if self.dict_replaced:
            codegen.call_on_top(object.__setattr__, ConstantVariable("__dict__"), self.attrs)
            return
        for key, value in self.attrs.items.values():
            codegen.call_on_top(object.__setattr__, key, value)

    def __repr__(self) -> str:
        return f"NewObjectVariable({self.cls.__qualname__})"


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
