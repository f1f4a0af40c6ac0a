"""Python semantics that VariableTrackers ask the translator for.

VTs call these through ``tx`` (DESIGN: the translator is passed explicitly), so
the variables layer never imports the builder or the inliner: wrapping values,
calling builtins, iteration, identity, ``isinstance``, attribute access and
inlining all have their one home here.
"""
from __future__ import annotations

import abc
import collections
import enum
import functools
import inspect
import operator
import types
import weakref
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from bytegraph.breaks import unimplemented
from bytegraph.graph.side_effects import DELETED
from bytegraph.guards.guards import DictContains, GlobalStateMatch, IdMatch, NoAliasing
from bytegraph.guards.source import AttrSource, Source
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.builder import wrap, wrap_const
from bytegraph.variables.builtin import BINARY_DUNDERS, UNARY_DUNDERS, BuiltinVariable, OperatorGetterVariable
from bytegraph.variables.constant import ConstantVariable, raise_traced, raise_traced_from
from bytegraph.variables.exceptions import ExceptionVariable, TracedException
from bytegraph.variables.dicts import DictVariable, DictViewVariable, LazyDictVariable
from bytegraph.variables.iteration import IteratorVariable, ListIteratorVariable
from bytegraph.variables.sequences import (
    BaseSequenceVariable,
    DequeVariable,
    ListVariable,
    NamedTupleVariable,
    SliceVariable,
    TupleVariable,
    is_modelled_namedtuple,
)
from bytegraph.variables.sets import SetVariable
from bytegraph.variables.functions import UserFunctionVariable
from bytegraph.variables import ndarray, torch_function
from bytegraph.variables.nn_module import NNModuleVariable
from bytegraph.variables.ndarray import NumpyNdarrayVariable
from bytegraph.variables.tensor import TensorVariable
from bytegraph.variables.torch_function import TensorSubclassVariable
from bytegraph.variables.functions import NestedUserFunctionVariable, PartialVariable, UserMethodVariable
from bytegraph.variables.torch import PythonModuleVariable, TorchFunctionVariable, is_library_module
from bytegraph.variables.user_defined import (
    _MISSING,
    NewObjectVariable,
    UserDefinedClassVariable,
    UserDefinedObjectVariable,
    class_attribute,
    guard_class_lookup,
)

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
    # ---- wrapping -----------------------------------------------------------------------
    def wrap(self: InstructionTranslatorBase, value: Any, source: Source) -> VT:
        """A VT for ``value`` read from ``source`` (guards installed)."""
        return wrap(self, value, source)

    def wrap_const(self: InstructionTranslatorBase, value: Any) -> VT:
        """A VT for a value with no source (no guards)."""
        return wrap_const(self, value)

    def wrap_attr(self: InstructionTranslatorBase, obj: VT, value: Any, name: str) -> VT:
        """A VT for ``obj.name`` whose real value is ``value``."""
        if obj.source is None:
            return wrap_const(self, value)
        return wrap(self, value, AttrSource(obj.source, name))

    # ---- calls --------------------------------------------------------------------------------
    def call_builtin(self: InstructionTranslatorBase, fn: Any, args: Sequence[VT], kwargs: dict | None = None) -> VT:
        return BuiltinVariable(fn).call_function(self, list(args), kwargs or {})

    def call_dunder(self: InstructionTranslatorBase, fn: Any, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
        """Operators defined in Python by user classes (``__add__``, then the
        reflected ``__radd__``; ``__contains__``...), inlined; None when no
        user-defined dunder applies."""
        if kwargs:
            return None
        if fn is operator.contains and len(args) == 2:
            method = _python_method(self, args[0], "__contains__")
            if method is not None:
                return ConstantVariable(method.call_function(self, [args[1]], {}).truthy(self))
            return None
        if fn in UNARY_DUNDERS and len(args) == 1:
            method = _python_method(self, args[0], UNARY_DUNDERS[fn])
            return method.call_function(self, [], {}) if method is not None else None
        names = BINARY_DUNDERS.get(fn)
        if names is None or len(args) != 2:
            return None
        a, b = args
        for obj, other, name in ((a, b, names[0]), (b, a, names[1])):
            method = _python_method(self, obj, name)
            if method is not None:
                result = method.call_function(self, [other], {})
                if not (result.is_python_constant() and result.as_python_constant() is NotImplemented):
                    return result
        return None

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
            torch_function.check_traceable(klass)
            return torch_function.construct(self, cls, args, kwargs)
        if is_modelled_namedtuple(klass):
            field_names = klass._fields
            values = list(args) + [kwargs[name] for name in field_names[len(args):] if name in kwargs]
            defaults = getattr(klass, "_field_defaults", {})
            for name in field_names[len(values):]:
                if name not in defaults:
                    unimplemented(
                        gb_type="user error",
                        context=f"{klass.__name__}() missing argument {name!r}",
                        explanation="The traced code raises TypeError; it runs natively so the error is the eager one.",
                        hints=("Pass every field.",),
                    )
                values.append(self.wrap_const(defaults[name]))
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

    # ---- calls from a lower module into one that imports it (tensor.py -> ndarray.py, torch_function.py) ----
    def tensor_to_numpy(self: InstructionTranslatorBase, tensor: TensorVariable, args: Sequence[VT],
                        kwargs: dict[str, VT]) -> VT:
        """``tensor.numpy(force=False)``."""
        return ndarray.tensor_to_numpy(self, tensor, args, kwargs)

    # ---- tensor subclasses (variables/torch_function.py) ---------------------------------------
    def as_subclass(self: InstructionTranslatorBase, tensor: TensorVariable, cls: VT) -> VT:
        """``tensor.as_subclass(cls)``."""
        return torch_function.as_subclass(self, tensor, cls)

    def dispatch_torch_function(self: InstructionTranslatorBase, fn: TorchFunctionVariable, args: Sequence[VT],
                                kwargs: dict[str, VT]) -> VT:
        """A torch function called with tensor-subclass arguments: through their ``__torch_function__``."""
        return torch_function.dispatch_call(self, fn, args, kwargs)

    def dispatch_tensor_method(self: InstructionTranslatorBase, obj: TensorVariable, name: str,
                               args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        """``obj.name(*args)`` where ``obj`` or an argument is a dispatching tensor subclass."""
        return torch_function.dispatch_tensor_method(self, obj, name, args, kwargs)

    def torch_tensor_attr(self: InstructionTranslatorBase, obj: TensorVariable, name: str) -> VT:
        """``obj.name`` resolved on ``torch.Tensor`` itself (``super().name`` in a subclass)."""
        return torch_function.torch_tensor_attr(self, obj, name)

    def subclass_operator(self: InstructionTranslatorBase, fn: Any, args: Sequence[VT]) -> VT:
        """An operator with a dispatching tensor-subclass operand, resolved as Python does."""
        return torch_function.dispatch_operator(self, fn, args)

    def make_tensor_subclass(self: InstructionTranslatorBase, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        """``torch.Tensor._make_subclass(cls, data, require_grad=False)``."""
        return torch_function.make_subclass(self, args, kwargs)

    def make_tuple(self: InstructionTranslatorBase, items: Sequence[VT]) -> VT:
        return TupleVariable(items)

    # ---- iteration ----------------------------------------------------------------------------
    def unpack(self: InstructionTranslatorBase, value: VT) -> list[VT]:
        """The items of iterating ``value`` at trace time."""
        if value.has_unpack_var_sequence(self):
            return value.unpack_var_sequence(self)
        if isinstance(value, NNModuleVariable):
            return self.unpack(value.call_method(self, "__iter__", [], {}))
        return value.unpack_var_sequence(self)

    def get_iter(self: InstructionTranslatorBase, value: VT) -> VT:
        """``iter(value)``; iterators over lists and dicts see mutations made
        during the loop, as in eager."""
        if isinstance(value, IteratorVariable):
            return value
        if isinstance(value, (ListVariable, DictVariable, LazyDictVariable, DictViewVariable, SetVariable)):
            return value.call_method(self, "__iter__", [], {})
        return ListIteratorVariable(self.unpack(value))

    def sort_items(self: InstructionTranslatorBase, items: list[VT], key: VT, reverse: bool) -> list[VT]:
        """``sorted(items, key=key, reverse=reverse)`` when the keys are constants."""
        use_key = not (key.is_python_constant() and key.as_python_constant() is None)
        keys = [(key.call_function(self, [i], {}) if use_key else i).as_python_constant() for i in items]
        order = sorted(range(len(items)), key=lambda n: keys[n], reverse=reverse)
        return [items[n] for n in order]

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

    # ---- attributes ---------------------------------------------------------------------------------
    def get_attr(self: InstructionTranslatorBase, obj: VT, name: str) -> VT:
        return obj.var_getattr(self, name)

    def has_attr(self: InstructionTranslatorBase, obj: VT, name: str) -> bool:
        """``hasattr(obj, name)``; for objects read from a source, guards that the
        dict the attribute was found in still holds it, or that the dicts it
        could appear in still lack it."""
        if isinstance(obj, (UserDefinedObjectVariable, NNModuleVariable, UserDefinedClassVariable)):
            pending = self.output.side_effects.pending_attr(obj, name)
            if pending is not None:
                return pending is not DELETED
            if isinstance(obj, UserDefinedClassVariable):
                guard_class_lookup(self, obj.value, name, class_attribute(obj.value, name))
                return hasattr(obj.value, name)
            if obj.source is None:
                cls = obj.python_type()
                attr = class_attribute(cls, name)
                guard_class_lookup(self, cls, name, attr)
                if not isinstance(obj, NewObjectVariable):
                    return hasattr(obj.value, name)
                if obj.instance_attr(self, name) is not None:
                    return True
                if isinstance(attr, types.MemberDescriptorType):  # an unset __slots__ entry
                    return False
                getter = inspect.isdatadescriptor(attr) or (
                    attr is _MISSING and class_attribute(cls, "__getattr__") is not _MISSING)
                if getter:  # a property, descriptor or __getattr__ answers: run it, as hasattr does
                    try:
                        obj.var_getattr(self, name)
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
                self.output.guards.add(DictContains(guarded_dicts[0][0], name, True))
                return True
            attr = class_attribute(type(obj.value), name)
            guard_class_lookup(self, type(obj.value), name, attr)
            if attr is not _MISSING:
                return True
            if isinstance(obj, NNModuleVariable):  # what Module.__getattr__ reads
                guarded_dicts += [(AttrSource(obj.source, h), obj.value.__dict__[h])
                                  for h in ("_parameters", "_buffers", "_modules")]
            for source, holder in guarded_dicts:
                present = name in holder
                self.output.guards.add(DictContains(source, name, present))
                if present:
                    return True
            return hasattr(obj.value, name)
        if isinstance(obj, PythonModuleVariable) and obj.source is not None and not is_library_module(obj.module):
            present = name in obj.module.__dict__
            self.output.guards.add(DictContains(AttrSource(obj.source, "__dict__"), name, present))
            return present or hasattr(obj.module, name)  # a module __getattr__ (PEP 562) may answer
        if isinstance(obj, TensorSubclassVariable):
            return torch_function.subclass_has_attr(self, obj, name)
        if isinstance(obj, TensorVariable):  # the FakeTensor answers for the class, not the instance dict
            return hasattr(obj.example, name) if obj.class_has(name) else obj.has_instance_attr(self, name)
        if obj.is_python_constant():
            return hasattr(obj.as_python_constant(), name)
        return hasattr(obj.python_type(), name)

    def delete_attr(self: InstructionTranslatorBase, obj: VT, name: str) -> None:
        """``del obj.name``: through a Python ``__delattr__`` override (inlined),
        else from the instance dict of a user object."""
        if isinstance(obj, UserDefinedObjectVariable):
            cls = obj.python_type()
            delattr_fn = class_attribute(cls, "__delattr__")
            if isinstance(delattr_fn, types.FunctionType):
                UserMethodVariable(delattr_fn, obj).call_function(self, [ConstantVariable(name)], {})
                return
            if delattr_fn is object.__delattr__ and not inspect.isdatadescriptor(class_attribute(cls, name)):
                obj.delete_raw(self, name)
                return
        unimplemented(
            gb_type="attribute delete",
            context=f"del {obj}.{name}",
            explanation="bytegraph deletes instance attributes of user objects (not descriptors, not "
                        "attributes of modules or builtin objects).",
            hints=("Move the del out of the compiled function.",),
        )

    def store_attr(self: InstructionTranslatorBase, obj: VT, name: str, value: VT) -> None:
        """``obj.name = value``: user objects and tensors decide (see their ``store_attr``);
        for modules a property setter is inlined and a plain store is recorded
        as a side effect."""
        if isinstance(obj, TensorSubclassVariable):
            torch_function.subclass_store_attr(self, obj, name, value)
            return
        if isinstance(obj, (UserDefinedObjectVariable, UserDefinedClassVariable, NestedUserFunctionVariable,
                            TensorVariable, ExceptionVariable)):
            obj.store_attr(self, name, value)
            return
        if isinstance(obj, NNModuleVariable):
            cls = type(obj.value)
            attr = class_attribute(cls, name)
            if isinstance(attr, property):
                if attr.fset is None:
                    unimplemented(
                        gb_type="user error",
                        context=f"property {cls.__qualname__}.{name} has no setter",
                        explanation="The traced code raises AttributeError; it runs natively so the error is the eager one.",
                        hints=("Assign a property that has a setter.",),
                    )
                self.wrap_const(attr.fset).call_function(self, [obj, value], {})
                return
            if cls.__setattr__ is not torch.nn.Module.__setattr__ or (
                attr is not _MISSING and inspect.isdatadescriptor(attr)
                and not isinstance(attr, types.MemberDescriptorType)
            ):
                unimplemented(
                    gb_type="unsupported attribute store",
                    context=f"setting {name!r} on {cls.__qualname__} (custom __setattr__ or descriptor)",
                    explanation="This assignment runs user code that may store something other than the value; "
                    "bytegraph traces only plain attribute stores and property setters.",
                    hints=("Move the assignment out of the compiled function.",),
                )
            if isinstance(obj, NNModuleVariable) and isinstance(value, TensorVariable) and (
                name in obj.value._parameters
            ):
                unimplemented(
                    gb_type="parameter assignment",
                    context=f"assigning module parameter {name!r}",
                    explanation="Replacing a registered parameter inside the compiled region is not supported.",
                    hints=("Assign parameters outside the compiled function.",),
                )
            self.output.side_effects.store_attr(obj, name, value)
            return
        unimplemented(
            gb_type="unsupported attribute store",
            context=f"setting {name!r} on {obj}",
            explanation="bytegraph cannot record this attribute assignment as a side effect.",
            hints=("Move the assignment out of the compiled function.",),
        )



def _make_partial(tx: InstructionTranslatorBase, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    if not args:
        raise_traced(TypeError, "type 'partial' takes at least one argument")
    return PartialVariable(args[0], args[1:], kwargs)


def _make_ordered_dict(tx: InstructionTranslatorBase, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    result = DictVariable({}, collections.OrderedDict)
    result.call_method(tx, "update", args, kwargs)
    return result


def _make_defaultdict(tx: InstructionTranslatorBase, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    factory = args[0] if args else ConstantVariable(None)
    result = DictVariable({}, collections.defaultdict, default_factory=factory)
    result.call_method(tx, "update", args[1:], kwargs)
    return result


def _make_deque(tx: InstructionTranslatorBase, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    maxlen = (args[1] if len(args) > 1 else kwargs.get("maxlen", ConstantVariable(None))).as_python_constant()
    if maxlen is not None and type(maxlen) is not int:
        unimplemented(
            gb_type="user error",
            context=f"deque(maxlen={type(maxlen).__name__})",
            explanation="The traced code raises TypeError; it runs natively so the error is the eager one.",
            hints=("Pass an int maxlen.",),
        )
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
    collections.OrderedDict: _make_ordered_dict,
    collections.defaultdict: _make_defaultdict,
    collections.deque: _make_deque,
    functools.partial: _make_partial,
    operator.itemgetter: _make_operator_getter(operator.itemgetter),
    operator.attrgetter: _make_operator_getter(operator.attrgetter),
    operator.methodcaller: _make_operator_getter(operator.methodcaller),
}



def _python_method(tx: InstructionTranslatorBase, vt: VT, name: str) -> VT | None:
    return vt.python_method(tx, name) if isinstance(vt, UserDefinedObjectVariable) else None


def _builtin_new(klass: type) -> bool:
    """Whether instances of ``klass`` are made by a builtin ``__new__`` that
    takes no part in construction (object's, or a dict's)."""
    new = klass.__new__
    return new is object.__new__ or new is dict.__new__ or new is collections.OrderedDict.__new__
