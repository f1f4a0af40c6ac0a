"""User-defined classes: :class:`UserDefinedClassVariable`, a class object
(not torch's, not a builtin container type) whose attributes are read along
its MRO (:mod:`.class_lookup`) and whose call constructs an instance.

This module and :mod:`.user_objects` use each other (a class's builtin slot
methods apply to instances, ``object.__new__(cls)`` makes one), so each
imports the other as a module.
"""
from __future__ import annotations

import inspect
import types

import torch
from typing import TYPE_CHECKING, Sequence


from bytegraph.breaks import unimplemented
from bytegraph.graph.side_effects import DELETED
from bytegraph.guards.guards import DictKeysMatch
from bytegraph.guards.source import AttrSource, ConstSource
from bytegraph.variables.base import KnownObjectVariable, VariableTracker
from bytegraph.variables.callables.functions import UserFunctionVariable, UserMethodVariable
from bytegraph.variables.callables.torch_functions import AutogradFunctionApplyVariable
from bytegraph.variables.constant import getattr_or_raise, raise_traced
from bytegraph.variables.objects import builtin_bases, class_statements, slot_methods, user_objects
from bytegraph.variables.objects.class_lookup import _MISSING, HEAPTYPE, class_attribute, guard_class_lookup
from bytegraph.variables.tx import construct_object, wrap, wrap_const
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker
#: methods of C types
_C_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType)


class UserDefinedClassVariable(KnownObjectVariable):
    """A class object (not torch's, not a builtin container type)."""

    def truthy(self, tx: Tx) -> bool:
        return True

    def var_getattr(self, tx: Tx, name: str) -> VT:
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is DELETED:
            raise_traced(AttributeError, f"type object {self.value.__name__!r} has no attribute {name!r}")
        if pending is not None:
            return pending
        if name == "apply" and issubclass(self.value, torch.autograd.Function) and self.value is not torch.autograd.Function:
            class_statements.check_runs_natively(tx, self.value)  # a Function defined in the compiled code
            return AutogradFunctionApplyVariable(self.value)
        attr = class_attribute(self.value, name)
        if attr is _MISSING:  # an attribute of the metaclass (``__name__``, ``__mro__``...), or none
            if not hasattr(self.value, name):
                guard_class_lookup(tx, self.value, name, _MISSING)  # AttributeError until a class gains it
            return wrap_const(tx, getattr_or_raise(self.value, name))
        if isinstance(attr, (staticmethod, classmethod)):
            guard_class_lookup(tx, self.value, name, attr)
        if isinstance(attr, staticmethod):
            return wrap_const(tx, attr.__func__)
        if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
            return UserMethodVariable(attr.__func__, self)
        if isinstance(attr, types.FunctionType):
            src = AttrSource(self.source, name) if self.source else None
            return UserFunctionVariable(attr, src)
        if isinstance(attr, _C_METHODS) and (attr.__objclass__ is self.value and not self.value.__flags__ & HEAPTYPE
                                             or attr.__objclass__ in builtin_bases.MODELLED_BASES + (object,)):
            # ``list_iterator.__length_hint__(it)``, ``Counter.__setitem__(self, k, v)`` (dict's)
            return slot_methods.SlotMethodVariable(attr.__objclass__, name, None)
        src = AttrSource(self.source, name) if self.source else None
        value = getattr_or_raise(self.value, name)
        return wrap(tx, value, src) if src else wrap_const(tx, value)

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return construct_object(tx, self, args, kwargs)

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
        if class_statements.made_in_trace(self.value) and meta.__setattr__ is type.__setattr__:
            class_statements.store_class_attribute(tx, self.value, name, value)  # no one else sees the class
            return
        if meta.__setattr__ is not type.__setattr__ or inspect.isdatadescriptor(class_attribute(meta, name)) or (
                self.source is None):
            unimplemented(
                gb_type="unsupported attribute store",
                context=f"setting {name!r} on class {self.value.__qualname__}",
                explanation="The class's metaclass customises attribute stores, or the class has no source.",
                hints=("Set the class attribute outside the compiled function.",),
            )
        tx.output.side_effects.store_attr(self, name, value)

    def dir_names(self, tx: Tx) -> VT | None:
        """``dir(cls)``: the sorted names of the class's and its bases' namespaces
        (``type.__dir__``), guarded on those namespaces' keys; None (a break) for a
        metaclass with its own ``__dir__`` or a class the trace changed."""
        cls = self.value
        if class_attribute(type(cls), "__dir__") is not type.__dict__["__dir__"] or any(
                tx.output.side_effects.pending_attr_names(k) for k in cls.__mro__):
            return None
        for klass in cls.__mro__:
            if klass.__module__ != "builtins":  # builtin classes are immutable
                namespace = AttrSource(ConstSource(klass, klass.__qualname__), "__dict__")
                tx.output.guards.add(DictKeysMatch(namespace, types.MappingProxyType, tuple(vars(klass))))
        return wrap_const(tx, dir(cls))

    def __repr__(self) -> str:
        return f"UserDefinedClassVariable({self.value.__qualname__})"
