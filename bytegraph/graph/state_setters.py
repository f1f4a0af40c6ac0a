"""Plain setters of torch's (and the interpreter's: ``sys.set_int_max_str_digits``) process state in a graph (``torch.set_autocast_enabled``,
``torch._C._set_default_dtype``, ``torch._C._set_deterministic_algorithms``...): what each
one sets (:class:`SettableState`, :data:`SETTABLE`), the record of the state a trace found
before its first switch (:class:`StateAtEntry`), and what a graph holding such switches
needs when it is compiled, run and when it raises.

A plain setter is never undone by a ``with``: eager's state after the call is the last value
set. So a trace switches the state now (later operations' FakeTensors and folded queries see
it) and as a node ``state.write(*key, value)`` (the graph's own operations run in it). A graph
ends in the state it started in (:func:`switched_states`) and the code after it writes the value
the trace ended in: a backend that retraces the graph (``aot_eager``) keeps the effect of such a
node on its operations but not the call, and AOTAutograd refuses a graph that leaves autocast
switched.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator, NamedTuple

import torch
import torch.amp.autocast_mode as autocast_mode


class SettableState(NamedTuple):
    """A piece of process state a plain setter writes.

    ``parse`` takes the setter's arguments and gives ``(*key, value)``: ``key`` names which
    state (a device type), ``value`` is what is set; ``read(*key)`` reads it back and
    ``write(*key, value)`` sets it (the graph node's target). ``scoped_by`` is the entry of
    a context that saves and restores the same state (None: none does). ``in_graph``: whether
    the graph's operations read it (else the switch is no node: only the code after the graph
    makes it).
    """

    label: str
    parse: Callable[..., tuple]
    read: Callable[..., Any]
    write: Callable[..., Any]
    scoped_by: Callable[..., Any] | None = None
    in_graph: bool = True


def deterministic_algorithms() -> tuple[bool, bool]:
    """Whether deterministic algorithms are on, and whether only as warnings."""
    return torch.are_deterministic_algorithms_enabled(), torch._C._get_deterministic_algorithms_warn_only()


def _device_and_value(device_type: str, value: Any) -> tuple:
    return device_type, value


def _value(value: Any) -> tuple:
    return (value,)


def _max_digits(maxdigits: int) -> tuple:
    return (maxdigits,)


def _deterministic(mode: bool, *, warn_only: bool = False) -> tuple:
    return ((mode, warn_only),)


def _write_deterministic(value: tuple[bool, bool]) -> None:
    torch._C._set_deterministic_algorithms(value[0], warn_only=value[1])


#: each modelled setter (the builtin user code reaches) -> the state it writes
SETTABLE: dict[Callable, SettableState] = {
    torch.set_autocast_enabled: SettableState(
        "autocast", _device_and_value, torch.is_autocast_enabled, torch.set_autocast_enabled,
        autocast_mode._enter_autocast),
    torch.set_autocast_dtype: SettableState(
        "autocast dtype", _device_and_value, torch.get_autocast_dtype, torch.set_autocast_dtype,
        autocast_mode._enter_autocast),
    torch.set_autocast_cache_enabled: SettableState(
        "autocast cache", _value, torch.is_autocast_cache_enabled, torch.set_autocast_cache_enabled,
        autocast_mode._enter_autocast),
    torch._C._set_default_dtype: SettableState(
        "default dtype", _value, torch.get_default_dtype, torch._C._set_default_dtype),
    torch._C._set_deterministic_algorithms: SettableState(
        "deterministic algorithms", _deterministic, deterministic_algorithms, _write_deterministic),
    torch._C._set_float32_matmul_precision: SettableState(
        "matmul precision", _value, torch._C._get_float32_matmul_precision, torch._C._set_float32_matmul_precision),
    torch._C._set_deterministic_fill_uninitialized_memory: SettableState(
        "deterministic fill", _value, torch._C._get_deterministic_fill_uninitialized_memory,
        torch._C._set_deterministic_fill_uninitialized_memory),
    # the interpreter's limit on int <-> str conversions: folded conversions see it; no operation reads it
    sys.set_int_max_str_digits: SettableState(
        "int max str digits", _max_digits, sys.get_int_max_str_digits, sys.set_int_max_str_digits, in_graph=False),
}

def saved_tensors_hooks_disabled() -> str | None:
    """The message registering saved-tensor hooks raises now (None: they may be registered)."""
    return torch._C._autograd._saved_tensors_hooks_get_disabled_error_message()


def restore_saved_tensors_hooks(message: str | None) -> None:
    """Make registering saved-tensor hooks raise ``message`` again (None: allow it)."""
    if message is None:
        torch._C._autograd._saved_tensors_hooks_enable()
    else:
        torch._C._autograd._saved_tensors_hooks_disable(message)


def disable_saved_tensors_hooks(message: str) -> str | None:
    """What entering ``torch.autograd.graph.disable_saved_tensors_hooks(message)`` does; returns the
    message before, for :func:`restore_saved_tensors_hooks`."""
    previous = saved_tensors_hooks_disabled()
    torch._C._autograd._saved_tensors_hooks_disable(message)
    return previous


#: an option of one of torch's configuration modules (``torch._inductor.config.deterministic``, which
#: ``torch.use_deterministic_algorithms`` sets), keyed by ``(module, name)``: read by compilers, not by operations
CONFIG_OPTION = SettableState("torch configuration option", _value, getattr, setattr, in_graph=False)

_WRITES = {state.write: state for state in SETTABLE.values()}
#: the entry of a context (its graph node) -> the state it switches, put back when a graph raises inside it
_ENTERS = {disable_saved_tensors_hooks: SettableState(
    "saved tensors hooks disabled", _value, saved_tensors_hooks_disabled, restore_saved_tensors_hooks)}


class StateAtEntry:
    """One piece of state (``state`` at ``key``) as the traced frame found it before the
    trace's first switch of it: an entry of ``OutputGraph.open_states`` kept below the
    contexts (calling it puts the entry value back, as tracing ends; :meth:`reenter` puts
    back the value it replaced, see ``torch_state/base.py:at_trace_entry``)."""

    def __init__(self, state: SettableState, key: tuple):
        self.state, self.key = state, key
        self.entry = state.read(*key)
        self.current = self.entry

    def __call__(self) -> None:
        self.current = self.state.read(*self.key)
        self.state.write(*self.key, self.entry)

    def reenter(self) -> None:
        self.state.write(*self.key, self.current)

    def codegen_now(self, codegen: Any) -> None:
        """Emit the statement that writes the value the state has now in the trace."""
        codegen.load_callable(self.state.write)
        for value in (*self.key, self.state.read(*self.key)):
            codegen.load_const(value)
        codegen.call(len(self.key) + 1)
        codegen.emit("POP_TOP")


def states_at_entry(open_states: list) -> list[StateAtEntry]:
    return [s for s in open_states if isinstance(s, StateAtEntry)]


def switched_states(open_states: list) -> list[StateAtEntry]:
    """The states the trace has switched from their entry values: a graph switches them back before
    it returns (AOTAutograd refuses a graph that leaves the autocast state changed), and the code after it
    writes the trace's values again."""
    return [s for s in states_at_entry(open_states) if s.state.read(*s.key) != s.entry and s.state.in_graph]


