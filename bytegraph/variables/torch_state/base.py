"""The bases of torch's global-state context managers: :class:`StateContextVariable`,
and :class:`SwitchedStateVariable`, the template of a context whose entry and
exit are a pair of torch functions run now and as graph nodes (autocast,
inference mode, sdpa_kernel); :class:`EnteredState` (a state entered for real) and
:func:`at_trace_entry`; :class:`ContextWrappedFunction` (a function decorated by one)."""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Sequence

from bytegraph.breaks import unimplemented
from bytegraph.graph.state_setters import left_for
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


def decorated_plainly(fn: VT, ctx: VT) -> None:
    """Break unless ``fn`` is a function whose body runs inside the call: torch wraps generator
    functions (the body runs at each ``next``) and classes differently."""
    code = fn.get_code() if hasattr(fn, "get_code") else None
    lazy = code is not None and code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR)
    if lazy or (fn.is_python_constant() and inspect.isclass(fn.as_python_constant())):
        unimplemented(
            gb_type="unsupported context manager",
            context=f"{ctx} decorating {fn}",
            explanation="Only a plain function decorated by a torch state context manager is traced; a generator "
                        "function or class is wrapped differently by torch, so the decoration runs natively.",
            hints=("Use a with block inside the function instead.",),
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


class EnteredState:
    """A state a trace entered for real (``enter_fn(*args)``) and has not left: calling it leaves
    (``exit_fn`` on what entering returned); :meth:`reenter` enters it again."""

    def __init__(self, enter_fn: Callable[..., Any], exit_fn: Callable[[Any], Any], args: tuple):
        self.enter_fn, self.exit_fn, self.args = enter_fn, exit_fn, args
        self.real = enter_fn(*args)

    def __call__(self) -> None:
        self.exit_fn(self.real)

    def reenter(self) -> None:
        self.real = self.enter_fn(*self.args)


def at_trace_entry(tx: Tx, getter: Callable[[], Any]) -> Any:
    """``getter()`` in the state the traced frame started in: the states the trace entered are left
    for the call and entered again (grad mode, which leaving inference mode restores, put back after),
    so that a query inside ``with torch.autocast(...)`` is guarded on what the frame is called with."""
    with left_for(tx.output.open_states):
        return getter()


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
        self.entered: list[tuple[EnteredState, Any]] = []  # (the state entered now, its graph node)

    def enter_args(self) -> tuple:
        """The arguments of :attr:`enter_fn`."""
        raise NotImplementedError(type(self).__name__)

    def constructor(self) -> tuple[Callable[..., Any], tuple]:
        """``(callable, constant arguments)`` that make this context again."""
        raise NotImplementedError(type(self).__name__)

    def enter(self, tx: Tx) -> VT:
        """Enter now (recording how to undo it if tracing stops early) and as a graph node."""
        enter_fn, args = type(self).enter_fn, self.enter_args()
        state = EnteredState(enter_fn, type(self).exit_fn, args)
        tx.output.open_states.append(state)
        self.entered.append((state, tx.output.create_node("call_function", enter_fn, args, {}, None)))
        return ConstantVariable(None)

    def exit(self, tx: Tx, args: Sequence[VT] = ()) -> VT:
        """Undo the innermost entry made in this trace, now and in the graph."""
        if not self.entered:
            not_entered_here(self)
        node = self.entered.pop()[1]
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


class ContextWrappedFunction(VariableTracker):
    """A function decorated in the trace by a state context (``@torch.autocast("cpu")``): each
    call enters a context ``make()`` gives, calls ``fn`` and leaves it, as torch's decorator
    runs the call inside ``with``."""

    def __init__(self, make: Callable[[], StateContextVariable], fn: VT):
        super().__init__()
        self.make = make
        self.fn = fn

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        ctx = self.make()
        ctx.enter(tx)
        try:
            return self.fn.call_function(tx, args, kwargs)
        finally:
            ctx.exit(tx)
