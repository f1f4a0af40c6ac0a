"""Queries and setters of torch's process-wide state (docs/torch_policy.md, section 3).

A **state query** is folded to its value and guarded (``GlobalStateMatch``): a call
whose state changed since the trace recompiles. What state a C function reads cannot
be seen from the object, so the queries are the functions of :data:`STATE_QUERIES`
(the getters torch exposes beside ``torch.is_grad_enabled``) and, by what they are,
:func:`backend_flag_getters` (the getter of every ``torch.backends`` flag, a
``ContextProp``, read from the loaded ``torch.backends`` modules); a C function in
neither is a graph break, never a guess.

A **state setter** (:data:`STATE_SETTERS`) is modelled as the context managers that
call it are: the state switched now and by a graph node.
"""
from __future__ import annotations

import functools
import sys
import types
import warnings
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch
import torch.backends

from bytegraph.breaks import unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.guards.guards import GlobalStateMatch
from bytegraph.graph.state_setters import SETTABLE, SettableState, StateAtEntry, states_at_entry
from bytegraph.variables.constant import ConstantVariable, raise_traced_from
from bytegraph.variables.torch_state.base import EnteredState, at_trace_entry
from bytegraph.variables.torch_state.grad_mode import switch_grad_mode_unscoped
from bytegraph.variables.tx import wrap_const

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: queries of process-wide state (called with constant arguments, or none): folded and guarded.
STATE_QUERIES: dict[Callable, str] = {
    torch.is_grad_enabled: "grad mode",
    torch._C._is_fwd_grad_enabled: "forward grad mode",
    torch.get_default_dtype: "default dtype",
    torch.is_inference_mode_enabled: "inference mode",
    torch.are_deterministic_algorithms_enabled: "deterministic algorithms",
    torch._C._get_deterministic_algorithms_warn_only: "deterministic algorithms",
    torch._C._get_deterministic_fill_uninitialized_memory: "deterministic algorithms",
    torch.is_anomaly_enabled: "anomaly mode",
    torch.is_anomaly_check_nan_enabled: "anomaly mode",
    torch.get_num_threads: "thread count",
    torch.get_num_interop_threads: "thread count",
    torch._C._get_cpu_capability: "CPU capability",
    torch.is_autocast_enabled: "autocast",
    torch.is_autocast_cpu_enabled: "autocast",
    torch.is_autocast_cache_enabled: "autocast",
    torch._C._is_any_autocast_enabled: "autocast",
    torch._C._is_autocast_available: "autocast",
    torch.get_autocast_gpu_dtype: "autocast dtype",
    torch.get_autocast_cpu_dtype: "autocast dtype",
    torch.get_autocast_dtype: "autocast dtype",
    torch._C._get_cublas_allow_tf32: "cuBLAS flags",
    torch._C._get_cublas_allow_fp16_reduced_precision_reduction: "cuBLAS flags",
    torch._C._get_cublas_allow_bf16_reduced_precision_reduction: "cuBLAS flags",
    torch._C._get_cublas_allow_fp16_accumulation: "cuBLAS flags",
    torch._C._get_float32_matmul_precision: "matmul precision",
    **{getattr(torch._C, f"_get_{name}_sdp_enabled"): "SDP backend flags" for name in (
        "flash", "mem_efficient", "math", "cudnn", "overrideable", "fa3")},
    torch._C._get_sdp_priority_order: "SDP backend flags",
    torch._C._get_math_sdp_allow_fp16_bf16_reduction: "SDP backend flags",
    torch._C._get_fp32_precision_getter: "matmul precision",
    torch.backends.mha.get_fastpath_enabled: "MHA fast path",
    torch._C._get_tracing_state: "jit tracing state",
    torch.jit.is_scripting: "jit scripting",
    torch.jit.is_tracing: "jit tracing",
    torch._C._is_torch_function_enabled: "torch function mode",
    torch._C._are_functorch_transforms_active: "functorch transforms",
    torch._C._get_privateuse1_backend_name: "privateuse1 backend name",
    torch.autograd._is_checkpoint_valid: "checkpoint validity",
    torch._C._autograd._saved_tensors_hooks_get_disabled_error_message: "saved tensors hooks disabled",
    torch.fx._symbolic_trace.is_fx_tracing: "fx tracing",
    torch.distributed.is_available: "distributed build",
    sys.get_int_max_str_digits: "int max str digits",
    **({torch.distributed.is_initialized: "distributed process group"} if torch.distributed.is_available() else {}),
}

#: state queries in packages torch imports on first use (``torch.onnx``: 0.15 s), keyed by
#: ``(__module__, __name__)`` so that importing bytegraph does not import them.
LAZY_STATE_QUERIES: dict[tuple[str, str], str] = {("torch.onnx", "is_in_onnx_export"): "ONNX export"}


