"""Exceptions raised inside the traced program.

When the traced program raises (``raise``, or an operation bytegraph models
raising, like a missing dict key), the translator raises :class:`TracedException`
carrying an :class:`ExceptionVariable`. Each frame looks for a handler in its
exception table (``try``/``except``/``finally``, ``with`` cleanups) and jumps to
it; an exception nobody in the trace catches becomes a graph break at the
compiled frame, so the native run raises it exactly as eager does.
"""
from __future__ import annotations

import operator
import sys
import types
from typing import TYPE_CHECKING, Callable, Sequence

from bytegraph.breaks import BreakSite, Unsupported, unimplemented
from bytegraph.guards.guards import GlobalStateMatch
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.tx import make_tuple, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


def _chain_attribute(field: str) -> Callable[[ExceptionVariable, Tx], VT]:
    """The ``attr_<name>`` handler of a chaining attribute, held as ``field``."""
    def read(self: ExceptionVariable, tx: Tx) -> VT:
        value = getattr(self, field)
        return value if isinstance(value, VariableTracker) else wrap_const(tx, value)
    return read


def _is_none(value: VT) -> bool:
    return value.is_python_constant() and value.as_python_constant() is None


def _known_type(value: VT) -> type | None:
    """``type(value)`` when the trace knows it, else None."""
    try:
        return value.python_type()
    except Unsupported:
        return None


def _check_store(tx: Tx, value: VT, accepted: tuple[type, ...], message: str) -> bool:
    """Whether ``value`` may be stored in an exception attribute whose setter
    takes only ``accepted`` types: True for an exception of the trace, a
    traceback of the trace or None where accepted; a value of a type the setter
    refuses raises eager's TypeError ``message`` in the traced program; False
    (a break) when its type is unknown or it is accepted but not modelled (an
    exception or traceback from outside the trace)."""
    if isinstance(value, (ExceptionVariable, TracebackVariable)) and issubclass(value.python_type(), accepted) or (
            _is_none(value) and type(None) in accepted):
        return True
    known = _known_type(value)
    if known is not None and not issubclass(known, accepted):
        raise TracedException(ExceptionVariable(TypeError, [wrap_const(tx, message)]))
    return False


