"""Putting operations in the graph: :func:`graph_call` and how results are wrapped.

:func:`graph_call` runs an operation on the FakeTensor examples of its
arguments, adds its fx node and wraps the result (:func:`wrap_fx_value`:
tensors, symbolic scalars, containers of them, constants). Every operation
reaches the graph here, after tensor-subclass arguments had their
``__torch_function__`` run (:func:`overloaded_args`).

This module and :mod:`bytegraph.variables.tensors.tensor` use each other (a tensor
method adds a node; a node's result is a tensor), so each imports the other
as a module and reads its names when called.
"""
from __future__ import annotations

import builtins
import operator
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch
import torch.fx

from bytegraph.breaks import unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable, as_torch_scalar
from bytegraph.variables.containers.dicts import DictVariable
from bytegraph.variables.containers.named_tuples import NamedTupleVariable
from bytegraph.variables.containers.sequences import ListVariable, SizeVariable, TupleVariable
from bytegraph.variables.tensors import symbolic, tensor
from bytegraph.variables.tensors.default_dtype import pin_default_dtype

if TYPE_CHECKING:
    from bytegraph.variables.tensors.subclass import TensorSubclassVariable
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: TensorVariable kinds of traced wrapper subclasses, by the class of their
#: FakeTensor example (filled by their modules: ``variables/tensors/dtensor.py``)
TENSOR_VARIABLE_KINDS: dict[type, type] = {}


def graph_operator(tx: Tx, op: Any, args: Sequence[VT]) -> VT:
    """``op(*args)`` for a Python operator with a tensor or symbolic-scalar
    operand: one graph node (``abs`` as ``operator.abs``). A NumPy scalar
    constant operand is the Python number torch reads it as."""
    args = [ConstantVariable(as_torch_scalar(a.value)) if type(a) is ConstantVariable else a for a in args]
    return graph_call(tx, "call_function", operator.abs if op is builtins.abs else op, args, {})


def graph_call(tx: Tx, kind: str, target: Any, args: Sequence[VT], kwargs: dict[str, VT],
               check: Callable[[Any], None] | None = None, mutates_args: bool = False) -> VT:
    """Add ``target(*args, **kwargs)`` to the graph and wrap its result.

    Args:
        kind: ``"call_function"`` (target is a callable) or ``"call_method"``
            (target is a method name, ``args[0]`` the tensor).
        args/kwargs: VTs convertible to graph arguments (tensors, constants,
            containers of them).
        check: called with the FakeTensor result before the node is added; it
            raises a graph break to reject the result.
        mutates_args: whether the operation may write its tensor arguments
            though its name does not say so (a registered operator whose schema
            marks an argument mutable); recorded on the node for
            ``OutputGraph.mutates_inputs``.

    Returns:
        A VT for the result; an operation returning one of its tensor arguments
        (in-place ops, ``contiguous()`` of a contiguous tensor...) returns that
        argument's VT, so identity is preserved.

    Raises:
        Unsupported: when an argument cannot be a graph argument, or when
            running the operation on FakeTensors fails (data-dependent output,
            an error eager would raise...).
    """
    node, example = graph_node(tx, kind, target, args, kwargs, check)
    if mutates_args:
        node.meta["mutates_args"] = True
    operands = {id(v.example): v for v in _tensor_operands([*args, *kwargs.values()])}
    if isinstance(example, torch.Tensor) and id(example) in operands:
        return operands[id(example)]
    result = wrap_fx_value(tx, node, example)
    if isinstance(result, (TupleVariable, ListVariable)) and operands:  # out=(values, indices) returns those tensors
        items = [operands.get(id(i.example), i) if isinstance(i, tensor.TensorVariable) else i for i in result.items]
        given = args[0] if args and isinstance(args[0], (TupleVariable, ListVariable)) else None
        if given is not None and len(items) == len(given.items) and all(a is b for a, b in zip(items, given.items)):
            return given  # an in-place foreach op returns the very list it was given
        result = NamedTupleVariable(items, result.tuple_cls) if isinstance(result, NamedTupleVariable) else (
            result.with_items(items))
    return result


def _tensor_operands(values: Sequence[VT]) -> list[tensor.TensorVariable]:
    """The tensors among an operation's arguments, and inside tuple/list arguments (``out=(a, b)``)."""
    found = []
    for value in values:
        if isinstance(value, tensor.TensorVariable):
            found.append(value)
        elif isinstance(value, (TupleVariable, ListVariable)):
            found.extend(_tensor_operands(value.items))
    return found


