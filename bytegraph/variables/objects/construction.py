"""Construction of instances of user classes: ``cls(*args, **kwargs)`` where
``cls`` is a :class:`~bytegraph.variables.objects.user_classes.UserDefinedClassVariable`
(provided to it as :func:`~bytegraph.variables.tx.construct_object`, since
this module uses the kinds that import the class kind)."""
from __future__ import annotations

import collections
import enum
import functools
import operator
import types
from typing import TYPE_CHECKING, Callable, Sequence

import torch

from bytegraph.breaks import unimplemented, user_error
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables.builtins import OperatorGetterVariable, instances_are_callable
from bytegraph.variables.callables.functions import (
    BoundCallableVariable, PartialVariable, UserFunctionVariable, UserMethodVariable)
from bytegraph.variables.constant import ConstantVariable, raise_traced, raise_traced_from
from bytegraph.variables.containers.dicts import DictVariable
from bytegraph.variables.containers.named_tuples import NamedTupleVariable, is_modelled_namedtuple
from bytegraph.variables.containers.deques import DequeVariable
from bytegraph.variables.exceptions import ExceptionVariable
from bytegraph.variables.objects.builtin_bases import base_attr, builtin_base
from bytegraph.variables.objects.class_lookup import class_attribute
from bytegraph.variables.objects.slot_methods import SlotMethodVariable
from bytegraph.variables.objects.user_objects import NewObjectVariable, UserDefinedObjectVariable
from bytegraph.variables.tensors import subclass
from bytegraph.variables.tx import construct_object, wrap_const

if TYPE_CHECKING:
    from bytegraph.variables.objects.user_classes import UserDefinedClassVariable
    from bytegraph.variables.tx import Tx

VT = VariableTracker


