"""``super(cls, obj)`` and ``super(cls, klass)``: attribute lookup that starts
after ``cls`` in the MRO (``Objects/typeobject.c``: ``super_getattro``).
"""
from __future__ import annotations

import types
from typing import TYPE_CHECKING

from bytegraph.breaks import unimplemented, user_error
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables.functions import UserFunctionVariable, UserMethodVariable
from bytegraph.variables.constant import raise_traced
from bytegraph.variables.objects.builtin_bases import MODELLED_BASES, base_attr, builtin_base
from bytegraph.variables.objects.class_lookup import _MISSING
from bytegraph.variables.objects.slot_methods import SlotMethodVariable
from bytegraph.variables.objects.user_classes import UserDefinedClassVariable
from bytegraph.variables.objects.user_objects import (
    UserDefinedObjectVariable,
    _TORCH_TENSOR_CLASSES,
    bind_class_attribute,
)
from bytegraph.variables.tensors.subclass import torch_tensor_attr
from bytegraph.variables.tx import wrap_const
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class SuperVariable(VariableTracker):
    """``super(cls, obj)``: attribute lookup starts after ``cls`` in ``type(obj)``'s MRO."""

    def __init__(self, cls: type, obj: VT):
        super().__init__()
        self.cls = cls
        self.obj = obj

    def python_type(self) -> type:
        return super

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if isinstance(self.obj, UserDefinedClassVariable):
            return self._class_getattr(tx, name)
        mro = self.obj.python_type().__mro__
        start = mro.index(self.cls) + 1 if self.cls in mro else len(mro)
        for klass in mro[start:]:
            if name in klass.__dict__:
                attr = klass.__dict__[name]
                break
        else:
            user_error(
                "AttributeError",
                context=f"'super' object has no attribute {name!r}",
                hint="Check the attribute name.",
            )
        if klass in _TORCH_TENSOR_CLASSES:  # super() inside a tensor subclass: torch's own implementation
            return torch_tensor_attr(tx, self.obj, name)
        if klass.__module__ == "builtins" or klass in MODELLED_BASES:
            if isinstance(self.obj, UserDefinedObjectVariable):
                return SlotMethodVariable(klass, name, self.obj)
            if attr is object.__init__:
                return SlotMethodVariable(object, name, None)
        return bind_class_attribute(tx, self.obj, self.obj.python_type(), name, attr)

    def _class_getattr(self, tx: Tx, name: str) -> VT:
        """``super(cls, klass).name`` with a class as the second argument (``super()``
        inside a classmethod): the lookup starts after ``cls`` in ``klass``'s own MRO
        and classmethods bind to ``klass``."""
        mro = self.obj.value.__mro__
        start = mro.index(self.cls) + 1 if self.cls in mro else len(mro)
        attr = next((k.__dict__[name] for k in mro[start:] if name in k.__dict__), _MISSING)
        if attr is _MISSING:
            raise_traced(AttributeError, f"'super' object has no attribute {name!r}")
        if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
            return UserMethodVariable(attr.__func__, self.obj)
        if isinstance(attr, staticmethod):
            return wrap_const(tx, attr.__func__)
        if isinstance(attr, types.FunctionType):
            return UserFunctionVariable(attr)
        base = builtin_base(self.obj.value)
        if attr is object.__new__ or base is not None and name == "__new__" and attr is base_attr(base, name):
            return SlotMethodVariable(object if attr is object.__new__ else base, "__new__", None)
        if isinstance(attr, types.BuiltinFunctionType):  # e.g. torch.Tensor.__new__
            return wrap_const(tx, attr)
        unimplemented(
            gb_type="unsupported descriptor",
            context=f"super().{name} on class {self.obj.value.__qualname__} ({type(attr).__name__})",
            explanation="bytegraph resolves super() on a class to Python classmethods, staticmethods and functions "
            "only.",
        )