@functools.cache
def backend_flag_getters() -> dict[Callable, str]:
    """The getter of every ``torch.backends`` flag (``torch.backends.cudnn.enabled``,
    ``torch.backends.mkldnn.deterministic``): a ``ContextProp`` of the class of a
    ``torch.backends`` module (``import torch`` loads them all), found by what it is, not listed."""
    found: dict[Callable, str] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("torch.backends.") and module is not None:
            for attr, prop in vars(type(module)).items():
                if isinstance(prop, torch.backends.ContextProp):
                    found[prop.getter] = f"{name}.{attr}"
    return found


def state_query(fn: Any) -> str | None:
    """What process-wide state ``fn`` reads (``"grad mode"``), or None when it is no state query."""
    try:
        label = STATE_QUERIES.get(fn)
    except TypeError:  # unhashable
        return None
    if label is None and isinstance(fn, types.FunctionType):
        label = LAZY_STATE_QUERIES.get((fn.__module__, fn.__name__))
    if label is None:
        label = backend_flag_getters().get(fn)
    return label


def fold_query(tx: Tx, getter: Callable[[], Any], label: str) -> VT:
    """``getter()`` read now, as a constant, guarded on its value at the frame's entry (a changed
    state recompiles; inside a state the trace entered, the entry value, not the switched one)."""
    value = getter()
    expected = at_trace_entry(tx, getter) if tx.output.open_states else value
    tx.output.guards.add(GlobalStateMatch(None, getter, expected, label))
    return wrap_const(tx, value)


def call_set_grad_enabled(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``torch._C._set_grad_enabled(mode)`` called plainly: the switch ``torch.set_grad_enabled(mode)``
    makes, never undone by a ``with``."""
    if len(args) != 1 or kwargs or not args[0].is_python_constant() or type(args[0].as_python_constant()) is not bool:
        unimplemented(
            gb_type="unsupported torch function",
            context=f"torch._C._set_grad_enabled({', '.join(map(str, args))})",
            explanation="Grad mode is switched in the trace by a constant bool only; eager raises TypeError for a "
                        "non-bool, and a traced value is unknown until run, so the call runs natively.",
            hints=("Pass True or False.",),
        )
    switch_grad_mode_unscoped(tx, args[0].as_python_constant())
    return ConstantVariable(None)


def call_plain_setter(state: SettableState, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """A plain setter of ``state`` (``torch.set_autocast_enabled("cpu", True)``) with constant
    arguments: :func:`switch_state`."""
    parsed = _parsed_setter_call(state, tx, args, kwargs)
    if parsed is None:
        unimplemented(
            gb_type="unsupported torch function",
            context=f"setter of {state.label} with {len(args)} positional, {sorted(kwargs)} keyword arguments",
            explanation="A plain setter of torch's state is traced with constant arguments of its signature, "
                        "outside a traced context manager that restores the same state on exit (whose re-entry "
                        "after a graph break would undo the switch); otherwise the call runs natively.",
            hints=("Pass constants, or call the setter outside the with block.",),
        )
    *key, value = parsed
    switch_state(tx, state, tuple(key), value)
    return ConstantVariable(None)


def switch_state(tx: Tx, state: SettableState, key: tuple, value: Any) -> None:
    """Set ``state`` at ``key`` to ``value`` now and (when the graph's operations read it) by a graph
    node, recording the value the frame found first (``graph/state_setters.py``: tracing ending puts it
    back, queries are guarded on it, the code after the graph writes the trace's value)."""
    if not any(s.state is state and s.key == key for s in states_at_entry(tx.output.open_states)):
        tx.output.open_states.insert(0, StateAtEntry(state, key))
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        try:
            state.write(*key, value)
        except Exception as e:  # noqa: BLE001 - eager's own error (a bad device or dtype), in the trace
            raise_traced_from(e)
    if warned:  # a value it ignores with a warning (an unknown matmul precision): eager's warning, natively
        unimplemented(
            gb_type="unsupported torch function",
            context=f"setter of {state.label} warning {str(warned[0].message)!r}",
            explanation="The setter warned instead of switching the state; the call runs natively so that "
                        "it warns on every call, as in eager.",
            hints=("Pass a value the setter accepts.",),
        )
    if state.in_graph:
        tx.output.create_node("call_function", state.write, (*key, value), {}, None)


def _parsed_setter_call(state: SettableState, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> tuple | None:
    """``(*key, value)`` of a traceable call of a setter of ``state``, None for one that is not."""
    if not all(v.is_python_constant() for v in (*args, *kwargs.values())) or state.scoped_by is not None and any(
            isinstance(s, EnteredState) and s.enter_fn is state.scoped_by for s in tx.output.open_states):
        return None
    try:
        return state.parse(*(a.as_python_constant() for a in args),
                           **{k: v.as_python_constant() for k, v in kwargs.items()})
    except TypeError:  # not the setter's signature
        return None


#: setters of process-wide state modelled in the trace (the state switched now and in the graph)
STATE_SETTERS: dict[Callable, Callable[[Tx, Sequence[VT], dict[str, VT]], VT]] = {
    torch._C._set_grad_enabled: call_set_grad_enabled,
    **{setter: functools.partial(call_plain_setter, state) for setter, state in SETTABLE.items()},
}