def graph_node(tx: Tx, kind: str, target: Any, args: Sequence[VT], kwargs: dict[str, VT],
               check: Callable[[Any], None] | None = None) -> tuple[torch.fx.Node, Any]:
    """Run ``target`` on the arguments' examples and add its node, unwrapped:
    (node, example result). :func:`graph_call` wraps the result as a VT.

    Raises:
        Unsupported: as :func:`graph_call`, and when an argument is a tensor
            subclass whose ``__torch_function__`` should have run first.
    """
    overloaded = overloaded_args(tx, [*args, *kwargs.values()])
    if overloaded:  # every route to the graph dispatches subclasses first; this one did not
        unimplemented(
            gb_type="tensor subclass operation",
            context=f"{getattr(target, '__name__', target)} on a {overloaded[0].class_type.__qualname__}",
            explanation="This operation reached the graph without going through the subclass's __torch_function__; "
            "bytegraph runs it natively rather than skip the override.",
        )
    proxy_args = tuple(a.as_proxy() for a in args)
    proxy_kwargs = {k: v.as_proxy() for k, v in kwargs.items()}
    example_args = tuple(a.as_example() for a in args)
    example_kwargs = {k: v.as_example() for k, v in kwargs.items()}
    example = tx.output.run_fake(kind, target, example_args, example_kwargs)
    if check is not None:
        check(example)
    proxy_kwargs = pin_default_dtype(tx, kind, target, example_args, example_kwargs, example, proxy_kwargs)
    return tx.output.create_node(kind, target, proxy_args, proxy_kwargs, example), example


def wrap_fx_value(tx: Tx, node: torch.fx.Node, example: Any) -> VT:
    """Wrap the result of a graph node: tensors, symbolic scalars, containers of
    them, constants."""
    if isinstance(example, torch.Tensor):
        return TENSOR_VARIABLE_KINDS.get(type(example), tensor.TensorVariable)(node, example)
    if isinstance(example, symbolic.SYMBOLIC_TYPES):
        return symbolic.SymNodeVariable.create(node, example)
    if type(example) is dict and all(type(k) in (str, int) for k in example):  # torch.func's grad of a dict
        return DictVariable({k: (ConstantVariable(k), _item(tx, node, example, k)) for k in example})
    if isinstance(example, (tuple, list)):
        items = [_item(tx, node, example, i) for i in range(len(example))]
        if isinstance(example, torch.Size):
            return SizeVariable(items)
        if hasattr(type(example), "__match_args__") and type(example) not in (tuple, list):
            return NamedTupleVariable(items, type(example))
        return ListVariable(items) if isinstance(example, list) else TupleVariable(items)
    if _is_plain_constant(example):
        if example is not None and not node.users:
            tx.output.remove_node(node)  # a metadata query answered at trace time
        return ConstantVariable(example)
    unimplemented(
        gb_type="unsupported operator output",
        context=f"{node.target} returned {type(example).__name__}",
        explanation="The operation returned a value bytegraph cannot represent in the graph.",
    )


def _item(tx: Tx, node: torch.fx.Node, example: Any, key: Any) -> VT:
    """``example[key]`` of a node's container result, wrapped (a getitem node for a graph value)."""
    item = example[key]
    if isinstance(item, (torch.Tensor, tuple, list, dict, *symbolic.SYMBOLIC_TYPES)):
        return wrap_fx_value(tx, tx.output.create_node("call_function", operator.getitem, (node, key), {}, item), item)
    if _is_plain_constant(item):
        return ConstantVariable(item)
    unimplemented(
        gb_type="unsupported operator output",
        context=f"{node.target} returned a {type(example).__name__} holding {type(item).__name__}",
        explanation="Only tensors and constants can be taken out of an operator's result.",
    )


def _is_plain_constant(value: Any) -> bool:
    return value is None or type(value) in (bool, int, float, complex, str, torch.dtype, torch.device, torch.layout)


# ---- tensor subclasses ---------------------------------------------------------------------------

def torch_function_class(cls: type) -> bool:
    """Whether instances of ``cls`` take part in ``__torch_function__`` dispatch
    (eager's rule): a ``torch.Tensor`` subclass other than ``Parameter`` whose
    ``__torch_function__`` is not ``torch._C._disabled_torch_function_impl``.
    Subclasses that do not override it still dispatch, to
    ``Tensor.__torch_function__``, which converts results to the subclass."""
    if cls in (torch.Tensor, torch.nn.Parameter) or not issubclass(cls, torch.Tensor):
        return False
    impl = getattr(cls, "__torch_function__", None)
    return impl is not None and getattr(impl, "__func__", impl) is not torch._C._disabled_torch_function_impl


def dispatches(tx: Tx, value: VT) -> bool:
    """Whether an operation on ``value`` must call its class's ``__torch_function__``
    now: a subclass instance taking part in dispatch, outside
    ``torch._C.DisableTorchFunctionSubclass``. (A plain ``TensorVariable``'s
    class is ``torch.Tensor`` or ``nn.Parameter``, which never dispatch; any
    other tensor class is a ``TensorSubclassVariable``.)"""
    return isinstance(value, tensor.TensorVariable) and torch_function_class(value.class_type) and (
        not tx.output.subclass_dispatch_disabled
    )


def overloaded_args(tx: Tx, values: Sequence[VT]) -> list[TensorSubclassVariable]:
    """The arguments among ``values``, and one level into lists and tuples (as
    torch's argument parser looks into tensor lists), that :func:`dispatches`."""
    found = []
    for value in values:
        items = value.items if isinstance(value, (TupleVariable, ListVariable)) else (value,)
        found += [v for v in items if dispatches(tx, v)]
    return found
