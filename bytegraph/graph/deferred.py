"""Warnings and log records issued after a graph instead of traced.

A ``warnings.warn(...)`` or ``logger.info(...)`` call with constant arguments
has no effect on the program's values, so the trace records it and the
generated code makes it after the graph. To look exactly like eager, the
replay attributes the warning or record to the location eager would have
used: ``stacklevel`` frames up from the call, counted first through the
traced user frames (recorded at trace time as :data:`Location` tuples,
innermost first), then through the real frames above the compiled frame, skipping
bytegraph's own frames and the earlier pieces of a frame split by graph
breaks (which are one frame in eager).
"""
from __future__ import annotations

import logging
import sys
import types
import warnings
from typing import Any, Optional

from bytegraph.breaks import is_user_file

#: ``(filename, lineno, function name, module globals)`` of one frame
Location = tuple[str, int, str, dict]

#: a logger's level methods whose records can be made after the graph
LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "fatal": logging.FATAL,
}



def traced_location(traced: tuple[Location, ...], stacklevel: int) -> Location | None:
    """The location ``stacklevel`` levels up from the call when it is one of
    the traced user frames (``traced``, innermost first), else None."""
    level = max(stacklevel, 1) - 1
    return traced[level] if level < len(traced) else None


#: ids of the code of the runtime function through which one piece of an eager frame split by
#: graph breaks calls the next (a resume function); the runtime registers it (ids: a transformed
#: frame's code may hold unhashable constants)
PIECE_CALLS: set[int] = set()


def _location(traced: tuple[Location, ...], stacklevel: int, compiled: types.FrameType) -> Location:
    """The frame ``stacklevel`` levels up from the call (1: the caller of
    ``warn``/``log``) as eager would see it; ``compiled`` is the frame of the
    generated code, the outermost traced frame. Above it, a user frame that
    called the next piece through :data:`PIECE_CALLS` is an earlier piece of
    the same eager frame: skipped, however many resume calls deep (a loop
    breaking on every iteration nests one per iteration)."""
    found = traced_location(traced, stacklevel)
    if found is not None:
        return found
    level = max(stacklevel, 1) - 1 - len(traced)
    frame: Optional[types.FrameType] = compiled
    piece = False
    while (frame := frame.f_back) is not None:
        if id(frame.f_code) in PIECE_CALLS:
            piece = True
        if not is_user_file(frame.f_code.co_filename):
            continue
        if piece:
            piece = False
        elif level == 0:
            return (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name, frame.f_globals)
        else:
            level -= 1
    return ("sys", 1, "<module>", sys.__dict__)


def warning_category(message: Any, category: Optional[type]) -> type:
    """The category ``warnings.warn`` files ``message`` under.

    Raises:
        TypeError: ``category`` is not a Warning subclass (as eager raises).
    """
    if isinstance(message, Warning):
        return type(message)
    if category is None:
        return UserWarning
    if not (isinstance(category, type) and issubclass(category, Warning)):
        raise TypeError(f"category must be a Warning subclass, not '{type(category).__name__}'")
    return category


def warning_may_raise(category: type, message: Any, module: Optional[str], lineno: Optional[int]) -> bool:
    """Whether the current warnings filters may turn this warning into an
    exception (the ``error`` action), mirroring ``warnings``' first-match rule.
    ``module``/``lineno`` of None are unknown: filters on them count as
    matching when they would raise and as not matching otherwise."""
    text = str(message)
    for action, msg, cat, mod, ln in warnings.filters:
        if (msg is not None and not msg.match(text)) or not issubclass(category, cat):
            continue
        known = (mod is None or (module is not None and mod.match(module))) and (
            ln == 0 or (lineno is not None and ln == lineno))
        unknown_match = (mod is not None and module is None) or (ln != 0 and lineno is None)
        if known or (unknown_match and action == "error"):
            return action == "error"
    return warnings.defaultaction == "error"


def replay_warning(traced: tuple[Location, ...], message: Any, category: Optional[type] = None,
                   stacklevel: int = 1, source: Any = None) -> None:
    """``warnings.warn(message, category, stacklevel, source)`` made after the
    graph, attributed to the location eager would use (same registry, so the
    ``default``/``once`` actions show it as often as eager does)."""
    category = warning_category(message, category)
    filename, lineno, _, module_globals = _location(traced, stacklevel, sys._getframe(1))
    registry = module_globals.setdefault("__warningregistry__", {})
    module = module_globals.get("__name__", "<string>")
    warnings.warn_explicit(message, category, filename, lineno, module, registry, module_globals, source)


def replay_log(traced: tuple[Location, ...], logger: logging.Logger, level: int, msg: Any,
               args: tuple, extra: Optional[dict] = None, stacklevel: int = 1) -> None:
    """``logger.log(level, msg, *args, extra=extra, stacklevel=stacklevel)``
    made after the graph, with the record's pathname, lineno and funcName
    those of the location eager would use."""
    if not logger.isEnabledFor(level):
        return
    filename, lineno, func, _ = _location(traced, stacklevel, sys._getframe(1))
    logger.handle(logger.makeRecord(logger.name, level, filename, lineno, msg, args, None, func, extra, None))
