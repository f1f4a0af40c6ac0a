"""``torch.func.functional_call(module, tensors, args, kwargs)`` inside compiled code.

The call is one graph node whose target calls the real ``functional_call`` on
the module (held by the node, its identity guarded: a module is otherwise
guarded by its type only), so the values are eager's, under a transform too
(``vmap(lambda p, x: functional_call(model, p, (x,)))``, the torch.func
ensembling and per-sample-gradient recipes). The tensors given (a dict, or a
tuple of dicts, of parameter and buffer names) and the call's arguments are
node arguments. Running the module's forward in the node is sound only when
it is pure, which :mod:`.func_purity` proves by tracing the module's call
once speculatively; that trace reads the module's own tensors, so every name
given must name a tensor of the module with the same shape, dtype and device
(the forward then takes the same path). A module with tied tensors (one
tensor under two names, which ``tie_weights`` substitutes together), or
arguments of other kinds, is a graph break.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Sequence

import torch

from bytegraph.guards.guards import IdMatch
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.callables.func_purity import check_pure, transform_break
from bytegraph.variables.containers.dicts import DictVariable, LazyDictVariable
from bytegraph.variables.containers.sequences import ListVariable, TupleVariable
from bytegraph.variables.objects.nn_modules import NNModuleVariable
from bytegraph.variables.tensors.graph_calls import graph_call
from bytegraph.variables.tensors.tensor import TensorVariable
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class FunctionalCallVariable(ConstantCallableVariable):
    """``torch.func.functional_call``: one graph node (see the module docstring)."""

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        bound = dict(zip(("module", "parameter_and_buffer_dicts", "args", "kwargs"), args), **kwargs)
        module, given = bound.get("module"), bound.get("parameter_and_buffer_dicts")
        call_args, call_kwargs = bound.get("args", TupleVariable([])), bound.get("kwargs")
        options = {k: v for k, v in bound.items() if k in ("tie_weights", "strict")}
        name = f"functional_call({module})"
        if not held_module(tx, module):
            transform_break(name, "The module is not one read from a source.")
        if set(bound) - {"module", "parameter_and_buffer_dicts", "args", "kwargs", "tie_weights", "strict"} or (
                not all(v.is_python_constant() for v in options.values())):
            transform_break(name, "Its options are not constants.")
        dicts = given.items if isinstance(given, (TupleVariable, ListVariable)) else [given]
        dicts = [d.materialize(tx) if isinstance(d, LazyDictVariable) else d for d in dicts]
        tensors, replaced = _given_tensors(name, module.value, dicts)
        positional = call_args.items if isinstance(call_args, (TupleVariable, ListVariable)) else [call_args]
        named = {} if call_kwargs is None or call_kwargs.is_python_constant() and call_kwargs.as_python_constant() \
            is None else _named(tx, name, call_kwargs)
        if not all(isinstance(a, TensorVariable) or a.is_python_constant() for a in (*positional, *named.values())):
            transform_break(name, "The module is called with values that are neither tensors nor constants.")
        _, read = check_pure(tx, name, module, positional, named, lambda _, given_args: list(given_args), tensors,
                             replaced)
        if read:  # a tensor of the module not given, or one the forward reads from elsewhere
            transform_break(name, "The module's forward reads tensors that are not given (a buffer or parameter "
                            "left out, a global tensor).")
        target = _target(module.value, {k: v.as_python_constant() for k, v in options.items()}, name)
        return graph_call(tx, "call_function", target, [TupleVariable(dicts), TupleVariable(list(positional))],
                          named)


def held_module(tx: Tx, value: VT) -> bool:
    """Whether ``value`` is a module read from a source, which a graph node may
    hold: its identity is guarded then (a module is otherwise guarded by its
    type only)."""
    if not isinstance(value, NNModuleVariable) or value.source is None:
        return False
    tx.output.guards.add(IdMatch.of(value.source, value.value))
    return True


def _given_tensors(name: str, module: torch.nn.Module, dicts: list[VT]) -> tuple[list[VT], frozenset[int]]:
    """The tensors of ``dicts`` (dicts from a constant name to a tensor), each
    checked against the module's tensor of that name, and the ids of the
    module's tensors they replace."""
    own = dict(module.named_parameters(remove_duplicate=False))
    own.update(module.named_buffers(remove_duplicate=False))
    if len({id(t) for t in own.values()}) != len(own):
        transform_break(name, "The module has tied tensors (one tensor under two names).")
    tensors, replaced = [], set()
    for d in dicts:
        if not isinstance(d, DictVariable) or d.python_type() is not dict:
            transform_break(name, "The tensors are not given as a dict, or a tuple of dicts.")
        for key, value in d.items.values():
            real = own.get(key.as_python_constant()) if key.is_python_constant() else None
            if real is None or not isinstance(value, TensorVariable) or (
                    value.example.dtype, value.example.device, tuple(value.example.shape)) != (
                    real.dtype, real.device, tuple(real.shape)):
                transform_break(name, f"{key} does not name a tensor of the module of the given one's shape, "
                                "dtype and device.")
            tensors.append(value)
            replaced.add(id(real))
    return tensors, frozenset(replaced)


def _named(tx: Tx, name: str, kwargs: VT) -> dict[str, VT]:
    """The keyword arguments the module is called with (a dict of constant names)."""
    if isinstance(kwargs, LazyDictVariable):
        kwargs = kwargs.materialize(tx)
    if not isinstance(kwargs, DictVariable) or not all(
            k.is_python_constant() and isinstance(k.as_python_constant(), str) for k, _ in kwargs.items.values()):
        transform_break(name, "The module's keyword arguments are not a dict of names.")
    return {k.as_python_constant(): v for k, v in kwargs.items.values()}


def _target(module: torch.nn.Module, options: dict, name: str) -> Any:
    """The node's target: ``functional_call(module, dicts, args, kwargs)``."""
    def target(dicts: tuple, args: tuple, **kwargs: Any) -> Any:
        return torch.func.functional_call(module, dicts, args, kwargs, **options)

    target.__name__ = target.__qualname__ = re.sub(r"\W+", "_", name).strip("_")
    return target
