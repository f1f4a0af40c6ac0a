"""DTensor in the trace.

A ``torch.distributed.tensor.DTensor`` is a wrapper tensor subclass: a local
shard plus a device mesh and placements. It is traced the way torch.compile
traces it, as a tensor whose FakeTensor example is itself a DTensor (holding a
FakeTensor shard): graph nodes take and return DTensors, and running them on
the examples runs DTensor's own sharding propagation, so results carry the
placements eager would give them. Backends get DTensor graph inputs (AOTAutograd
flattens them into their local tensors).

- A DTensor input is guarded on its type and global metadata, on its mesh
  (identity), its placements (equality) and its local tensor's metadata.
- ``to_local``, ``redistribute`` and ``full_tensor``, and ``DTensor.from_local``,
  become graph nodes whose targets hold the call's constant arguments (mesh,
  placements: never graph arguments).
- ``placements`` and ``device_mesh`` are read from the example (the same mesh
  object as eager's; equal placements).
- Constructing ``Shard(d)``, ``Replicate()``, ``Partial(op)`` folds to the
  placement object.
- Arithmetic and other tensor operations go in the graph like any tensor op.
- Any other DTensor-only attribute or method is a graph break.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import sys

import torch

from bytegraph.breaks import unimplemented
from bytegraph.guards.guards import EqualsMatch, IdMatch
from bytegraph.guards.source import AttrSource, Source
from bytegraph.guards.tensor_guards import TensorMatch
from bytegraph.variables.base import BoundMethodVariable, ConstantCallableVariable, VariableTracker
from bytegraph.variables.objects.library_objects import OpaqueConstantVariable
from bytegraph.variables.tensors.collectives import bind_arguments, constant_argument
from bytegraph.variables.tensors.graph_calls import TENSOR_VARIABLE_KINDS, graph_call
from bytegraph.variables.tensors.tensor import TensorVariable
from bytegraph.variables.tx import wrap_const
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: DTensor methods traced as graph nodes (their non-tensor arguments bound in the target)
TRACED_METHODS = ("to_local", "redistribute", "full_tensor")
#: attributes read as constants of the example (guarded when the input was wrapped)
CONSTANT_ATTRS = ("placements", "device_mesh")


def _api() -> Any:
    """``torch.distributed.tensor`` if the program imported it (a value can be a
    DTensor only then; bytegraph does not import it, which costs start-up time)."""
    module = sys.modules.get("torch.distributed.tensor")
    if module is not None:
        TENSOR_VARIABLE_KINDS[module.DTensor] = DTensorVariable
    return module


def is_dtensor(value: Any) -> bool:
    api = _api()
    return api is not None and isinstance(value, api.DTensor)


def is_dtensor_callable(value: Any) -> bool:
    """``DTensor.from_local`` or a placement class (``Shard``, ``Replicate``, ``Partial``)."""
    api = _api()
    return api is not None and (
        value is api.DTensor.from_local or any(value is cls for cls in (api.Shard, api.Replicate, api.Partial))
    )


def wrap_dtensor(tx: Tx, value: torch.Tensor, source: Source) -> VT:
    """A DTensor graph input read from ``source``, with its guards."""
    guards = tx.output.guards
    guards.add(TensorMatch.of(source, value))
    guards.add(IdMatch.of(AttrSource(source, "device_mesh"), value.device_mesh))
    guards.add(EqualsMatch(AttrSource(source, "placements"), value.placements))
    guards.add(TensorMatch.of(AttrSource(source, "_local_tensor"), value._local_tensor))
    node, example = tx.output.add_graph_input(source, value, static=True)  # (sizes are guarded exactly)
    return tx.output.side_effects.track(value, DTensorVariable(node, example, source, class_type=type(value)))


class DTensorVariable(TensorVariable):
    """A DTensor in the trace: ``example`` is a DTensor holding a FakeTensor shard."""

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name in CONSTANT_ATTRS:
            return wrap_const(tx, getattr(self.example, name))
        if name in TRACED_METHODS:
            return BoundMethodVariable(self, name)
        if not hasattr(torch.Tensor, name):
            _dtensor_break(f"attribute {name!r} of a DTensor")
        return super().var_getattr(tx, name)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name in TRACED_METHODS:
            method = getattr(type(self.example), name)
            bound = _bind(tx, method, [self, *args], kwargs)
            return graph_call(tx, "call_function", _with_constants(method, bound), [self], {})
        if not hasattr(torch.Tensor, name):
            _dtensor_break(f"method {name!r} of a DTensor")
        return super().call_method(tx, name, args, kwargs)


class DTensorCallableVariable(ConstantCallableVariable):
    """``DTensor.from_local`` (a graph node), or a placement class (folded to the placement)."""

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if self.fn is _api().DTensor.from_local:
            bound = _bind(tx, self.fn, args, kwargs)
            local = args[0] if args else kwargs.get("local_tensor")
            if not isinstance(local, TensorVariable) or isinstance(local, DTensorVariable):
                _dtensor_break("DTensor.from_local of something other than a traced plain tensor")
            return graph_call(tx, "call_function", _with_constants(self.fn, bound), [local], {})
        values = [constant_argument(a, tx) for a in args]
        kw = {k: constant_argument(v, tx) for k, v in kwargs.items()}
        return OpaqueConstantVariable(self.fn(*values, **kw))


def _bind(tx: Tx, fn: Callable, args: Sequence[VT], kwargs: dict[str, VT]) -> dict[str, Any]:
    """``fn``'s arguments after the first (the tensor), as trace-time constants.

    Raises:
        Unsupported: when they do not bind to ``fn``'s signature, or one is not known at trace time.
    """
    bound = bind_arguments(fn, args, kwargs)
    first = next(iter(bound))
    return {k: constant_argument(v, tx) for k, v in bound.items() if k != first}


def _with_constants(fn: Callable, constants: dict[str, Any]) -> Callable:
    """A graph target calling ``fn(tensor, **constants)``; the constants live in
    its closure (the graph's code never spells them)."""
    def call(tensor: torch.Tensor) -> Any:
        return fn(tensor, **constants)

    call.__name__ = call.__qualname__ = f"dtensor_{fn.__name__}"
    return call


def _dtensor_break(what: str) -> None:
    unimplemented(
        gb_type="unsupported DTensor operation",
        context=what,
        explanation="bytegraph traces DTensor arithmetic, to_local, redistribute, full_tensor, from_local, "
        "placements and device_mesh; this runs natively.",
        hints=("Move the call outside the compiled function.",),
    )

