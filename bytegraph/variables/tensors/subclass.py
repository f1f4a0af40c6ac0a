"""Tensor subclasses: :class:`TensorSubclassVariable`, the attributes of its
instances, and construction.

A :class:`TensorSubclassVariable` is a plain tensor in the graph plus a Python
class. What eager does with such an object is reproduced at trace time:

- **Python-level attributes** (the instance dict, and methods and properties
  written in Python) are read and inlined like user code.
- **Torch-level attributes and methods** (defined by ``torch.Tensor``) go
  through the class's ``__torch_function__``
  (:mod:`~bytegraph.variables.tensors.subclass_dispatch`).
- **Construction**: ``MyTensor(t)`` with the default ``__new__`` (an alias of
  ``t``), a Python ``__new__``/``__init__``, ``t.as_subclass(MyTensor)`` and
  ``torch.Tensor._make_subclass(MyTensor, t)``.

This module and :mod:`~bytegraph.variables.tensors.subclass_dispatch` use each
other, so each imports the other as a module.
"""
from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING, Any, Sequence

import torch

from bytegraph.breaks import unimplemented
from bytegraph.graph.side_effects import DELETED
from bytegraph.guards.guards import DictContains
from bytegraph.guards.source import AttrSource
from bytegraph.variables import tx as protocol
from bytegraph.variables.base import OBJECT_CLASS, VariableTracker
from bytegraph.variables.callables.functions import UserFunctionVariable, UserMethodVariable
from bytegraph.variables.callables.torch_functions import TorchFunctionVariable
from bytegraph.variables.constant import ConstantVariable, raise_traced
from bytegraph.variables.objects.class_lookup import _MISSING, class_attribute
from bytegraph.variables.objects.user_classes import UserDefinedClassVariable
from bytegraph.variables.objects.user_objects import bind_class_attribute, instance_answer_of_object
from bytegraph.variables.operators import TENSOR_OPERATORS
from bytegraph.variables.tensors import subclass_dispatch
from bytegraph.variables.tensors.graph_calls import dispatches, graph_call, overloaded_args
from bytegraph.variables.tensors.tensor import TensorVariable
from bytegraph.variables.tx import wrap, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: the classes that define the torch-level tensor API (their attributes subclass_dispatch.dispatch)
_TORCH_CLASSES = (torch.Tensor, torch._C.TensorBase, object)

#: Tensor's C attributes that do not call __torch_function__ (torch's python_variable_methods.cpp;
#: tests check them with a probe subclass): they run as on a plain tensor.
NO_TORCH_FUNCTION = frozenset(
    {"as_subclass", "_fix_weakref", "_use_count", "_view_func", "_view_func_unsafe", "_rev_view_func_unsafe",
     "_has_symbolic_sizes_strides", "_python_dispatch"}
)

_DEFAULT_NEW = torch._C.TensorBase.__dict__["__new__"]


# ---- the tensor-subclass VariableTracker --------------------------------------------------------

class TensorSubclassVariable(TensorVariable):
    """A tensor whose Python class is a ``torch.Tensor`` subclass (``class_type``).

    The data is a plain tensor in the graph; the class lives in this VT.
    Attribute reads, method calls and operators follow the class: attributes
    and methods written in Python are inlined like user code, and torch
    operations go through the class's ``__torch_function__`` as in eager
    (the functions of this module).
    Inside ``torch._C.DisableTorchFunctionSubclass()`` it behaves as a plain
    tensor, except for its Python-level attributes.

    An instance made during the trace is rebuilt after the graph as
    ``out.as_subclass(class_type)`` plus its instance attributes; an input is
    reloaded from its source.

    Attributes:
        attrs: instance attributes of an instance made in the trace (name -> VT).
        value: the real object of an input (its instance dict is read through
            the source, with guards), else None.
    """

    mutable = True  # rebuilt once per graph: every reference is the same object

    def __init__(self, node: torch.fx.Node, example: torch.Tensor, class_type: type, source=None,
                 value: torch.Tensor | None = None):
        super().__init__(node, example, source, class_type)
        self.attrs: dict[str, VT] = {}
        self.value = value

    #: operators go through the class's dunders before any other operand's rules
    override_rank = 2

    instance_answer = instance_answer_of_object

    def operator_override(self, tx: Tx, op: Any, args: Sequence[VT]) -> Any:
        """An operator with this operand, when its class dispatches: resolved on
        the operands' classes as Python does (:func:`dispatch_operator`)."""
        if op in TENSOR_OPERATORS and dispatches(tx, self):
            return subclass_dispatch.dispatch_operator(tx, op, args)
        return NotImplemented

    def var_getattr(self, tx: Tx, name: str) -> VT:
        return subclass_getattr(tx, self, name)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return subclass_call_method(tx, self, name, args, kwargs)

    def has_attr(self, tx: Tx, name: str) -> bool:
        return subclass_has_attr(tx, self, name)

    def store_attr(self, tx: Tx, name: str, value: VT) -> None:
        subclass_store_attr(tx, self, name, value)

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        if overloaded_args(tx, [self]):
            unimplemented(
                gb_type="tensor subclass operation",
                context=f"iteration over a {self.class_type.__qualname__}",
                explanation="Iterating a tensor subclass calls its __torch_function__ in an order (dim, unbind, "
                "__len__ as a length hint) bytegraph does not reproduce; it runs natively.",
                hints=("Index the tensor explicitly, or iterate outside the compiled function.",),
            )
        return super().unpack_var_sequence(tx)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(torch.Tensor.as_subclass)
        codegen.load_graph_output(self.node)
        codegen.load_const(self.class_type)
        codegen.call(2)
        for name, value in self.attrs.items():  # obj.__dict__[name] = value, the object staying on the stack
            codegen.reconstruct(value)
            codegen.emit("COPY", 2)
            codegen.load_attr("__dict__")
            codegen.load_const(name)
            codegen.emit("STORE_SUBSCR")

    def __repr__(self) -> str:
        return f"TensorSubclassVariable({self.class_type.__qualname__}, {self.node.name})"


