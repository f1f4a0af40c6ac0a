"""A builtin type's method applied to a user object, bypassing the object's
Python overrides (:class:`SlotMethodVariable`: ``super().__setattr__``,
``object.__setattr__(obj, ...)``, ``dict.__setitem__(obj, ...)``), and the
``__new__`` of a modelled builtin base (:func:`call_new`). Imports
:mod:`.user_objects` as a module: each calls the other."""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Sequence

from bytegraph.variables.base import VariableTracker, bound_method_type
from bytegraph.variables.constant import ConstantVariable, is_constant_value, raise_traced
from bytegraph.variables.objects import builtin_bases, user_classes, user_objects
from bytegraph.variables.operators import IMMUTABLE_BUILTIN_TYPES, fold, tp_name
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


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
    obj = user_objects.NewObjectVariable(cls)
    obj.base_items = storage
    return obj


def _check_self(base: type, name: str, obj: VT | None) -> None:
    """Eager's TypeError for a descriptor of ``base`` called unbound without an
    instance of ``base`` first (``Objects/descrobject.c``: ``descr_check``,
    ``method_vectorcall_*``, ``wrapperdescr_call``)."""
    wrapper = isinstance(getattr(base, name), types.WrapperDescriptorType)
    if obj is None:
        raise_traced(TypeError, f"descriptor '{name}' of '{tp_name(base)}' object needs an argument" if wrapper
                     else f"unbound method {getattr(base, name).__qualname__}() needs an argument")
    cls = obj.python_type()
    if not issubclass(cls, base):
        raise_traced(TypeError, f"descriptor '{name}' requires a '{tp_name(base)}' object but received a "
                     f"'{tp_name(cls)}'" if wrapper else
                     f"descriptor '{name}' for '{tp_name(base)}' objects doesn't apply to a '{tp_name(cls)}' object")


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

    def constant_identity(self) -> int | None:
        """An unbound one is the type's descriptor itself (``g is dict.__getitem__``);
        a bound one is a new method object on each read."""
        return id(getattr(self.base, self.name)) if self.obj is None else None

    def repr_text(self, tx: Tx) -> VT | None:
        """An unbound one's repr names only its type (a bound one's holds the instance's address)."""
        return ConstantVariable(repr(getattr(self.base, self.name))) if self.obj is None else None

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
        if self.obj is None and self.name != "__new__":
            _check_self(self.base, self.name, obj)
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
            return user_objects.NewObjectVariable(cls)
        if self.name == "__new__" and self.base in IMMUTABLE_BUILTIN_TYPES and builtin_bases.builtin_base(
                self.base) is not self.base and obj is not None and obj.is_python_constant() and (
                obj.as_python_constant() is self.base):  # ``bool.__new__(bool, 1)``: bool(1), folded
            return fold(tx, self.base.__new__, [obj, *rest], kwargs) or user_objects.unsupported_base(
                self.base, self.name)
        if self.name == "__new__" and obj is not None and builtin_bases.builtin_base(self.base) is self.base:
            return call_new(tx, self.base, [obj, *rest], kwargs)
        if isinstance(obj, user_objects.UserDefinedObjectVariable):
            return obj.call_slot(tx, self.base, self.name, rest, kwargs)
        if obj is not None and self.base is not object and issubclass(obj.python_type(), self.base):
            return obj.call_method(tx, self.name, rest, kwargs)  # ``str.count(s, "x")``: s's own VT models it
        return user_objects.unsupported_base(self.base, self.name)

    def reconstruct(self, codegen: PyCodegen) -> None:
        method = getattr(self.base, self.name)
        if self.obj is None:
            codegen.load_const(method)
            return
        codegen.load_callable(types.MethodType)
        codegen.load_const(method)
        codegen.reconstruct(self.obj)
        codegen.call(2)
