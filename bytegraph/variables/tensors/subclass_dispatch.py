"""``__torch_function__`` dispatch: how torch operations on tensor-subclass
instances reach their classes' ``__torch_function__``, as eager does.

- **Torch operations** (``torch.*`` functions, ``Tensor`` methods, operators,
  C properties such as ``.shape``) collect their *overloaded arguments* with
  eager's rule (instances of subclasses with an enabled ``__torch_function__``;
  one per type, subclasses before their bases, otherwise left to right) and
  call each class's ``__torch_function__(func, types, args, kwargs)``, inlined,
  until one returns something other than ``NotImplemented``. ``func``,
  ``args`` and ``kwargs`` are what eager passes: the function called, the
  ``Tensor`` method (``x + y`` passes ``TensorBase.add``: read once from eager
  by :func:`_dunder_func`), or the property getter (``Tensor.shape.__get__``);
  ``kwargs`` is None when a C function got none.
- **Torch functions written in Python** (``F.relu``, ``Tensor.split``,
  ``Tensor.__len__``) are inlined: they call ``has_torch_function`` (answered
  from the argument types) and ``handle_torch_function``, which is modelled here
  (:data:`MODELED_FUNCTIONS`), so they dispatch with exactly eager's arguments.
- **``Tensor.__torch_function__``**, the default (reached directly or through
  ``super()``), is modelled as ``torch/_tensor.py`` writes it: run ``func`` with
  subclass dispatch disabled, then convert tensor results to the class
  (``as_subclass``; tuples and lists item by item).
- **``torch._C.DisableTorchFunctionSubclass()``** turns dispatch off at trace
  time (a counter on the OutputGraph, :class:`disabled_dispatch`): operations
  then run as on plain tensors.

This module and :mod:`~bytegraph.variables.tensors.subclass` (the kind) use
each other, so each imports the other as a module.
"""
from __future__ import annotations

import functools
import operator
import types
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from bytegraph.breaks import unimplemented, user_error
from bytegraph.guards.guards import IdMatch
from bytegraph.guards.source import AttrSource, ConstSource
from bytegraph.variables import tx as protocol
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables.functions import UserFunctionVariable, UserMethodVariable
from bytegraph.variables.callables.torch_functions import TorchFunctionVariable, is_torch_op
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.containers.dicts import DictVariable, dict_of
from bytegraph.variables.containers.named_tuples import NamedTupleVariable
from bytegraph.variables.containers.sequences import BaseSequenceVariable, TupleVariable
from bytegraph.variables.objects.class_lookup import _MISSING, class_attribute
from bytegraph.variables.operators import BINARY_DUNDERS, UNARY_DUNDERS
from bytegraph.variables.tensors import subclass
from bytegraph.variables.tensors.graph_calls import overloaded_args
from bytegraph.variables.tensors.symbolic import SymNodeVariable
from bytegraph.variables.tensors.tensor import TensorVariable
from bytegraph.variables.tx import wrap_const
if TYPE_CHECKING:
    from bytegraph.variables.tensors.subclass import TensorSubclassVariable
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: the code shared by Tensor's operator wrappers (``__rsub__``, ``__floordiv__``,
#: ``__pow__``...): ``handle_torch_function(wrapped, (self, *args), ...)`` inside
#: ``try: ... except TypeError``. They are dispatched directly, not inlined.
_WRAPPER_CODE = torch._tensor._handle_torch_function_and_wrap_type_error_to_not_implemented(lambda self: self).__code__

_DEFAULT_TORCH_FUNCTION = torch.Tensor.__dict__["__torch_function__"]

#: in-place operator -> (its method, the binary operator it falls back to)
_INPLACE_DUNDERS = {
    operator.iadd: ("__iadd__", operator.add), operator.isub: ("__isub__", operator.sub),
    operator.imul: ("__imul__", operator.mul), operator.itruediv: ("__itruediv__", operator.truediv),
    operator.ifloordiv: ("__ifloordiv__", operator.floordiv), operator.imod: ("__imod__", operator.mod),
    operator.ipow: ("__ipow__", operator.pow), operator.imatmul: ("__imatmul__", operator.matmul),
    operator.iand: ("__iand__", operator.and_), operator.ior: ("__ior__", operator.or_),
    operator.ixor: ("__ixor__", operator.xor), operator.ilshift: ("__ilshift__", operator.lshift),
    operator.irshift: ("__irshift__", operator.rshift),
}