# ---- plain data, Python class --------------------------------------------------------------------

def as_plain_tensor(t: torch.Tensor) -> torch.Tensor:
    """A tensor-subclass instance as a plain ``torch.Tensor`` sharing its data and
    autograd history (what the graph receives for a subclass input; no
    ``__torch_function__`` runs)."""
    return torch.Tensor.as_subclass(t, torch.Tensor)


@protocol.as_subclass.provide
def as_subclass(tx: Tx, tensor: TensorVariable, cls_vt: VT) -> VT:
    """``tensor.as_subclass(cls)``: a new object of ``cls`` sharing the tensor's
    data and autograd history (no ``__init__``, no instance attributes).

    Raises:
        Unsupported: when ``cls`` is not a constant ``torch.Tensor`` subclass
            traced this way (``__torch_dispatch__`` subclasses are not).
    """
    cls = cls_vt.as_python_constant() if cls_vt.is_python_constant() else None
    if not (isinstance(cls, type) and issubclass(cls, torch.Tensor)) or not traceable_subclass(cls):
        unimplemented(
            gb_type="tensor subclass construction",
            context=f"as_subclass({cls_vt})",
            explanation="bytegraph traces as_subclass to torch.Tensor subclasses without __torch_dispatch__ only.",
            hints=("Convert outside the compiled function.",),
        )
    if cls is torch.Tensor:
        return TensorVariable(tensor.node, tensor.example)
    return TensorSubclassVariable(tensor.node, tensor.example, cls)


def traceable_subclass(cls: type) -> bool:
    """Whether bytegraph traces tensors of class ``cls`` (plain data plus a Python
    class): not wrapper subclasses, whose ``__torch_dispatch__`` computes with
    tensors held inside (flattened by ``__tensor_flatten__``)."""
    dispatch = getattr(cls, "__torch_dispatch__", None)
    return cls is torch.Tensor or getattr(dispatch, "__func__", dispatch) is torch._C._disabled_torch_dispatch_impl


# ---- attributes ----------------------------------------------------------------------------------

def _torch_level(cls: type, name: str) -> bool:
    """Whether ``cls.name`` is defined by torch.Tensor (or its bases), not by the user's subclass."""
    owner = next((k for k in cls.__mro__ if name in k.__dict__), None)
    return owner in _TORCH_CLASSES


def _instance_attr(tx: Tx, obj: TensorSubclassVariable, name: str) -> VT | None:
    """The instance ``__dict__`` entry ``name``: stored in the trace, or read
    (guarded) from an input's real dict; None when absent."""
    if obj.source is None:
        return obj.attrs.get(name)
    pending = tx.output.side_effects.pending_attr(obj, name)
    if pending is not None:
        return None if pending is DELETED else pending
    present = name in obj.value.__dict__
    tx.output.guards.add(DictContains(AttrSource(obj.source, "__dict__"), name, present))
    return wrap(tx, obj.value.__dict__[name], AttrSource(obj.source, name)) if present else None


