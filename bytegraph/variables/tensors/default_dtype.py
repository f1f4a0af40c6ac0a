"""Operations traced while the trace has switched the default dtype (``torch.set_default_dtype``
called in the traced code, see ``graph/state_setters.py``).

Inside the graph the switch is a node, which a backend that retraces the graph (``aot_eager``)
runs while retracing but does not keep: its graph's operations that read the default dtype
(a factory called without ``dtype``, an integer tensor divided) would read it when the graph
runs, in the state the frame was called in. So an operation whose result's dtypes differ under
the default dtype the frame was called with reads it: a function taking a keyword-only ``dtype``
(every factory) gets the one it produced explicitly; any other such operation is a graph break.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import torch
import torch.utils._pytree as pytree

from bytegraph.breaks import unimplemented
from bytegraph.graph.state_setters import SETTABLE, StateAtEntry, left_for

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

_DEFAULT_DTYPE = SETTABLE[torch._C._set_default_dtype]


def switched_default_dtype(open_states: list) -> StateAtEntry | None:
    """The record of the default dtype the frame was called with, when the trace has switched it."""
    for state in open_states:
        if isinstance(state, StateAtEntry) and state.state is _DEFAULT_DTYPE and state.entry != torch.get_default_dtype():
            return state
    return None


def pin_default_dtype(tx: Tx, kind: str, target: Any, example_args: tuple, example_kwargs: dict, example: Any,
                      proxy_kwargs: dict) -> dict:
    """The node's keyword arguments for an operation traced while the default dtype is switched:
    ``proxy_kwargs``, with ``dtype=`` the result's when the operation reads the default dtype."""
    switched = switched_default_dtype(tx.output.open_states)
    if switched is None or _dtypes(_run_at_entry(tx, switched, kind, target, example_args, example_kwargs)) == (
            _dtypes(example)):
        return proxy_kwargs
    if kind == "call_function" and isinstance(example, torch.Tensor) and "dtype" not in example_kwargs and (
            _takes_dtype(target)):
        pinned = {**example_kwargs, "dtype": example.dtype}
        if _dtypes(_run_at_entry(tx, switched, kind, target, example_args, pinned)) == _dtypes(example):
            return {**proxy_kwargs, "dtype": example.dtype}
    unimplemented(
        gb_type="operation reading a switched default dtype",
        context=f"{getattr(target, '__name__', target)} after torch.set_default_dtype in the traced code",
        explanation="Its result's dtype comes from the default dtype, which the traced code switched and which a "
                    "backend that retraces the graph would read when the graph runs; the operation runs natively.",
        hints=("Pass dtype= explicitly.",),
    )


def _run_at_entry(tx: Tx, switched: StateAtEntry, kind: str, target: Any, args: tuple, kwargs: dict) -> Any:
    with left_for([switched]):
        try:
            return tx.output.run_fake(kind, target, args, kwargs)
        except Exception:  # noqa: BLE001 - it fails only under the entry dtype: it reads it
            return None


def _dtypes(result: Any) -> tuple | None:
    if result is None:
        return None
    return tuple(t.dtype for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor))


@functools.cache
def _takes_dtype(target: Any) -> bool:
    """Whether ``target`` is an ATen binding an overload of which takes a keyword-only ``dtype`` (whether
    the call given it matches one is seen by running it)."""
    name = getattr(target, "__name__", None)
    schemas = torch._C._jit_get_schemas_for_operator(f"aten::{name}") if isinstance(name, str) else []
    return any(a.name == "dtype" and a.kwarg_only for s in schemas for a in s.arguments)
