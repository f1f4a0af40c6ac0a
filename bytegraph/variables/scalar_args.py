"""Operators given a 0-d tensor where their schema takes a ``Scalar``.

``torch.full(size, t)``, ``x.addcmul_(y, z, value=t)``,
``torch._foreach_pow(t, exps)`` and ``torch._foreach_lerp_(xs, ys, t)``
accept a 0-d tensor ``t`` for a ``Scalar`` argument: eager reads its value
(``t.item()``) before the kernel runs, which FakeTensors cannot do (a graph
break, ``data-dependent operator``). Each is rewritten here into tensor
operations that take ``t`` as a 0-d tensor and compute eager's values and
dtype, as torch.compile traces them into one graph:

- the result dtype is the one eager gives for a Python number of ``t``'s kind
  (bool, int, float, complex): the operation runs on FakeTensors with such a
  stand-in number, which also raises every error eager raises for that kind;
- eager converts the number to the computation dtype and raises on overflow
  (``value cannot be converted to type float without overflow``); the rewrite
  applies only when that dtype holds every value of ``t``'s dtype
  (:func:`holds`), else the call keeps its graph break and runs natively;
- the rewrite computes ``value * t1`` in the computation dtype, as eager's
  kernel does first, then calls the same kernel with ``value=1``
  (``addcmul(self, value * t1, t2, value=1)``), so the rest of the arithmetic,
  fused multiply-add included, is eager's own (bit-identical results; not for
  float16/bfloat16, whose kernels compute in float32);
- a Scalar argument carries no autograd history (eager rejects a tensor that
  requires grad, and never dispatches ``__torch_function__`` for it), so ``t``
  enters detached and as a plain tensor.

:func:`rewrite` returns None when a call is not one of these; the caller then
takes its usual path.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from bytegraph.breaks import Unsupported
from bytegraph.variables import graph_calls, tensor
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.sequences import ListVariable, TupleVariable

if TYPE_CHECKING:
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker

#: dtypes whose kernels compute in the dtype itself (``opmath`` is the dtype): a
#: 0-d weight tensor of that dtype gives the Scalar overload's values
_OPMATH_IS_DTYPE = frozenset({torch.float32, torch.float64, torch.complex64, torch.complex128})


def holds(src: torch.dtype, dst: torch.dtype) -> bool:
    """Whether every value of dtype ``src`` converts to ``dst`` without the
    overflow error eager's Scalar conversion raises (``dst`` is at least as wide
    in the same or a wider category; float16 holds only 8-bit integers)."""
    try:
        wider = torch.promote_types(src, dst) == dst
    except RuntimeError:  # unsigned types without a promotion
        return False
    return wider and not (dst is torch.float16 and src in (torch.int16, torch.int32, torch.int64))


def _stand_in(dtype: torch.dtype) -> bool | int | float | complex:
    """A Python number of the kind eager makes from a tensor of ``dtype``."""
    if dtype is torch.bool:
        return True
    if dtype.is_complex:
        return 1j
    return 1.0 if dtype.is_floating_point else 1


def _scalar_tensor(value: VT | None) -> tensor.TensorVariable | None:
    """``value`` as a plain tensor VT when it is a 0-d tensor eager accepts as a
    Scalar (no autograd history), else None."""
    if not isinstance(value, tensor.TensorVariable):
        return None
    example = value.example
    if example.dim() != 0 or example.requires_grad:
        return None
    return tensor.TensorVariable(value.node, value.example)  # a Scalar never dispatches __torch_function__


def _as(tx: Tx, value: tensor.TensorVariable, dtype: torch.dtype) -> VT:
    """``value.to(dtype)``, without a node when it has that dtype."""
    return value if value.example.dtype == dtype else value.call_method(tx, "to", [ConstantVariable(dtype)], {})


def _detached_as(tx: Tx, scalar: tensor.TensorVariable, dtype: torch.dtype) -> VT:
    return _as(tx, scalar.call_method(tx, "detach", [], {}), dtype)


def _plain(tx: Tx, values: Sequence[VT]) -> bool:
    """Whether ``values`` are tensors no ``__torch_function__`` override claims
    (a subclass operand keeps the usual path, which dispatches it)."""
    return all(isinstance(v, tensor.TensorVariable) for v in values) and not graph_calls.overloaded_args(tx, values)


def _fake_dtype(tx: Tx, fn: Callable, args: Sequence[Any], kwargs: dict[str, Any]) -> torch.dtype | None:
    """The dtype of ``fn(*args, **kwargs)`` on FakeTensors; None when it raises
    (eager raises too, so the call keeps its usual path and its error)."""
    try:
        return tx.output.run_fake("call_function", fn, tuple(args), kwargs).dtype
    except Unsupported:
        return None


def _full(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
    """``torch.full(size, t, dtype=None)``: ``t`` converted, expanded, copied."""
    kwargs = dict(kwargs)
    if len(args) == 1 and "fill_value" in kwargs:
        args = [args[0], kwargs.pop("fill_value")]
    dtype_vt = kwargs.pop("dtype", ConstantVariable(None))
    scalar = _scalar_tensor(args[1]) if len(args) == 2 else None
    if scalar is None or kwargs or not dtype_vt.is_python_constant():
        return None
    src = scalar.example.dtype
    dtype = dtype_vt.as_python_constant()
    if dtype is None:  # what eager infers from a Python number of this kind
        dtype = _fake_dtype(tx, torch.full, ((1,), _stand_in(src)), {})
    if dtype is None or not holds(src, dtype):
        return None
    filled = _detached_as(tx, scalar, dtype).call_method(tx, "expand", [args[0]], {})
    return filled.call_method(tx, "clone", [], {"memory_format": ConstantVariable(torch.contiguous_format)})


def _pointwise_with_value(kernel: str, inplace: bool) -> Callable[..., VT | None]:
    """``addcmul``/``addcdiv`` (method or function, in place or not) with ``value=t``."""

    def rewrite(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
        kwargs = dict(kwargs)
        scalar = _scalar_tensor(kwargs.pop("value", None))
        if scalar is None or kwargs or len(args) != 3 or not _plain(tx, args):
            return None
        reference = getattr(torch, kernel)  # the out-of-place op gives the computation dtype
        examples = [a.example for a in args]
        dtype = _fake_dtype(tx, reference, examples, {"value": _stand_in(scalar.example.dtype)})
        if dtype is None or not holds(scalar.example.dtype, dtype):
            return None
        if dtype.is_floating_point and dtype not in _OPMATH_IS_DTYPE:
            return None  # float16/bfloat16 kernels compute value * t1 in float32, not in the dtype
        self, t1, t2 = args
        scaled = graph_calls.graph_operator(tx, operator.mul, [_detached_as(tx, scalar, dtype), _as(tx, t1, dtype)])
        one = {"value": ConstantVariable(1)}  # the kernel's own arithmetic (and fused multiply-add) on value * t1
        if inplace:
            return self.call_method(tx, kernel + "_", [scaled, t2], one)
        return graph_calls.graph_call(tx, "call_function", reference, [self, scaled, t2], one)

    return rewrite


def _foreach(kernel: str, scalar_at: int, inplace: bool) -> Callable[..., VT | None]:
    """A ``_foreach_<kernel>`` whose argument ``scalar_at`` is a Scalar given as
    a 0-d tensor: ``kernel`` on each item with that tensor as a 0-d operand
    converted to the item's computation dtype."""

    def rewrite(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
        scalar = _scalar_tensor(args[scalar_at]) if len(args) > scalar_at and not kwargs else None
        lists = [a for i, a in enumerate(args) if i != scalar_at]
        if scalar is None or not lists or not all(isinstance(a, (ListVariable, TupleVariable)) for a in lists):
            return None
        columns = list(zip(*(a.items for a in lists)))
        if any(len(a.items) != len(columns) for a in lists) or not all(_plain(tx, row) for row in columns):
            return None
        stand_in = _stand_in(scalar.example.dtype)
        results = []
        for row in columns:
            operands = [v.example for v in row]
            operands.insert(scalar_at, stand_in)
            dtype = _fake_dtype(tx, getattr(torch, kernel), operands, {})
            if dtype is None or not holds(scalar.example.dtype, dtype) or (
                kernel == "lerp" and dtype not in _OPMATH_IS_DTYPE
            ):
                return None
            items = list(row)
            items.insert(scalar_at, _detached_as(tx, scalar, dtype))
            if inplace:
                results.append(items[0].call_method(tx, kernel + "_", items[1:], {}))
            else:
                results.append(graph_calls.graph_call(tx, "call_function", getattr(torch, kernel), items, {}))
        return args[0] if inplace else TupleVariable(results)  # in place: the list given, as eager returns it

    return rewrite


#: torch functions and the rewrites of their Scalar-as-tensor calls
FUNCTIONS: dict[Callable, Callable[..., VT | None]] = {
    torch.full: _full,
    torch.addcmul: _pointwise_with_value("addcmul", inplace=False),
    torch.addcdiv: _pointwise_with_value("addcdiv", inplace=False),
    torch._foreach_pow: _foreach("pow", scalar_at=0, inplace=False),
    torch._foreach_lerp: _foreach("lerp", scalar_at=2, inplace=False),
    torch._foreach_lerp_: _foreach("lerp", scalar_at=2, inplace=True),
}

#: tensor methods (``self`` first among the arguments) and their rewrites
METHODS: dict[str, Callable[..., VT | None]] = {
    "addcmul": FUNCTIONS[torch.addcmul],
    "addcdiv": FUNCTIONS[torch.addcdiv],
    "addcmul_": _pointwise_with_value("addcmul", inplace=True),
    "addcdiv_": _pointwise_with_value("addcdiv", inplace=True),
}


def rewrite(tx: Tx, fn: Callable | str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
    """The result of ``fn(*args, **kwargs)`` (a torch function, or a tensor
    method name with ``self`` first in ``args``) rewritten as above, or None when
    the call gives no 0-d tensor for a Scalar or the rewrite would not match eager."""
    table = METHODS if isinstance(fn, str) else FUNCTIONS
    try:
        handler = table.get(fn)
    except TypeError:  # unhashable
        return None
    return handler(tx, list(args), dict(kwargs)) if handler is not None else None