def subclass_getattr(tx: Tx, obj: TensorSubclassVariable, name: str) -> VT:
    """``obj.name`` as Python resolves it on the subclass instance."""
    cls = obj.class_type
    attr = class_attribute(cls, name)
    if attr is OBJECT_CLASS:  # ``__class__``, not overridden
        return wrap_const(tx, cls)
    torch_level = attr is not _MISSING and _torch_level(cls, name)
    if attr is not _MISSING and inspect.isdatadescriptor(attr):  # data descriptors come before the instance dict
        if torch_level and name != "__dict__":  # .shape, .dtype, .grad...
            return torch_tensor_attr(tx, obj, name)
        if isinstance(attr, property):
            return bind_class_attribute(tx, obj, cls, name, attr)
        unimplemented(
            gb_type="unsupported tensor attribute",
            context=f"{cls.__qualname__}.{name} ({type(attr).__name__})",
            explanation="bytegraph does not model this descriptor on a tensor subclass.",
        )
    found = _instance_attr(tx, obj, name)
    if found is not None:
        return found
    if attr is _MISSING:
        getattr_fn = class_attribute(cls, "__getattr__")
        if isinstance(getattr_fn, types.FunctionType):
            return UserMethodVariable(getattr_fn, obj).call_function(tx, [ConstantVariable(name)], {})
        raise_traced(AttributeError, f"{cls.__qualname__!r} object has no attribute {name!r}")
    if torch_level:
        return torch_tensor_attr(tx, obj, name)
    return bind_class_attribute(tx, obj, cls, name, attr)


def subclass_call_method(tx: Tx, obj: TensorSubclassVariable, name: str, args: Sequence[VT],
                         kwargs: dict[str, VT]) -> VT:
    """``obj.name(*args, **kwargs)``: torch's methods dispatch (or run plainly while
    dispatch is off); the user's methods and instance attributes are called
    like user code."""
    cls = obj.class_type
    attr = class_attribute(cls, name)
    special = name.startswith("__") and name.endswith("__")  # operators look these up on the type only
    if attr is _MISSING or not _torch_level(cls, name) or inspect.isdatadescriptor(attr) or (
        not special and _instance_attr(tx, obj, name) is not None
    ):
        return subclass_getattr(tx, obj, name).call_function(tx, list(args), kwargs)
    return torch_method_call(tx, obj, name, args, kwargs)


