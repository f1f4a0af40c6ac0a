"""Python semantics that VariableTrackers ask the translator for, through
``tx`` (methods of the :class:`~bytegraph.variables.tx.Tx` protocol): object
construction, ``iter()``, identity (``id()``, ``is``) and ``isinstance``.
Each still switches on VT kinds; they are meant to become methods of the kinds.
"""
from __future__ import annotations

import abc
import collections
import enum
import functools
import operator
import types
import typing
import weakref
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from bytegraph.breaks import unimplemented, user_error
from bytegraph.guards.guards import GlobalStateMatch, IdMatch, NoAliasing
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.builder import wrap_const
from bytegraph.variables.callables.builtins import BuiltinVariable, OperatorGetterVariable
from bytegraph.variables.callables.functions import PartialVariable, UserFunctionVariable, UserMethodVariable
from bytegraph.variables.constant import ConstantVariable, raise_traced, raise_traced_from
from bytegraph.variables.containers.dicts import DictVariable, DictViewVariable, LazyDictVariable
from bytegraph.variables.containers.iterators import IteratorVariable, ListIteratorVariable, RangeIteratorVariable
from bytegraph.variables.containers.named_tuples import NamedTupleVariable, is_modelled_namedtuple
from bytegraph.variables.containers.sequences import (
    BaseSequenceVariable,
    DequeVariable,
    ListVariable,
    SliceVariable,
)
from bytegraph.variables.containers.sets import SetVariable
from bytegraph.variables.exceptions import ExceptionVariable
from bytegraph.variables.objects.builtin_bases import base_attr, builtin_base
from bytegraph.variables.objects.class_lookup import class_attribute
from bytegraph.variables.objects.nn_modules import NNModuleVariable
from bytegraph.variables.objects.user_classes import UserDefinedClassVariable
from bytegraph.variables.objects.user_objects import (
    NewObjectVariable,
    SlotMethodVariable,
    UserDefinedObjectVariable,
)
from bytegraph.variables.tensors import subclass
from bytegraph.variables.tensors.ndarray import NumpyNdarrayVariable
from bytegraph.variables.tensors.tensor import TensorVariable

if TYPE_CHECKING:
    from bytegraph.translator.base import InstructionTranslatorBase

VT = VariableTracker


@functools.lru_cache(maxsize=None)
def _subclass_check(obj_type: type, cls: type) -> Callable[[], bool]:
    """A guard getter re-asking an ABC about ``obj_type`` (one per pair, so guards dedupe)."""
    return lambda: issubclass(obj_type, cls)

#: VTs whose ``as_python_constant()`` builds a new object on each call (no identity to compare)
REBUILT_CONSTANTS = (BaseSequenceVariable, DictVariable, SetVariable, SliceVariable)


