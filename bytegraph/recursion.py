"""Python stack room for tracing deeply nested user calls.

Tracing one inlined user call uses several Python frames of bytegraph's own
(the child translator's ``run`` -> ``step`` -> the ``CALL`` handler -> the
callee VT's ``call_function`` -> ``inline_call``), where CPython uses one frame
for the call itself. Under Python's recursion limit unchanged, a recursion
CPython runs fine (200 levels at the default limit of 1000) would exhaust
the limit while being traced.

So tracing runs under a raised limit, sized so that every inlined depth the
user's program could reach eagerly fits, and the inlined depth is capped at
what eager could reach: a call nested deeper than Python's recursion limit
allows (or deeper than ``config.max_inline_depth``) is a graph break, and the
call runs natively where eager's RecursionError (if any) is raised.

The raised limit stays bounded: bytegraph's chain of frames per inlined call
is pure-Python calls, which CPython 3.11+ runs without recursing on the C
stack, so ``FRAMES_PER_INLINED_CALL * depth`` Python frames do not risk a C
stack overflow at the depths allowed (at most ``config.max_inline_depth``).
"""
from __future__ import annotations

import contextlib
import sys
import threading
from typing import Iterator

from bytegraph.config import config

#: bytegraph frames one inlined call may put on the Python stack, with room for
#: the longer routes (constructors, ``__call__``, ``super()``, ``functools.partial``);
#: tests/test_inlining.py measures the plain route against it
FRAMES_PER_INLINED_CALL = 12
#: frames left for what runs at the innermost call (torch's operator
#: dispatch on FakeTensors, guards, codegen of a graph break)
HEADROOM = 2000


class _Raised:
    """The traces running now (threads share the interpreter's limit): the
    first to start saves the user's limit, the last to finish restores it."""

    lock = threading.Lock()
    active = 0
    user_limit = 0


def user_recursion_limit() -> int:
    """``sys.getrecursionlimit()`` as the user's program sees it (not the
    raised limit a trace runs under)."""
    with _Raised.lock:
        return _Raised.user_limit if _Raised.active else sys.getrecursionlimit()


def stack_depth() -> int:
    """Number of Python frames on the current thread's stack."""
    frame, depth = sys._getframe(1), 1
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


@contextlib.contextmanager
def tracing_stack() -> Iterator[int]:
    """Raise Python's recursion limit for one trace; restore it on exit.

    Yields:
        The deepest nesting of inlined user calls the trace may reach: the
        calls eager could still make below the current stack depth under the
        user's recursion limit, at most ``config.max_inline_depth``.
    """
    with _Raised.lock:
        if not _Raised.active:
            _Raised.user_limit = sys.getrecursionlimit()
        _Raised.active += 1
        limit = _Raised.user_limit
        base = stack_depth()
        max_depth = max(0, min(config.max_inline_depth, limit - base))
        sys.setrecursionlimit(max(sys.getrecursionlimit(), base + max_depth * FRAMES_PER_INLINED_CALL + HEADROOM))
    try:
        yield max_depth
    finally:
        with _Raised.lock:
            _Raised.active -= 1
            if not _Raised.active:
                sys.setrecursionlimit(_Raised.user_limit)
