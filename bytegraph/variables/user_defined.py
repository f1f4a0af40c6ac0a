"""User-defined classes and their instances.

Attribute reads follow Python's lookup order: data descriptors of the class
(``property`` getters are inlined), then the instance ``__dict__`` (read through
a source, so guarded, or the value stored earlier in the trace), then other
class attributes (functions become bound methods), then ``__getattr__``.
"""
from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING, Any, Sequence

from bytegraph.breaks import unimplemented
from bytegraph.graph.side_effects import DELETED
from bytegraph.guards.guards import DictContains, IdMatch
from bytegraph.guards.source import AttrSource, ConstSource, GetItemSource
from bytegraph.variables.base import BoundMethodVariable, VariableTracker
from bytegraph.variables.containers import DictBaseView
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.functions import UserFunctionVariable, UserMethodVariable

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker
_MISSING = object()


def class_attribute(cls: type, name: str) -> Any:
    """``name`` looked up on ``cls``'s MRO without invoking descriptors, or _MISSING."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return _MISSING


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
        return UserMethodVariable(attr, owner)
    if isinstance(attr, property):
        if attr.fget is None:
            unimplemented(
                gb_type="user error",
                context=f"unreadable property {cls.__name__}.{name}",
                explanation="The traced code raises AttributeError; it runs natively so the error is the eager one.",
                hints=("Read a property that has a getter.",),
            )
        return tx.wrap_const(attr.fget).call_function(tx, [owner], {})
    objclass = getattr(attr, "__objclass__", None)
    if objclass is dict and isinstance(owner, UserDefinedObjectVariable) and owner.source is not None:
        return BoundMethodVariable(DictBaseView(owner.value, owner.source), name)
    builtin_method = isinstance(
        attr,
        (types.MethodDescriptorType, types.WrapperDescriptorType, types.BuiltinFunctionType,
         types.ClassMethodDescriptorType),
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
    return tx.wrap_const(attr)


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
        attr = class_attribute(self.value, name)
        if attr is _MISSING:
            if name in ("__name__", "__qualname__", "__module__"):
                return ConstantVariable(getattr(self.value, name))
            if name == "__mro__":
                return tx.wrap_const(self.value.__mro__)
            unimplemented(
                gb_type="user error",
                context=f"class {self.value.__name__} has no attribute {name!r}",
                explanation="The traced code raises AttributeError; it runs natively so the error is the eager one.",
                hints=("Check the attribute name.",),
            )
        if isinstance(attr, staticmethod):
            return tx.wrap_const(attr.__func__)
        if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
            return UserMethodVariable(attr.__func__, self)
        if isinstance(attr, types.FunctionType):
            src = AttrSource(self.source, name) if self.source else None
            return UserFunctionVariable(attr, src)
        src = AttrSource(self.source, name) if self.source else None
        value = getattr(self.value, name)
        return tx.wrap(value, src) if src else tx.wrap_const(value)

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return tx.construct_object(self, args, kwargs)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
        else:
            codegen.load_const(self.value)

    def __repr__(self) -> str:
        return f"UserDefinedClassVariable({self.value.__qualname__})"


class UserDefinedObjectVariable(VariableTracker):
    """An instance of a user class that existed before the call (has a source)."""

    mutable = True

    def __init__(self, value: Any, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def var_getattr(self, tx: Tx, name: str) -> VT:
        cls = type(self.value)
        getattribute = class_attribute(cls, "__getattribute__")
        if isinstance(getattribute, types.FunctionType):
            return UserMethodVariable(getattribute, self).call_function(tx, [ConstantVariable(name)], {})
        generic = isinstance(getattribute, types.WrapperDescriptorType) and (
            getattribute.__objclass__.__module__ == "builtins"
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
        cls = type(self.value)
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is DELETED:
            unimplemented(
                gb_type="user error",
                context=f"{cls.__qualname__} object has no attribute {name!r} (deleted in the trace)",
                explanation="The traced code raises AttributeError; it runs natively so the error is the eager one.",
                hints=("Check the attribute name.",),
            )
        if pending is not None:
            return pending
        if name == "__dict__" and self.source is not None:
            return tx.wrap(self.value.__dict__, AttrSource(self.source, "__dict__"))
        attr = class_attribute(cls, name)
        if attr is not _MISSING and inspect.isdatadescriptor(attr):
            return bind_class_attribute(tx, self, cls, name, attr)
        instance_dict = getattr(self.value, "__dict__", None)
        if instance_dict is not None and name in instance_dict:
            if self.source is None:
                return tx.wrap_const(instance_dict[name])
            return tx.wrap(instance_dict[name], AttrSource(self.source, name))
        guard_not_in_instance_dict(tx, self, name)
        if attr is not _MISSING:
            return bind_class_attribute(tx, self, cls, name, attr)
        if name == "__class__":
            return tx.wrap_const(cls)
        getattr_fn = class_attribute(cls, "__getattr__")
        if isinstance(getattr_fn, types.FunctionType):
            return UserMethodVariable(getattr_fn, self).call_function(tx, [ConstantVariable(name)], {})
        unimplemented(
            gb_type="user error",
            context=f"{cls.__qualname__} object has no attribute {name!r}",
            explanation="The traced code raises AttributeError; it runs natively so the error is the eager one.",
            hints=("Check the attribute name.",),
        )

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        call = class_attribute(type(self.value), "__call__")
        if isinstance(call, types.FunctionType):
            return tx.inline_call(UserMethodVariable(call, self), [self, *args], kwargs)
        return super().call_function(tx, args, kwargs)

    def truthy(self, tx: Tx) -> bool:
        cls = type(self.value)
        for dunder in ("__bool__", "__len__"):
            fn = class_attribute(cls, dunder)
            if fn is not _MISSING:
                if isinstance(fn, types.FunctionType):
                    result = UserMethodVariable(fn, self).call_function(tx, [], {})
                    value = result.as_python_constant()
                    return bool(value)
                return super().truthy(tx)
        return True

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        super().reconstruct(codegen)

    def __repr__(self) -> str:
        return f"UserDefinedObjectVariable({type(self.value).__qualname__})"


class SuperVariable(VariableTracker):
    """``super(cls, obj)``: attribute lookup starts after ``cls`` in ``type(obj)``'s MRO."""

    def __init__(self, cls: type, obj: VT):
        super().__init__()
        self.cls = cls
        self.obj = obj

    def python_type(self) -> type:
        return super

    def var_getattr(self, tx: Tx, name: str) -> VT:
        mro = self.obj.python_type().__mro__
        start = mro.index(self.cls) + 1 if self.cls in mro else len(mro)
        for klass in mro[start:]:
            if name in klass.__dict__:
                attr = klass.__dict__[name]
                break
        else:
            unimplemented(
                gb_type="user error",
                context=f"'super' object has no attribute {name!r}",
                explanation="The traced code raises AttributeError; it runs natively so the error is the eager one.",
                hints=("Check the attribute name.",),
            )
        if attr is object.__getattribute__ and hasattr(self.obj, "generic_getattr"):
            return GenericGetAttrVariable(self.obj)
        if attr is object.__init__:
            return tx.wrap_const(_noop)
        return bind_class_attribute(tx, self.obj, self.obj.python_type(), name, attr)


class GenericGetAttrVariable(VariableTracker):
    """``object.__getattribute__`` bound to an object: the standard lookup,
    bypassing a Python ``__getattribute__`` override."""

    def __init__(self, obj: VT):
        super().__init__()
        self.obj = obj

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return self.obj.generic_getattr(tx, args[0].as_python_constant())


def _noop(*args: Any, **kwargs: Any) -> None:
    """Stands for ``object.__init__`` reached through ``super()``."""