# ---- dispatch ------------------------------------------------------------------------------------

def dispatch(tx: Tx, func: VT, args: Sequence[VT], kwargs: dict[str, VT] | None,
             relevant: Sequence[VT] | None = None) -> VT:
    """Call ``__torch_function__(func, types, args, kwargs)`` of the overloaded
    arguments among ``relevant`` (default: ``args`` and ``kwargs``) as eager does.

    Raises:
        Unsupported: when a ``__torch_function__`` is not a classmethod written
            in Python, or every one returns NotImplemented (eager's TypeError).
    """
    overloaded = _in_dispatch_order(overloaded_args(tx, list(relevant if relevant is not None else [
        *args, *(kwargs or {}).values()])))
    types_vt = TupleVariable([wrap_const(tx, a.class_type) for a in overloaded])
    args_vt = TupleVariable(list(args))
    kwargs_vt = ConstantVariable(None) if kwargs is None else DictVariable(
        {k: (ConstantVariable(k), v) for k, v in kwargs.items()}
    )
    for arg in overloaded:
        cls = arg.class_type
        impl = class_attribute(cls, "__torch_function__")
        if isinstance(impl, classmethod):  # replacing the override later recompiles
            source = AttrSource(AttrSource(ConstSource(cls, cls.__qualname__), "__torch_function__"), "__func__")
            tx.output.guards.add(IdMatch.of(source, impl.__func__))
        if impl is _DEFAULT_TORCH_FUNCTION:
            result = default_torch_function(tx, cls, func, types_vt, args_vt, kwargs_vt)
        elif isinstance(impl, classmethod) and isinstance(impl.__func__, types.FunctionType):
            method = UserMethodVariable(impl.__func__, wrap_const(tx, cls))
            result = method.call_function(tx, [func, types_vt, args_vt, kwargs_vt], {})
        else:
            unimplemented(
                gb_type="unsupported __torch_function__",
                context=f"{cls.__qualname__}.__torch_function__ is {type(impl).__name__}",
                explanation="bytegraph traces __torch_function__ written in Python as a classmethod (as torch "
                "requires).",
                hints=("Make __torch_function__ a classmethod.",),
            )
        if not (isinstance(result, ConstantVariable) and result.value is NotImplemented):
            return result
    user_error(
        "TypeError",
        context=f"every __torch_function__ returned NotImplemented for {func}",
        hint="Return a value from __torch_function__ for this operation.",
    )


def _in_dispatch_order(args: list[TensorSubclassVariable]) -> list[TensorSubclassVariable]:
    """Eager's order of overloaded arguments: the first of each type, a subclass
    placed before the first argument of one of its bases."""
    ordered: list[TensorSubclassVariable] = []
    for arg in args:
        if any(o.class_type is arg.class_type for o in ordered):
            continue
        index = next((i for i, o in enumerate(ordered) if issubclass(arg.class_type, o.class_type)), len(ordered))
        ordered.insert(index, arg)
    return ordered


def default_torch_function(tx: Tx, cls: type, func: VT, types_vt: VT, args: VT, kwargs: VT) -> VT:
    """``torch.Tensor.__torch_function__``: ``func(*args, **kwargs)`` with subclass
    dispatch disabled, tensor results converted to ``cls``; NotImplemented when
    ``cls`` is not a subclass of every type in ``types``."""
    if not all(issubclass(cls, t.as_python_constant()) for t in types_vt.unpack_var_sequence(tx)):
        return ConstantVariable(NotImplemented)
    kw = {}
    if not (kwargs.is_python_constant() and kwargs.as_python_constant() is None):
        kw = {k.as_python_constant(): v for k, v in dict_of(tx, [kwargs], {}).items.values()}
    with disabled_dispatch(tx):
        result = func.call_function(tx, args.unpack_var_sequence(tx), kw)
    if func.is_python_constant() and func.as_python_constant() in torch.overrides.get_default_nowrap_functions():
        return result
    return convert(tx, result, cls)