@construct_object.provide
def construct(tx: Tx, cls: UserDefinedClassVariable, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``cls(*args, **kwargs)`` for a user class: a library class modelled by a
    kind, an enum member, a tensor subclass, a namedtuple, an exception, or
    ``__new__`` then ``__init__`` as ``type.__call__`` runs them."""
    klass = cls.value
    builtin_container = _LIBRARY_CONSTRUCTORS.get(klass)
    if builtin_container is not None:
        return builtin_container(tx, args, kwargs)
    if issubclass(klass, enum.Enum) and all(a.is_python_constant() for a in args) and not kwargs:
        try:
            return ConstantVariable(klass(*[a.as_python_constant() for a in args]))
        except ValueError as e:
            raise_traced_from(e)
    if issubclass(klass, torch.Tensor):
        subclass.check_traceable(klass)
        return subclass.construct(tx, cls, args, kwargs)
    if is_modelled_namedtuple(klass):
        field_names = klass._fields
        defaults = getattr(klass, "_field_defaults", {})
        unknown = [name for name in kwargs if name not in field_names[len(args):]]
        if len(args) > len(field_names) or unknown:  # Python's messages for the generated __new__
            raise_traced(TypeError, f"{klass.__name__}.__new__() got an unexpected keyword argument "
                         f"{unknown[0]!r}" if unknown else f"{klass.__name__}.__new__() takes "
                         f"{len(field_names) + 1} positional arguments but {len(args) + 1} were given")
        missing = [n for n in field_names[len(args):] if n not in kwargs and n not in defaults]
        if missing:
            raise_traced(TypeError, f"{klass.__name__}.__new__() missing {len(missing)} required positional "
                         f"argument{'s' if len(missing) > 1 else ''}: {', '.join(map(repr, missing))}")
        values = list(args) + [kwargs[n] if n in kwargs else wrap_const(tx, defaults[n])
                               for n in field_names[len(args):]]  # by keyword, else the field's default
        return NamedTupleVariable(values, klass)
    if issubclass(klass, BaseException) and not kwargs and not any(
        isinstance(class_attribute(klass, n), (types.FunctionType, staticmethod)) for n in ("__init__", "__new__")
    ):
        return ExceptionVariable(klass, args)
    if type(klass).__call__ is not type.__call__ or issubclass(klass, BaseException):
        unimplemented(
            gb_type="object construction",
            context=f"{klass.__qualname__}(...)",
            explanation="Classes with a custom metaclass __call__, and exceptions, are not constructed in the trace.",
            hints=("Create the object outside the compiled function and pass it in.",),
        )
    new = class_attribute(klass, "__new__")
    if isinstance(new, staticmethod) and isinstance(new.__func__, types.FunctionType):
        obj = tx.inline_call(UserFunctionVariable(new.__func__), [cls, *args], kwargs)
    elif _builtin_new(klass):
        obj = NewObjectVariable(klass)
    elif (base := builtin_base(klass)) is not None and new is base_attr(base, "__new__"):
        obj = SlotMethodVariable(base, "__new__", None).call_function(tx, [cls, *args], kwargs)
    else:
        unimplemented(
            gb_type="object construction",
            context=f"{klass.__qualname__}(...) with __new__ from {new!r}",
            explanation="Only classes whose __new__ is object's, a builtin container's, or written in Python "
            "are constructed in the trace.",
            hints=("Create the object outside the compiled function and pass it in.",),
        )
    if not (isinstance(obj, UserDefinedObjectVariable) and issubclass(obj.python_type(), klass)):
        return obj  # __new__ returned something else: __init__ is not called (type.__call__'s rule)
    init = class_attribute(klass, "__init__")
    if isinstance(init, types.FunctionType):
        tx.inline_call(UserMethodVariable(init, obj), [obj, *args], kwargs)
    else:
        base = getattr(init, "__objclass__", object)
        obj.call_slot(tx, base, "__init__", args, kwargs)
    return obj


def _make_partial(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    if not args:
        raise_traced(TypeError, "type 'partial' takes at least one argument")
    return PartialVariable(args[0], args[1:], kwargs)


def _make_dict_kind(dict_cls: type) -> Callable[..., VT]:
    def make(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        """``OrderedDict(...)``/``defaultdict(factory, ...)``: a new dict of the class, filled by its ``__init__``."""
        result = DictVariable({}, dict_cls)
        result.call_method(tx, "__init__", args, kwargs)
        return result

    return make


def _make_deque(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    maxlen = (args[1] if len(args) > 1 else kwargs.get("maxlen", ConstantVariable(None))).as_python_constant()
    if maxlen is not None and type(maxlen) is not int:
        user_error("TypeError", context=f"deque(maxlen={type(maxlen).__name__})", hint="Pass an int maxlen.")
    if maxlen is not None and maxlen < 0:
        raise_traced(ValueError, "maxlen must be non-negative")
    result = DequeVariable([], maxlen)
    if args:
        result.call_method(tx, "extend", [args[0]], {})
    return result


def _make_operator_getter(kind: type) -> Callable[..., VT]:
    def make(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return OperatorGetterVariable(kind, args, kwargs)

    return make


def _make_method(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``types.MethodType(func, obj)``, with CPython's argument checks: a plain
    Python function gives a :class:`UserMethodVariable`, any other callable a
    :class:`BoundCallableVariable`."""
    if kwargs:
        raise_traced(TypeError, "method() takes no keyword arguments")
    if len(args) != 2:
        raise_traced(TypeError, f"method expected 2 arguments, got {len(args)}")
    func, obj = args
    if not instances_are_callable(func.python_type()):
        raise_traced(TypeError, "first argument must be callable")
    if obj.is_python_constant() and obj.as_python_constant() is None:
        raise_traced(TypeError, "instance must not be None")
    if type(func) is UserFunctionVariable:
        return UserMethodVariable(func.fn, obj)
    return BoundCallableVariable(func, obj)


#: construction of library classes modelled by a VT kind (exact types only)
_LIBRARY_CONSTRUCTORS = {
    collections.OrderedDict: _make_dict_kind(collections.OrderedDict),
    collections.defaultdict: _make_dict_kind(collections.defaultdict),
    collections.deque: _make_deque,
    functools.partial: _make_partial,
    operator.itemgetter: _make_operator_getter(operator.itemgetter),
    operator.attrgetter: _make_operator_getter(operator.attrgetter),
    operator.methodcaller: _make_operator_getter(operator.methodcaller),
    types.MethodType: _make_method,
}


def _builtin_new(klass: type) -> bool:
    """Whether instances of ``klass`` are made by a builtin ``__new__`` that
    takes no part in construction (object's, or a dict's)."""
    new = klass.__new__
    return new is object.__new__ or new is dict.__new__ or new is collections.OrderedDict.__new__
