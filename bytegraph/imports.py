"""Seconds spent importing, kept apart from trace and compile time.

Importing torch's compiler stacks costs seconds, and most of it happens on
first use, inside the first trace or the first backend call: the first
``FakeTensorMode`` loads torch's frontend configuration package, and inductor
or AOTAutograd are imported by their backends. bytegraph times those places
with :func:`first_use` and its own start-up (``import bytegraph``, and torch if
it was not imported yet) with :func:`record`; the ``bytegraph run`` report
shows them on their own line, and per frame the imports are taken out of the
trace and backend times (:func:`total` read before and after).
"""
from __future__ import annotations

import contextlib
import time
from typing import Iterator

#: what was imported -> wall seconds, in the order first recorded
SECONDS: dict[str, float] = {}
#: what was imported at start-up (``import bytegraph``) rather than on first use
AT_STARTUP: set[str] = set()
_USED: set[str] = set()


def record(what: str, seconds: float, at_startup: bool = False) -> None:
    """Add ``seconds`` (wall) of importing ``what``."""
    SECONDS[what] = SECONDS.get(what, 0.0) + seconds
    if at_startup:
        AT_STARTUP.add(what)


@contextlib.contextmanager
def first_use(what: str) -> Iterator[None]:
    """Time the block as the import of ``what`` the first time it runs in
    this process (a block that imports, or whose first run imports); later
    runs are not timed."""
    if what in _USED:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        _USED.add(what)
        record(what, time.perf_counter() - start)


def total() -> float:
    """All import seconds recorded so far."""
    return sum(SECONDS.values())