class ExceptionVariable(VariableTracker):
    """An exception instance created in the trace: its class, arguments and
    chaining attributes.

    ``cause`` and ``context`` are ExceptionVariables or None (``__cause__``,
    ``__context__``); ``suppress_context`` is ``__suppress_context__``. The
    translator sets them as CPython does: ``raise X from Y`` sets the cause,
    and raising while an exception is being handled sets the context (see
    :meth:`chain_context`). ``raise_site`` is set where it is first raised
    (see :class:`~bytegraph.breaks.BreakSite`), and ``traceback`` (its
    ``__traceback__``: None, or the :class:`TracebackVariable` eager gives it
    when it is raised); the trace has no frames for that traceback, so
    rebuilding a raised exception after the graph moves the break to where it
    was raised (see :meth:`reconstruct`).
    """

    mutable = True  # one identity when rebuilt: ``raise e`` and ``e.__context__`` compare by identity

    def __init__(self, exc_type: type, args: Sequence[VT]):
        super().__init__()
        self.exc_type = exc_type
        self.args = list(args)
        self.cause: ExceptionVariable | None = None
        self.context: ExceptionVariable | None = None
        self.suppress_context = False
        self.raise_site: BreakSite | None = None
        self.traceback: TracebackVariable | None = None

    def python_type(self) -> type:
        return self.exc_type

    def truthy(self, tx: Tx) -> bool:
        return True

    def set_cause(self, cause: ExceptionVariable | None) -> None:
        """``raise self from cause`` / ``self.__cause__ = cause``: also sets
        ``__suppress_context__``, as CPython does."""
        self.cause = cause
        self.suppress_context = True

    def chain_context(self, handled: ExceptionVariable | None) -> None:
        """Implicit chaining when this exception is raised while ``handled`` is
        being handled (CPython's ``_PyErr_SetObject``): ``__context__`` becomes
        ``handled``, unless it is this exception itself; a link back to this
        exception in ``handled``'s context chain is cut, so no cycle forms."""
        if handled is None or handled is self:
            return
        link, seen = handled, set()
        while link.context is not None and id(link) not in seen:
            seen.add(id(link))
            if link.context is self:
                link.context = None
                break
            link = link.context
        self.context = handled

    def raised(self) -> None:
        """The exception is raised (or propagates) in the trace: it gets a
        traceback, as CPython's ``PyTraceBack_Here`` gives it one, unless it
        has one already."""
        if self.traceback is None:
            self.traceback = TracebackVariable(self)

    # attributes (others are a graph break) ------------------------------------
    def attr_args(self, tx: Tx) -> VT:
        return make_tuple(self.args)

    def attr_dunder_class(self, tx: Tx) -> VT:
        return wrap_const(tx, self.exc_type)

    attr_dunder_context = _chain_attribute("context")
    attr_dunder_cause = _chain_attribute("cause")
    attr_dunder_suppress_context = _chain_attribute("suppress_context")

    def attr_dunder_traceback(self, tx: Tx) -> VT:
        return self.traceback or wrap_const(tx, None)

    def method_with_traceback(self, tx: Tx, tb: VT, /) -> VT:
        """``exc.with_traceback(tb)``: sets ``__traceback__``, returns the exception."""
        self.store_attr(tx, "__traceback__", tb)
        return self

    def store_attr(self, tx: Tx, name: str, value: VT) -> None:
        """``exc.__cause__/__context__/__suppress_context__ = value``.

        Raises:
            Unsupported: for other attributes, and values of the wrong kind
                (eager's TypeError then comes from the native run).
        """
        if self.store_from_handler(tx, name, value):
            return
        unimplemented(
            gb_type="unsupported attribute store",
            context=f"setting {name!r} on {self.describe()}",
            explanation="bytegraph models only the chaining attributes and the traceback (None or one of the "
                        "trace's) of exceptions created in the trace.",
            hints=("Move the assignment out of the compiled function.",),
        )

    def store_dunder_cause(self, tx: Tx, value: VT) -> bool:
        if not _check_store(tx, value, (BaseException, type(None)),
                            "exception cause must be None or derive from BaseException"):
            return False
        self.set_cause(value if isinstance(value, ExceptionVariable) else None)
        return True

    def store_dunder_context(self, tx: Tx, value: VT) -> bool:
        if not _check_store(tx, value, (BaseException, type(None)),
                            "exception context must be None or derive from BaseException"):
            return False
        self.context = value if isinstance(value, ExceptionVariable) else None
        return True

    def store_args(self, tx: Tx, value: VT) -> bool:
        """``exc.args = iterable``: stored as a tuple of its items (CPython's
        setter), for classes whose C state is ``args`` alone (not OSError's,
        UnicodeError's, StopIteration's... fields, which ``str()`` reads and
        ``args`` no longer matches); a value that is not iterable raises eager's
        TypeError."""
        if self.exc_type.__basicsize__ != BaseException.__basicsize__:
            return False
        if value.has_unpack_var_sequence(tx):
            self.args = value.unpack_var_sequence(tx)
            return True
        known = _known_type(value)
        if value.is_python_constant() and known is not None and not hasattr(known, "__iter__"):
            raise TracedException(ExceptionVariable(TypeError, [wrap_const(tx, f"'{known.__name__}' object is not "
                                                                               "iterable")]))
        return False

    def store_dunder_suppress_context(self, tx: Tx, value: VT) -> bool:
        """A bool only (CPython's ``T_BOOL`` member refuses even ``1``)."""
        if _known_type(value) is not bool:
            _check_store(tx, value, (bool,), "attribute value type must be bool")
            return False
        if not value.is_python_constant():
            return False
        self.suppress_context = value.as_python_constant()
        return True

    def store_dunder_traceback(self, tx: Tx, value: VT) -> bool:
        if not _check_store(tx, value, (types.TracebackType, type(None)), "__traceback__ must be a traceback or None"):
            return False
        self.traceback = value if isinstance(value, TracebackVariable) else None
        return True

    def as_text(self, fn: type) -> str | None:
        """``str(exc)`` or ``repr(exc)`` (``fn``) when the arguments are constants
        and the class's ``__str__``/``__repr__`` is builtin, else None."""
        method = getattr(self.exc_type, f"__{fn.__name__}__")
        if isinstance(method, types.FunctionType) or not all(a.is_python_constant() for a in self.args):
            return None
        try:  # through operator.call, which checks the result: 3.11's UnicodeError.__str__ on positions out of
            # range returns one with an error set, which a plain call here would leave pending
            return operator.call(fn, self.exc_type(*[a.as_python_constant() for a in self.args]))
        except Exception as e:  # noqa: BLE001 - eager's error (or its SystemError) comes from the native run
            unimplemented(
                gb_type="exception text failed",
                context=f"{fn.__name__}() of {self.describe()}: {type(e).__name__}: {e}",
                explanation="The exception class's builtin __str__/__repr__ fails on these arguments (CPython 3.11's "
                            "UnicodeError.__str__ on positions out of range returns with an error set); the native "
                            "run does what eager does.",
                hints=("Check the arguments before making the exception.",),
            )

    def str_text(self, tx: Tx) -> VariableTracker | None:
        text = self.as_text(str)
        return None if text is None else wrap_const(tx, text)

    def repr_text(self, tx: Tx) -> VariableTracker | None:
        text = self.as_text(repr)
        return None if text is None else wrap_const(tx, text)

    def describe(self) -> str:
        shown = ", ".join(repr(a.as_python_constant()) if a.is_python_constant() else "..." for a in self.args)
        return f"{self.exc_type.__name__}({shown})"

    def reconstruct(self, codegen: PyCodegen) -> None:
        """``exc_type(*args)``, then the chaining attributes that differ from a
        fresh exception's.

        Raises:
            Unsupported: when the exception was raised (its eager traceback
                cannot be rebuilt), moved to where it was raised so the native
                run raises it; or when its cause/context chain loops back to it.
        """
        if self.raise_site is not None or self._chain_reaches(self):
            try:
                unimplemented(
                    gb_type="cannot reconstruct",
                    context=f"{self.describe()}, " + ("raised in the trace," if self.raise_site else "a cyclic chain,")
                    + " is live after the graph",
                    explanation="bytegraph cannot rebuild the traceback of an exception raised in the trace, nor a "
                    "cyclic exception chain, in the generated code.",
                    hints=("Keep only what you need of the exception (e.g. str(e)) past the except clause.",),
                )
            except Unsupported as brk:
                if self.raise_site is not None:
                    self.raise_site.relocate(brk)
                raise
        codegen.load_callable(self.exc_type)
        for arg in self.args:
            codegen.reconstruct(arg)
        codegen.call(len(self.args))
        for name, link in (("__context__", self.context), ("__cause__", self.cause)):
            if link is not None:
                _store_attr(codegen, name, lambda link=link: codegen.reconstruct(link))
        if self.suppress_context != (self.cause is not None):  # storing __cause__ set it
            _store_attr(codegen, "__suppress_context__", lambda: codegen.load_const(self.suppress_context))

    def _chain_reaches(self, target: ExceptionVariable) -> bool:
        """Whether ``target`` is reachable through ``__cause__``/``__context__`` links."""
        pending, seen = [self.cause, self.context], set()
        while pending:
            link = pending.pop()
            if link is None or id(link) in seen:
                continue
            if link is target:
                return True
            seen.add(id(link))
            pending += [link.cause, link.context]
        return False

    def __repr__(self) -> str:
        return f"ExceptionVariable({self.describe()})"


