"""The base of torch's global-state context managers (:class:`StateContextVariable`)
and the two steps every one of them takes: switching the state now and in the
graph (:func:`enter_state`), and undoing it (:func:`exit_state`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, NoReturn, Sequence


from bytegraph.breaks import unimplemented
from bytegraph.variables.base import BoundMethodVariable, VariableTracker

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

def enter_state(tx: Tx, entered: list, enter_fn: Callable, exit_fn: Callable, args: tuple) -> None:
    """``enter_fn(*args)`` now (recording how to undo it if tracing stops
    early) and as a graph node; ``entered`` gets ``(real result, node)``."""
    real = enter_fn(*args)
    tx.output.open_states.append(lambda: exit_fn(real))
    entered.append((real, tx.output.create_node("call_function", enter_fn, args, {}, None)))


def exit_state(tx: Tx, ctx: VT, entered: list, exit_fn: Callable) -> None:
    """Undo the innermost entry of ``ctx`` now and in the graph."""
    if not entered:
        not_entered_here(ctx)
    real, node = entered.pop()
    tx.output.open_states.pop()()
    tx.output.create_node("call_function", exit_fn, (node,), {}, None)


def not_entered_here(ctx: VT) -> NoReturn:
    unimplemented(
        gb_type="unsupported context manager",
        context=f"leaving {ctx} entered before the trace",
        explanation="The context was entered outside the traced code (before a graph break); its exit "
                    "restores state only the real object holds.",
        hints=("Expected after a graph break inside such a with block; the exit runs natively.",),
    )


class StateContextVariable(VariableTracker):
    """Base of the torch state contexts: ``ctx.__enter__()``/``ctx.__exit__(...)``
    called explicitly (or on a bound method passed in) act as ``with`` does.

    Each subclass defines ``enter(tx)`` and ``exit(tx, args)``: what entering
    and leaving do to the state, at trace time and in the graph.
    """

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name in ("__enter__", "__exit__"):
            return BoundMethodVariable(self, name)
        return super().var_getattr(tx, name)

    def grad_mode_to_reenter(self) -> bool | None:
        """The grad mode to re-make and re-enter this context under after a
        graph break: the one the real object saved to restore on exit (None:
        its exit does not restore grad mode)."""
        return None

    def close_for_graph_break(self, tx: Tx) -> None:
        """Leave every entry made in this trace, in the graph and now, so the
        graph ends in the state it started in (the generated code then enters
        the context again before running the rest)."""

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name == "__enter__" and not args and not kwargs:
            return self.enter(tx)
        if name == "__exit__" and not kwargs:
            return self.exit(tx, args)
        return super().call_method(tx, name, args, kwargs)
