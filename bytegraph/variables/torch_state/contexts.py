"""Which VT a torch state context gets: made in the trace
(:func:`create_state_context`) or read from an input (:func:`existing_state_context`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import torch

from bytegraph.guards.guards import TypeMatch
from bytegraph.guards.source import AttrSource
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.torch_state.autocast import AutocastVariable
from bytegraph.variables.torch_state.grad_mode import GRAD_MODE_CLASSES, GradModeVariable
from bytegraph.variables.torch_state.inference_mode import InferenceModeVariable
from bytegraph.variables.tx import wrap
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

STATE_CONTEXTS = (*GRAD_MODE_CLASSES, torch.autocast, torch.inference_mode)


def create_state_context(tx: Tx, cls: type, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """The VT for ``cls(*args, **kwargs)``, ``cls`` one of :data:`STATE_CONTEXTS`."""
    if issubclass(cls, torch.autocast):
        return AutocastVariable.create(tx, cls, args, kwargs)
    if issubclass(cls, torch.inference_mode):
        mode = (args[0] if args else kwargs.get("mode", ConstantVariable(True))).as_python_constant()
        return InferenceModeVariable(bool(mode))
    return GradModeVariable.create(tx, cls, args, kwargs)


def existing_state_context(tx: Tx, value: Any, source: Any) -> VT | None:
    """An ``autocast`` or ``inference_mode`` object made before the call (the
    instance an ``@autocast(...)`` decorator closes over) as the VT that
    creating it in the trace would give, reconstructed as the object itself;
    the settings it is entered with are guarded. None for grad-mode objects,
    whose Python ``__enter__``/``__exit__`` are inlined instead."""
    def read(name: str) -> Any:
        return wrap(tx, getattr(value, name), AttrSource(source, name)).as_python_constant()

    if isinstance(value, torch.autocast):
        tx.output.guards.add(TypeMatch(source, type(value)))
        settings = (read("device"), read("fast_dtype"), read("_enabled"), read("_cache_enabled"))
        return AutocastVariable(type(value), settings, source)
    if isinstance(value, torch.inference_mode):
        tx.output.guards.add(TypeMatch(source, type(value)))
        return InferenceModeVariable(bool(read("mode")), source)
    return None
