"""The bases of torch's global-state context managers: :class:`StateContextVariable`,
and :class:`SwitchedStateVariable`, the template of a context whose entry and
exit are a pair of torch functions run now and as graph nodes (autocast,
inference mode)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NoReturn, Sequence


from bytegraph.breaks import unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


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

    def grad_mode_to_reenter(self) -> bool | None:
        """The grad mode to re-make and re-enter this context under after a
        graph break: the one the real object saved to restore on exit (None:
        its exit does not restore grad mode)."""
        return None

    def close_for_graph_break(self, tx: Tx) -> None:
        """Leave every entry made in this trace, in the graph and now, so the
        graph ends in the state it started in (the generated code then enters
        the context again before running the rest)."""

    def method_dunder_enter(self, tx: Tx, /) -> VT:
        return self.enter(tx)

    def method_dunder_exit(self, tx: Tx, /, *args: VT) -> VT:
        return self.exit(tx, args)


class SwitchedStateVariable(StateContextVariable):
    """A state context entered by ``enter_fn(*enter_args)`` and left by
    ``exit_fn`` on what entering returned: both run now (so FakeTensor results
    see the state) and as graph nodes (so the compiled graph switches too).
    Leaving an entry made before the trace is a graph break.

    Subclasses give :attr:`enter_fn`, :attr:`exit_fn`, :meth:`enter_args` and
    :meth:`constructor` (how the generated code makes the context again).
    """

    reenter_on_reconstruct = True
    enter_fn: Callable[..., Any]
    exit_fn: Callable[[Any], Any]

    def __init__(self, source=None):
        super().__init__(source)
        self.entered: list[tuple[Any, Any]] = []  # (real result of entering, its graph node)

    def enter_args(self) -> tuple:
        """The arguments of :attr:`enter_fn`."""
        raise NotImplementedError(type(self).__name__)

    def constructor(self) -> tuple[Callable[..., Any], tuple]:
        """``(callable, constant arguments)`` that make this context again."""
        raise NotImplementedError(type(self).__name__)

    def enter(self, tx: Tx) -> VT:
        """Enter now (recording how to undo it if tracing stops early) and as a graph node."""
        enter_fn, exit_fn, args = type(self).enter_fn, type(self).exit_fn, self.enter_args()
        real = enter_fn(*args)
        tx.output.open_states.append(lambda: exit_fn(real))
        self.entered.append((real, tx.output.create_node("call_function", enter_fn, args, {}, None)))
        return ConstantVariable(None)

    def exit(self, tx: Tx, args: Sequence[VT] = ()) -> VT:
        """Undo the innermost entry made in this trace, now and in the graph."""
        if not self.entered:
            not_entered_here(self)
        real, node = self.entered.pop()
        tx.output.open_states.pop()()
        tx.output.create_node("call_function", type(self).exit_fn, (node,), {}, None)
        return ConstantVariable(None)

    def close_for_graph_break(self, tx: Tx) -> None:
        while self.entered:
            self.exit(tx)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        fn, args = self.constructor()
        codegen.load_callable(fn)
        for value in args:
            codegen.load_const(value)
        codegen.call(len(args))