def convert(tx: Tx, value: VT, cls: type) -> VT:
    """``torch._tensor._convert``: tensors not of ``cls`` become ``cls`` (as_subclass),
    tuples and lists are converted item by item."""
    if cls is torch.Tensor:
        return value
    if isinstance(value, TensorVariable) and not issubclass(value.python_type(), cls):
        return subclass.as_subclass(tx, value, wrap_const(tx, cls))
    if isinstance(value, BaseSequenceVariable) and issubclass(value.python_type(), (tuple, list)):
        items = [convert(tx, item, cls) for item in value.items]
        if isinstance(value, NamedTupleVariable):  # type(ret)(...) keeps torch.return_types
            return NamedTupleVariable(items, value.tuple_cls)
        return value.with_items(items)
    return value


class disabled_dispatch:
    """Context manager: subclass dispatch is off in the trace while it is entered."""

    def __init__(self, tx: Tx):
        self.output = tx.output

    def __enter__(self) -> None:
        self.output.subclass_dispatch_disabled += 1

    def __exit__(self, *exc: Any) -> None:
        self.output.subclass_dispatch_disabled -= 1


@protocol.dispatch_torch_function.provide
def dispatch_call(tx: Tx, fn: TorchFunctionVariable, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """A torch function called with overloaded arguments: C functions dispatch
    directly; Python ones are inlined (they dispatch themselves)."""
    target = fn.fn
    if isinstance(target, types.FunctionType):
        if target.__code__ is _WRAPPER_CODE:
            return dispatch(tx, fn, args, dict(kwargs))
        return tx.inline_call(UserFunctionVariable(target), list(args), kwargs)
    return dispatch(tx, fn, args, dict(kwargs) if kwargs else None)


@protocol.dispatch_tensor_method.provide
def dispatch_tensor_method(tx: Tx, obj: TensorVariable, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``torch.Tensor.name(obj, *args, **kwargs)`` (torch's implementation, whatever
    ``obj``'s class overrides) when an argument (or ``obj``) is overloaded."""
    attr = class_attribute(torch.Tensor, name)
    if isinstance(attr, types.FunctionType):
        if attr.__code__ is _WRAPPER_CODE:
            return dispatch(tx, TorchFunctionVariable(attr), [obj, *args], dict(kwargs))
        return tx.inline_call(UserFunctionVariable(attr), [obj, *args], kwargs)  # it dispatches itself
    func = None
    if isinstance(attr, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        func = _dunder_func(name) if name.startswith("__") else attr
    if func is None:
        unimplemented(
            gb_type="tensor subclass operation",
            context=f"Tensor.{name} on a tensor subclass",
            explanation="bytegraph does not know how eager dispatches this Tensor attribute to __torch_function__.",
            hints=("Call it outside the compiled function.",),
        )
    return dispatch(tx, TorchFunctionVariable(func), [obj, *args], dict(kwargs) if kwargs else None)


class _Dispatched(Exception):
    pass


class _Probe(torch.Tensor):
    """Records the ``func`` eager passes to ``__torch_function__``, then stops."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
        raise _Dispatched(func, args)


@functools.lru_cache(maxsize=None)
def _dunder_func(name: str) -> Any:
    """The ``func`` eager passes to ``__torch_function__`` for Tensor's C method
    ``name`` (``__add__`` and ``__radd__`` pass ``TensorBase.add``, ``__iadd__``
    passes ``add_``...), with the instance first in ``args``. Read from eager by
    calling it on a probe subclass; None when it does not dispatch that way."""
    probe = torch.empty(0).as_subclass(_Probe)
    for args in ((torch.empty(0),), (), (0, torch.empty(0))):
        try:
            getattr(probe, name)(*args)
        except _Dispatched as stop:
            func, passed = stop.args
            return func if passed and passed[0] is probe else None
        except Exception:  # wrong arity for this method: try the next
            continue
    return None


def dispatch_operator(tx: Tx, fn: Callable, args: Sequence[VT]) -> VT:
    """An operator with an overloaded operand, looked up on the operands' classes
    as Python does (reflected method second, or first for a right operand whose
    class is a subclass overriding it)."""
    if fn is operator.getitem and isinstance(args[0], TensorVariable):
        return args[0].call_method(tx, "__getitem__", [args[1]], {})
    if fn in UNARY_DUNDERS and len(args) == 1:
        return args[0].call_method(tx, UNARY_DUNDERS[fn], [], {})
    if fn in _INPLACE_DUNDERS:
        name, binary = _INPLACE_DUNDERS[fn]
        target, value = args
        if isinstance(target, TensorVariable) and class_attribute(target.python_type(), name) is not _MISSING:
            result = target.call_method(tx, name, [value], {})
            if not _is_not_implemented(result):
                return result
        return dispatch_operator(tx, binary, args)
    if fn in BINARY_DUNDERS and len(args) == 2:
        left, right = args
        name, reflected = BINARY_DUNDERS[fn]
        ltype, rtype = left.python_type(), right.python_type()
        right_first = rtype is not ltype and issubclass(rtype, ltype) and class_attribute(
            rtype, reflected) is not class_attribute(ltype, reflected)
        attempts = [(right, reflected, left), (left, name, right)] if right_first else [
            (left, name, right), (right, reflected, left)]
        for obj, dunder, other in attempts:
            if isinstance(obj, TensorVariable) and class_attribute(obj.python_type(), dunder) is not _MISSING:
                result = obj.call_method(tx, dunder, [other], {})
                if not _is_not_implemented(result):
                    return result
            elif not (isinstance(obj, (TensorVariable, SymNodeVariable)) or obj.is_python_constant()):
                break  # a non-tensor operand whose own operator bytegraph does not model here
    unimplemented(
        gb_type="tensor subclass operation",
        context=f"{getattr(fn, '__name__', fn)} on {', '.join(type(a).__name__ for a in args)}",
        explanation="bytegraph could not resolve this operator on a tensor subclass as Python would.",
        hints=("Call the torch function (torch.add...) instead, or run it outside the compiled function.",),
    )


def _is_not_implemented(vt: VT) -> bool:
    return isinstance(vt, ConstantVariable) and vt.value is NotImplemented


# ---- Python functions bytegraph models instead of inlining ---------------------------------------

def _handle_torch_function(tx: Tx, args: list[VT], kwargs: dict[str, VT]) -> VT:
    """``torch.overrides.handle_torch_function(public_api, relevant_args, *args, **kwargs)``."""
    public_api, relevant, *rest = args
    if not overloaded_args(tx, relevant.unpack_var_sequence(tx)):
        unimplemented(
            gb_type="tensor subclass operation",
            context="handle_torch_function without tensor subclass arguments",
            explanation="Only dispatch to tensor subclasses is traced (torch function modes are not).",
            hints=("Call it outside the compiled function.",),
        )
    if public_api.is_python_constant() and is_torch_op(public_api.as_python_constant()):
        public_api = TorchFunctionVariable(public_api.as_python_constant())
    return dispatch(tx, public_api, rest, kwargs, relevant=relevant.unpack_var_sequence(tx))


def _tensor_torch_function(tx: Tx, args: list[VT], kwargs: dict[str, VT]) -> VT:
    """``torch.Tensor.__torch_function__(cls, func, types, args=(), kwargs=None)``,
    e.g. through ``super().__torch_function__(...)``."""
    names = ("cls", "func", "types", "args", "kwargs")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    bound.setdefault("args", TupleVariable([]))
    bound.setdefault("kwargs", ConstantVariable(None))
    if set(bound) != set(names) or len(args) > len(names):
        user_error(
            "TypeError",
            context="Tensor.__torch_function__ called with wrong arguments",
            hint="Pass func, types, args and kwargs.",
        )
    return default_torch_function(tx, bound["cls"].as_python_constant(), bound["func"], bound["types"],
                                  bound["args"], bound["kwargs"])


#: Python functions modelled rather than inlined (``tx.inline_call`` consults it).
MODELED_FUNCTIONS: dict[Any, Callable[[Tx, list, dict], VT]] = {
    torch.overrides.handle_torch_function: _handle_torch_function,
    _DEFAULT_TORCH_FUNCTION.__func__: _tensor_torch_function,
}