class TracebackVariable(VariableTracker):
    """The traceback eager gives ``exc`` (an :class:`ExceptionVariable`) when
    it is raised in the trace: it exists (``tb is not None``, it can be stored,
    passed to ``__exit__`` and cleared), but its frames are the trace's own, so
    reading its attributes, or keeping it past the graph, is a graph break."""

    def __init__(self, exc: ExceptionVariable):
        super().__init__()
        self.exc = exc

    def python_type(self) -> type:
        return types.TracebackType

    def truthy(self, tx: Tx) -> bool:
        return True

    def var_getattr(self, tx: Tx, name: str) -> VT:
        unimplemented(
            gb_type="exception traceback",
            context=f"{self.exc.describe()}.__traceback__.{name}",
            explanation="The frames of a traceback of an exception raised in the trace are not modelled.",
            hints=("Read the traceback outside the compiled function.",),
        )

    def reconstruct(self, codegen: PyCodegen) -> None:
        self.exc.reconstruct(codegen)  # a graph break, moved to where the exception was raised

    def __repr__(self) -> str:
        return f"TracebackVariable({self.exc.describe()})"


class ClearFramesVariable(ConstantCallableVariable):
    """``traceback.clear_frames(tb)``: clearing the frames of a traceback of the
    trace (or of None) does nothing the program can see, since those frames
    are the trace's own; a traceback from outside the trace is a graph break."""

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if len(args) == 1 and not kwargs and (isinstance(args[0], TracebackVariable) or args[0].is_python_constant()
                                               and args[0].as_python_constant() is None):
            return wrap_const(tx, None)
        unimplemented(
            gb_type="call to skipped function",
            context=f"traceback.clear_frames{tuple(args)}",
            explanation="bytegraph clears only tracebacks of exceptions raised in the trace.",
            hints=("Call it outside the compiled function, or accept the graph break.",),
        )