class PythonSemantics:
    """Mixed into the translator (see the module docstring)."""

    # ---- calls --------------------------------------------------------------------------------
    def construct_object(self: InstructionTranslatorBase, cls: UserDefinedClassVariable, args: Sequence[VT],
                         kwargs: dict[str, VT]) -> VT:
        """``cls(*args, **kwargs)`` for a user class."""
        klass = cls.value
        builtin_container = _LIBRARY_CONSTRUCTORS.get(klass)
        if builtin_container is not None:
            return builtin_container(self, args, kwargs)
        if issubclass(klass, enum.Enum) and all(a.is_python_constant() for a in args) and not kwargs:
            try:
                return ConstantVariable(klass(*[a.as_python_constant() for a in args]))
            except ValueError as e:
                raise_traced_from(e)
        if issubclass(klass, torch.Tensor):
            subclass.check_traceable(klass)
            return subclass.construct(self, cls, args, kwargs)
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
            values = list(args) + [kwargs[n] if n in kwargs else wrap_const(self, defaults[n])
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
            obj = self.inline_call(UserFunctionVariable(new.__func__), [cls, *args], kwargs)
        elif _builtin_new(klass):
            obj = NewObjectVariable(klass)
        elif (base := builtin_base(klass)) is not None and new is base_attr(base, "__new__"):
            obj = SlotMethodVariable(base, "__new__", None).call_function(self, [cls, *args], kwargs)
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
            self.inline_call(UserMethodVariable(init, obj), [obj, *args], kwargs)
        else:
            base = getattr(init, "__objclass__", object)
            obj.call_slot(self, base, "__init__", args, kwargs)
        return obj

    # ---- iteration ----------------------------------------------------------------------------
    def get_iter(self: InstructionTranslatorBase, value: VT) -> VT:
        """``iter(value)``; iterators over lists and dicts see mutations made
        during the loop, as in eager."""
        if isinstance(value, IteratorVariable):
            return value
        if isinstance(value, (ListVariable, DictVariable, LazyDictVariable, DictViewVariable, SetVariable)):
            return value.call_method(self, "__iter__", [], {})
        if value.is_python_constant() and type(value.as_python_constant()) is range:
            return RangeIteratorVariable(value.as_python_constant())
        iterator = value.lazy_iterator(self)
        if iterator is not None:
            return self.get_iter(iterator)
        return ListIteratorVariable(value.unpack_var_sequence(self))

    # ---- identity and types -----------------------------------------------------------------------
    def identity_of(self: InstructionTranslatorBase, value: VT) -> int | None:
        """``id()`` of the real object behind ``value``, when there is one."""
        ident = self.output.side_effects.identity_of(value)
        if ident is not None:
            return ident
        if isinstance(value, (UserFunctionVariable, BuiltinVariable, UserDefinedClassVariable)) or (
            value.is_python_constant() and not isinstance(value, (ConstantVariable, *REBUILT_CONSTANTS))
        ):
            return id(value.as_python_constant())
        return None

    def guard_identity(self: InstructionTranslatorBase, value: VT) -> bool:
        """Guard that the object behind ``value`` (read from a source) stays the
        same object, as ``id()`` needs; False when it cannot be held weakly
        (lists, dicts: an entry must not keep them alive)."""
        obj = self.output.side_effects.object_of(value)
        if obj is None and value.is_python_constant() and not isinstance(value, REBUILT_CONSTANTS):
            obj = value.as_python_constant()
        try:
            weakref.ref(obj)
        except TypeError:
            return False
        self.output.guards.add(IdMatch.of(value.source, obj))
        return True

    def same_object(self: InstructionTranslatorBase, a: VT, b: VT) -> bool | None:
        """``a is b``, or None when it cannot be known at trace time."""
        if a is b:
            return True
        if isinstance(a, ConstantVariable) and isinstance(b, ConstantVariable):
            return a.value is b.value
        ida, idb = self.identity_of(a), self.identity_of(b)
        if ida is not None and idb is not None:
            if ida != idb and a.source is not None and b.source is not None:
                # distinct objects on this call; a later call may pass one object twice
                self.output.guards.add(NoAliasing(None, (a.source, b.source)))
            return ida == idb
        if getattr(a, "mutable", False) and getattr(b, "mutable", False) and (a.source is None or b.source is None):
            return False  # a list/dict/set made in the trace is a new object, and has exactly one VT
        arrays = (TensorVariable, NumpyNdarrayVariable)
        if isinstance(a, arrays) and isinstance(b, arrays):
            if a.source is None or b.source is None:
                # An op that returns its input in eager gives back the input's VT
                # (graph_call compares FakeTensor identity; numpy_call returns
                # the argument written in place), so a computed tensor or array
                # with its own VT is a new object.
                return False
            # Two inputs that are distinct objects now: guard that they stay so.
            self.output.guards.add(NoAliasing(None, (a.source, b.source)))
            return False
        try:
            ta, tb = a.python_type(), b.python_type()
        except Exception:
            return None
        if ta is not tb:
            return False
        return None

    def isinstance_of(self: InstructionTranslatorBase, value: VT, cls: Any) -> bool:
        """``isinstance(value, cls)``. Classes whose metaclass decides instance checks
        itself (a user ``__instancecheck__``, runtime-checkable Protocols) are graph
        breaks; an answer from an ABC is guarded (``register()`` can change it)."""
        if isinstance(cls, tuple):
            return any(self.isinstance_of(value, c) for c in cls)
        if isinstance(cls, typing._SpecialGenericAlias):  # typing.Sequence, typing.List...: checks its origin class
            return self.isinstance_of(value, cls.__origin__)
        if isinstance(cls, types.UnionType):  # list | tuple: any of its members
            return self.isinstance_of(value, cls.__args__)
        meta = type(cls)
        if meta.__instancecheck__ is not type.__instancecheck__ and not meta.__module__.startswith("torch") and (
            not isinstance(cls, abc.ABCMeta) or getattr(cls, "_is_protocol", False)
        ):
            unimplemented(
                gb_type="isinstance with __instancecheck__",
                context=f"isinstance(..., {getattr(cls, '__qualname__', cls)!r}), whose {meta.__qualname__} "
                "decides instance checks",
                explanation="The answer may depend on the object's attributes; the check runs natively.",
                hints=("Check the type or the attributes directly.",),
            )
        if isinstance(value, (UserDefinedObjectVariable, NNModuleVariable)) and value.source is not None:
            obj_type, answer = type(value.value), isinstance(value.value, cls)
        elif isinstance(value, ConstantVariable):
            obj_type, answer = type(value.value), isinstance(value.value, cls)
        else:
            obj_type = value.python_type()
            answer = issubclass(obj_type, cls)
        if isinstance(cls, abc.ABCMeta):
            self.output.guards.add(GlobalStateMatch(None, _subclass_check(obj_type, cls), answer,
                                                    f"issubclass({obj_type.__qualname__}, {cls.__qualname__})"))
        return answer


def _make_partial(tx: InstructionTranslatorBase, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    if not args:
        raise_traced(TypeError, "type 'partial' takes at least one argument")
    return PartialVariable(args[0], args[1:], kwargs)


def _make_dict_kind(dict_cls: type) -> Callable[..., VT]:
    def make(tx: InstructionTranslatorBase, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        """``OrderedDict(...)``/``defaultdict(factory, ...)``: a new dict of the class, filled by its ``__init__``."""
        result = DictVariable({}, dict_cls)
        result.call_method(tx, "__init__", args, kwargs)
        return result

    return make


def _make_deque(tx: InstructionTranslatorBase, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
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
    def make(tx: InstructionTranslatorBase, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return OperatorGetterVariable(kind, args, kwargs)

    return make


#: construction of library classes modelled by a VT kind (exact types only)
_LIBRARY_CONSTRUCTORS = {
    collections.OrderedDict: _make_dict_kind(collections.OrderedDict),
    collections.defaultdict: _make_dict_kind(collections.defaultdict),
    collections.deque: _make_deque,
    functools.partial: _make_partial,
    operator.itemgetter: _make_operator_getter(operator.itemgetter),
    operator.attrgetter: _make_operator_getter(operator.attrgetter),
    operator.methodcaller: _make_operator_getter(operator.methodcaller),
}


def _builtin_new(klass: type) -> bool:
    """Whether instances of ``klass`` are made by a builtin ``__new__`` that
    takes no part in construction (object's, or a dict's)."""
    new = klass.__new__
    return new is object.__new__ or new is dict.__new__ or new is collections.OrderedDict.__new__
