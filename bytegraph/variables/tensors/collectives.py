"""torch.distributed collectives in the trace.

:class:`CollectiveVariable` stands for a collective from ``torch.distributed``:

- the **functional collectives** of ``torch.distributed._functional_collectives``
  (``all_reduce``, ``broadcast``, ``all_gather_tensor``/``all_gather_single``,
  ``reduce_scatter_tensor``/``reduce_scatter_single`` and their ``_autograd``
  aliases) become graph nodes: the ``_c10d_functional`` op, then its
  ``wait_tensor``. Eager returns an ``AsyncCollectiveTensor`` that waits when
  first used; the graph waits at once and returns a plain tensor with the same
  values (as under torch.compile).
- ``torch.distributed.all_reduce(t, op, group, async_op=False)``, which
  reduces ``t`` in place and returns None, becomes the functional all-reduce
  followed by ``t.copy_(result)`` (torch.compile rewrites it the same way).
- the other in-place collectives (``broadcast``, ``all_gather``, ``barrier``,
  ``async_op=True``...) are graph breaks naming the call: they run natively
  between two graphs.

The group argument (a ProcessGroup, a group name, a list of ranks, a
DeviceMesh, or ``(mesh, dim)``) is resolved at trace time with torch's own
``_resolve_group``; the graph holds the group's name as a constant, and an
object reached through a source is guarded by identity.
"""
from __future__ import annotations

import inspect
import sys
import warnings
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch
import torch.distributed as dist

from bytegraph.breaks import unimplemented, user_error
from bytegraph.guards.guards import IdMatch
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.tensors.graph_calls import graph_call
from bytegraph.variables.tensors.tensor import TensorVariable

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker


_FUNCTIONAL_NAMES = {
    "all_reduce": "all_reduce", "broadcast": "broadcast",
    "all_gather_tensor": "all_gather", "all_gather_single": "all_gather",
    "all_gather_tensor_autograd": "all_gather", "all_gather_single_autograd": "all_gather",
    "reduce_scatter_tensor": "reduce_scatter", "reduce_scatter_single": "reduce_scatter",
    "reduce_scatter_tensor_autograd": "reduce_scatter", "reduce_scatter_single_autograd": "reduce_scatter",
}
_IN_PLACE_NAMES = (
    "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "all_to_all", "all_to_all_single",
    "reduce", "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "barrier", "send", "recv",
    "isend", "irecv", "all_gather_object", "broadcast_object_list", "monitored_barrier",
)


def functional_kind(fn: Any) -> str | None:
    """``"all_reduce"``, ``"broadcast"``, ``"all_gather"`` or ``"reduce_scatter"``
    for a functional collective, else None. (Looked up only once the program has
    imported ``torch.distributed._functional_collectives``: bytegraph does not import it.)"""
    module = sys.modules.get("torch.distributed._functional_collectives")
    name = getattr(fn, "__name__", None)
    if module is None or name not in _FUNCTIONAL_NAMES or getattr(module, name, None) is not fn:
        return None
    return _FUNCTIONAL_NAMES[name]


def in_place_name(fn: Any) -> str | None:
    """The name of an in-place (c10d) collective, else None."""
    name = getattr(fn, "__name__", None)
    if not dist.is_available() or name not in _IN_PLACE_NAMES or getattr(dist, name, None) is not fn:
        return None
    return name


def is_collective(value: Any) -> bool:
    """Whether ``value`` is a collective this module handles."""
    return functional_kind(value) is not None or in_place_name(value) is not None


class CollectiveVariable(ConstantCallableVariable):
    """A ``torch.distributed`` collective (see the module docstring)."""

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        params = bind_arguments(self.fn, args, kwargs)
        kind = functional_kind(self.fn)
        if kind is not None:
            return functional_collective(tx, kind, params)
        name = in_place_name(self.fn)
        if name == "all_reduce" and constant_argument(params.get("async_op")) is False:
            return _inplace_all_reduce(tx, params)
        unimplemented(
            gb_type="in-place collective",
            context=f"call to torch.distributed.{name}",
            explanation="In-place collectives (other than a synchronous all_reduce) write their results into "
            "tensors or hand back a work handle; bytegraph does not trace them. The call runs natively between "
            "two graphs.",
            hints=(
                "Use the functional collectives (torch.distributed._functional_collectives), which are traced "
                "as graph ops.",
            ),
        )

    def _name(self) -> str:
        return f"{getattr(self.fn, '__module__', '?')}.{getattr(self.fn, '__name__', '?')}"

    def __repr__(self) -> str:
        return f"CollectiveVariable({self._name()})"