def torch_method_call(tx: Tx, obj: TensorVariable, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``torch.Tensor.name(obj, *args, **kwargs)``: dispatched when ``obj`` or an
    argument is overloaded, else the plain tensor operation."""
    if name in NO_TORCH_FUNCTION:
        with subclass_dispatch.disabled_dispatch(tx):
            return TensorVariable.call_method(obj, tx, name, args, kwargs)
    if overloaded_args(tx, [obj, *args, *kwargs.values()]):
        return subclass_dispatch.dispatch_tensor_method(tx, obj, name, args, kwargs)
    return TensorVariable.call_method(obj, tx, name, args, kwargs)


class TorchMethodVariable(VariableTracker):
    """``torch.Tensor``'s own method ``name`` bound to a tensor, bypassing what the
    tensor's class overrides (``super().__add__(other)`` inside a subclass)."""

    def __init__(self, obj: TensorVariable, name: str):
        super().__init__()
        self.obj = obj
        self.name = name

    def python_type(self) -> type:
        return types.MethodType

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return torch_method_call(tx, self.obj, self.name, args, kwargs)

    def reconstruct(self, codegen: PyCodegen) -> None:
        """``types.MethodType(torch.Tensor.<name>, obj)``."""
        codegen.load_callable(types.MethodType)
        codegen.load_const(getattr(torch.Tensor, self.name))
        codegen.reconstruct(self.obj)
        codegen.call(2)

    def __repr__(self) -> str:
        return f"TorchMethodVariable({self.obj}.{self.name})"


def torch_tensor_attr(tx: Tx, obj: TensorVariable, name: str) -> VT:
    """``obj.name`` resolved on ``torch.Tensor`` (``super().name`` in a subclass)."""
    attr = class_attribute(torch.Tensor, name)
    if attr is _MISSING:
        raise_traced(AttributeError, f"'super' object has no attribute {name!r}")
    if isinstance(attr, property):
        return wrap_const(tx, attr.fget).call_function(tx, [obj], {})
    if inspect.isdatadescriptor(attr):
        if overloaded_args(tx, [obj]) and name not in NO_TORCH_FUNCTION:
            return subclass_dispatch.dispatch(tx, TorchFunctionVariable(attr.__get__), [obj], None)
        return TensorVariable.var_getattr(obj, tx, name)
    if callable(attr):
        return TorchMethodVariable(obj, name)
    return wrap_const(tx, getattr(torch.Tensor, name))


def subclass_has_attr(tx: Tx, obj: TensorSubclassVariable, name: str) -> bool:
    """``hasattr(obj, name)``: properties and dispatching C properties are read, as eager reads them."""
    attr = class_attribute(obj.class_type, name)
    if attr is not _MISSING and inspect.isdatadescriptor(attr):
        subclass_getattr(tx, obj, name)
        return True
    return attr is not _MISSING or _instance_attr(tx, obj, name) is not None


def subclass_store_attr(tx: Tx, obj: TensorSubclassVariable, name: str, value: VT) -> None:
    """``obj.name = value``: a plain instance attribute (into the trace's dict of a
    new instance, or a side effect on an input)."""
    cls = obj.class_type
    attr = class_attribute(cls, name)
    if class_attribute(cls, "__setattr__") is not object.__setattr__ or (
        attr is not _MISSING and inspect.isdatadescriptor(attr)
    ):
        unimplemented(
            gb_type="unsupported attribute store",
            context=f"setting {name!r} on a {cls.__qualname__}",
            explanation="Storing through a property, a tensor attribute (requires_grad, data...) or a custom "
            "__setattr__ of a tensor subclass is not traced.",
            hints=("Move the assignment out of the compiled function.",),
        )
    if obj.source is None:
        obj.attrs[name] = value
    else:
        tx.output.side_effects.store_attr(obj, name, value)


# ---- construction --------------------------------------------------------------------------------

def construct(tx: Tx, cls_vt: UserDefinedClassVariable, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``cls(*args, **kwargs)`` for a ``torch.Tensor`` subclass: a Python ``__new__``
    is inlined; the default one is supported for ``cls(tensor)`` (an alias of
    the tensor sharing its data and autograd history); then a Python
    ``__init__`` is inlined."""
    cls = cls_vt.value
    new = class_attribute(cls, "__new__")
    if isinstance(new, staticmethod) and isinstance(new.__func__, types.FunctionType):
        obj = tx.inline_call(UserFunctionVariable(new.__func__), [cls_vt, *args], kwargs)
    elif new is _DEFAULT_NEW and len(args) == 1 and not kwargs and isinstance(args[0], TensorVariable):
        obj = as_subclass(tx, args[0], cls_vt)
    else:
        unimplemented(
            gb_type="tensor subclass construction",
            context=f"{cls.__qualname__}(...) with {len(args)} positional and {len(kwargs)} keyword arguments",
            explanation="bytegraph constructs tensor subclasses from one tensor with the default __new__, or "
            "through a __new__ written in Python; other forms (data lists, sizes) are not traced.",
            hints=("Construct it outside the compiled function, or use t.as_subclass(cls).",),
        )
    if not (isinstance(obj, TensorSubclassVariable) and issubclass(obj.class_type, cls)):
        return obj  # __new__ returned something else: __init__ is not called
    init = class_attribute(cls, "__init__")
    if isinstance(init, types.FunctionType):
        tx.inline_call(UserMethodVariable(init, obj), [obj, *args], kwargs)
    return obj


@protocol.make_tensor_subclass.provide
def make_subclass(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``torch.Tensor._make_subclass(cls, data, require_grad=False)``: a detached
    alias of ``data`` of class ``cls``."""
    names = ("cls", "data", "require_grad")
    bound = dict(zip(names, args))
    if len(args) > 3 or set(kwargs) - set(names) or set(kwargs) & set(bound):
        bound = {}
    bound.update(kwargs)
    require_grad = bound.get("require_grad", ConstantVariable(False))
    data, cls_vt = bound.get("data"), bound.get("cls")
    if not (isinstance(data, TensorVariable) and cls_vt is not None and require_grad.is_python_constant()
            and not require_grad.as_python_constant()):
        unimplemented(
            gb_type="tensor subclass construction",
            context="torch.Tensor._make_subclass with these arguments",
            explanation="bytegraph traces _make_subclass(cls, tensor[, require_grad=False]) only: a new leaf "
            "requiring grad cannot be created inside a graph.",
            hints=("Construct it outside the compiled function.",),
        )
    with subclass_dispatch.disabled_dispatch(tx):
        detached = graph_call(tx, "call_method", "detach", [data], {}) if data.example.requires_grad else data
    return as_subclass(tx, detached, cls_vt)


def check_traceable(cls: type) -> None:
    """Graph-break for subclasses bytegraph does not trace (``__torch_dispatch__``)."""
    if not traceable_subclass(cls):
        unimplemented(
            gb_type="tensor subclass with __torch_dispatch__",
            context=f"{cls.__qualname__} overrides __torch_dispatch__",
            explanation="Wrapper subclasses compute with the tensors they hold (__tensor_flatten__); bytegraph "
            "does not trace them, so this runs natively.",
            hints=("Pass the inner tensors, or run this outside the compiled function.",),
        )