class ExceptionStateVariable(ConstantCallableVariable):
    """``sys.exception()`` / ``sys.exc_info()``: the exception the trace is
    handling (its type and traceback for ``exc_info``), as CPython's
    exception-state chain finds it. When the trace handles none, the answer is
    the caller's state: none is guarded (``sys.exception() is None`` on each
    call); one being handled outside the trace is a graph break."""

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if args or kwargs:  # both take none: eager's TypeError, from the real call with placeholders
            try:
                self.value(*[None] * len(args), **dict.fromkeys(kwargs))
            except TypeError as e:
                raise TracedException(ExceptionVariable(TypeError, [wrap_const(tx, a) for a in e.args])) from None
        handled = tx.handled_exception()
        if handled is None:
            if sys.exception() is not None:
                unimplemented(
                    gb_type="exception state",
                    context=f"{self.value.__name__}() while the caller handles an exception",
                    explanation="The exception being handled was raised outside the compiled code; the trace "
                                "cannot stand for it.",
                    hints=("Call the compiled function outside the except block, or pass the exception in.",),
                )
            tx.output.guards.add(GlobalStateMatch(None, sys.exception, None, "exception being handled"))
        none = wrap_const(tx, None)
        if self.value is sys.exception:
            return handled or none
        if handled is None:
            return make_tuple([none, none, none])
        return make_tuple([handled.var_getattr(tx, "__class__"), handled, handled.var_getattr(tx, "__traceback__")])


def _store_attr(codegen: PyCodegen, name: str, emit_value: Callable[[], None]) -> None:
    """Set attribute ``name`` of the object on top of the stack, leaving it there."""
    codegen.emit("COPY", 1)
    emit_value()
    codegen.emit("SWAP", 2)
    codegen.emit("STORE_ATTR", name)


class TracedException(Exception):
    """The traced program raised ``exc`` (an :class:`ExceptionVariable`).

    ``fresh`` is True for a newly raised exception, whose ``__context__`` the
    first translator that sees it sets to the exception being handled there
    (implicit chaining); False for re-raises (bare ``raise``, ``RERAISE``) and
    exceptions whose chaining is already final.
    """

    def __init__(self, exc: ExceptionVariable, fresh: bool = True):
        super().__init__(exc.describe())
        self.exc = exc
        self.fresh = fresh
        self.user_stack: tuple = ()  # where it was raised, once it leaves the raising frame