@contextlib.contextmanager
def left_for(open_states: list) -> Iterator[None]:
    """The states a trace entered (``open_states``) left, innermost first, for the block, and
    entered again after it (grad mode, which leaving inference mode restores, put back too)."""
    grad_mode = torch.is_grad_enabled()
    for state in reversed(open_states):
        state()
    try:
        yield
    finally:
        for state in open_states:
            state.reenter()
        torch._C._set_grad_enabled(grad_mode)


def written_states(gm: torch.fx.GraphModule) -> tuple[tuple[SettableState, tuple], ...]:
    """``(state, key)`` of each state a node of ``gm`` writes with a plain setter or a context
    whose exit a raising graph would skip (``_ENTERS``)."""
    found = {}
    for n in gm.graph.nodes:
        state = (_WRITES.get(n.target) or _ENTERS.get(n.target)) if n.op == "call_function" else None
        if state is not None:
            found[(state.write, tuple(n.args[:-1]))] = (state, tuple(n.args[:-1]))
    return tuple(found.values())


def read_states(written: tuple[tuple[SettableState, tuple], ...]) -> list:
    return [state.read(*key) for state, key in written]


def context_states(written: tuple[tuple[SettableState, tuple], ...]) -> tuple[tuple[SettableState, tuple], ...]:
    """The entries of ``written`` that a context's entry switched: whatever way the graph's exception
    leaves the frame (rerun or not), that context's exit would have put them back."""
    return tuple(w for w in written if w[0] in _ENTERS.values())


def restore_states(written: tuple[tuple[SettableState, tuple], ...], values: list) -> None:
    """Put back the states a graph that raised switched (before the frame reruns natively)."""
    for (state, key), value in zip(written, values):
        state.write(*key, value)
