"""Calls made after the graph runs: ``warnings.warn`` and a logger's level
methods, recorded at trace time with their constant arguments and replayed
(see :mod:`bytegraph.graph.deferred`) at the line eager reports."""
from __future__ import annotations

import functools
import inspect
import logging
from typing import TYPE_CHECKING, Any, Sequence

from bytegraph.breaks import unimplemented
from bytegraph.graph import deferred
from bytegraph.guards.guards import GlobalStateMatch
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class DeferredCallVariable(VariableTracker):
    """``warnings.warn`` or a logger's level method (``logger.info``, ``.log``
    ...): the call only affects the world outside the program's values, so with
    constant arguments it is recorded and made after the graph runs (see
    :mod:`bytegraph.graph.deferred`), attributed to the line eager reports,
    instead of breaking the graph.

    Args:
        fn: ``warnings.warn`` or the bound logger method.
        logger: the logger for a logger method, else None.
        level: the method's level (None for ``Logger.log``, whose first
            argument is the level).
    """

    def __init__(self, fn: Any, logger: logging.Logger | None = None, level: int | None = None):
        super().__init__()
        self.fn = fn
        self.logger = logger
        self.level = level

    def python_type(self) -> type:
        return type(self.fn)

    def truthy(self, tx: Tx) -> bool:
        return True

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        if not all(a.is_python_constant() for a in (*args, *kwargs.values())):
            unimplemented(
                gb_type="logging or warning with traced values",
                context=f"{name} with non-constant arguments",
                explanation="A warning or log message built from traced values is only known when the graph runs.",
                hints=("Log constants, or move the call out of the compiled function.",),
            )
        values = tuple(a.as_python_constant() for a in args)
        options = {k: v.as_python_constant() for k, v in kwargs.items()}
        traced = tuple(
            (frame.filename, frame.lineno, frame.name, t.f_globals) for t in tx.user_frames() for frame in [t.frame_summary()]
        )
        try:
            if self.logger is None:
                replay, call = self._bind_warning(tx, traced, values, options)
            else:
                replay, call = self._bind_log(values, options)
        except TypeError as e:
            unimplemented(
                gb_type="unsupported warning or log call",
                context=f"{name}{values}: {e}",
                explanation="These arguments are not ones bytegraph can replay after the graph; "
                            "the call runs natively so that it behaves exactly as in eager.",
                hints=("Call it with a message, category and stacklevel (warnings) or a message, format "
                       "arguments, extra and stacklevel (logging).",),
            )
        tx.output.side_effects.record_call(replay, (traced, *call), {})
        return ConstantVariable(None)

    def _bind_warning(self, tx: Tx, traced: tuple, values: tuple, options: dict) -> tuple[Any, tuple]:
        bound = inspect.signature(deferred.replay_warning).bind(traced, *values, **options)
        bound.apply_defaults()
        message, category, stacklevel = bound.arguments["message"], bound.arguments["category"], bound.arguments["stacklevel"]
        category = deferred.warning_category(message, category)
        location = deferred.traced_location(traced, stacklevel)
        module = location[3].get("__name__") if location else None
        lineno = location[1] if location else None
        may_raise = functools.partial(deferred.warning_may_raise, category, message, module, lineno)
        if may_raise():
            unimplemented(
                gb_type="warning that may raise",
                context=f"{category.__name__}({message!r})",
                explanation="The warnings filters turn this warning into an exception, which must be raised "
                            "where eager raises it, before the rest of the frame runs.",
                hints=("Expected under 'error' warnings filters; the frame runs natively up to the warning.",),
            )
        tx.output.guards.add(GlobalStateMatch(None, may_raise, False, "warnings filters"))
        return deferred.replay_warning, (message, category, stacklevel, bound.arguments["source"])

    def _bind_log(self, values: tuple, options: dict) -> tuple[Any, tuple]:
        if self.level is None:
            if not values or type(values[0]) is not int:
                raise TypeError("level must be an integer")
            level, values = values[0], values[1:]
        else:
            level = self.level
        if not values:
            raise TypeError("missing the message")
        extra_options = set(options) - {"extra", "stacklevel"}
        if extra_options:
            raise TypeError(f"options {sorted(extra_options)} are not replayed (exc_info and stack_info "
                            "need the live frame)")
        return deferred.replay_log, (self.logger, level, values[0], values[1:], options.get("extra"),
                                     options.get("stacklevel", 1))

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_const(self.fn)


def logger_method(logger: logging.Logger, name: str) -> DeferredCallVariable | None:
    """The deferred call for ``logger.<name>`` if it is a level method."""
    if name != "log" and name not in deferred.LOG_LEVELS:
        return None
    return DeferredCallVariable(getattr(logger, name), logger, deferred.LOG_LEVELS.get(name))  # log(level, ...)