def bind_arguments(fn: Callable, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``fn``'s parameters bound to ``args``/``kwargs`` (VTs), defaults filled in
    (as plain values).

    Raises:
        Unsupported: when they do not bind (the call runs natively and raises eager's TypeError).
    """
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        user_error("TypeError", context=f"{getattr(fn, '__qualname__', fn)}(): {e}", hint="Fix the call's arguments.")
    bound.apply_defaults()
    return dict(bound.arguments)


def functional_collective(tx: Tx, kind: str, params: dict[str, Any]) -> VT:
    """The graph nodes of one functional collective: the ``_c10d_functional`` op and its wait.

    Raises:
        Unsupported: for an argument that is not a tensor / trace-time constant, or
            a gather/scatter dimension other than 0 (torch reshapes around the op there).
    """
    ops = torch.ops._c10d_functional
    tensor = params["self"]
    if not isinstance(tensor, TensorVariable):
        _unsupported_argument(kind, "the tensor argument is not a traced tensor")
    name, size = _group(tx, params["group"], constant_argument(params.get("tag", "")))
    if kind == "all_reduce":
        op, extra = ops.all_reduce.default, [_reduce_op(params["reduceOp"])]
    elif kind == "broadcast":
        op, extra = ops.broadcast.default, [constant_argument(params["src"])]
    elif kind == "all_gather":
        _dim_zero(kind, params["gather_dim"])
        op, extra = ops.all_gather_into_tensor.default, [size]
    else:
        _dim_zero(kind, params["scatter_dim"])
        op, extra = ops.reduce_scatter_tensor.default, [_reduce_op(params["reduceOp"]), size]
    started = graph_call(tx, "call_function", op, [tensor, *map(ConstantVariable, extra), ConstantVariable(name)], {})
    return graph_call(tx, "call_function", ops.wait_tensor.default, [started], {})


def _inplace_all_reduce(tx: Tx, params: dict[str, Any]) -> VT:
    """``dist.all_reduce(t, op, group)``: the functional all-reduce copied back into ``t``; returns None."""
    tensor = params["tensor"]
    op = constant_argument(params["op"], tx)
    names = {dist.ReduceOp.SUM: "sum", dist.ReduceOp.AVG: "avg", dist.ReduceOp.PRODUCT: "product",
             dist.ReduceOp.MIN: "min", dist.ReduceOp.MAX: "max"}
    if op not in names:
        _unsupported_argument("all_reduce", f"reduce op {op!r} has no functional form")
    reduced = functional_collective(tx, "all_reduce", {"self": tensor, "reduceOp": names[op], "group": params["group"]})
    tensor.call_method(tx, "copy_", [reduced], {})
    return ConstantVariable(None)


def _group(tx: Tx, group: VT | None, tag: str) -> tuple[str, int]:
    """The group's name and size, resolved at trace time; an object read through
    a source is guarded by identity; None is the default group."""
    from torch.distributed import _functional_collectives as funcol
    from torch.distributed import distributed_c10d as c10d

    value = constant_argument(group, tx)
    if value is None:
        value = c10d._get_default_group()
    with warnings.catch_warnings():  # (a list of ranks is deprecated: eager warns at each call)
        warnings.simplefilter("ignore", FutureWarning)
        resolved = funcol._resolve_group(value, tag)
    name = funcol._group_or_group_name(resolved)
    if not isinstance(name, str):
        _unsupported_argument("collective", "the group has no name (compile_on_one_rank is set)")
    return name, c10d._get_group_size_by_name(name)


def constant_argument(vt: Any, tx: Tx | None = None) -> Any:
    """The value of an argument: a VT known at trace time, an object read through
    a source (a process group, a ``ReduceOp``: guarded by identity when ``tx`` is
    given), or a default (a plain value)."""
    if not isinstance(vt, VariableTracker):
        return vt
    if vt.is_python_constant():
        return vt.as_python_constant()
    if tx is not None and vt.source is not None and hasattr(vt, "value") and not isinstance(vt, ConstantCallableVariable):
        tx.output.guards.add(IdMatch.of(vt.source, vt.value))
        return vt.value
    _unsupported_argument("collective", f"argument {vt} is not a trace-time constant")


def _reduce_op(vt: Any) -> str:
    op = constant_argument(vt)
    if not isinstance(op, str):
        _unsupported_argument("collective", f"reduce op {op!r} is not a string")
    return op.lower()


def _dim_zero(kind: str, vt: Any) -> None:
    if constant_argument(vt) != 0:
        _unsupported_argument(kind, "only dimension 0 is traced")


def _unsupported_argument(kind: str, why: str) -> None:
    unimplemented(
        gb_type="unsupported collective arguments",
        context=f"functional {kind}: {why}",
        explanation="The collective runs natively between two graphs.",
        hints=("Pass the tensor, constant reduce op, dimension 0 and a process group, name or device mesh.",),
    )
