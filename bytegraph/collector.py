"""Python's cyclic garbage collector while a frame converts.

A trace makes objects by the hundred thousand (variable trackers, instructions,
sources, fx nodes, FakeTensors, guards) that live until the trace ends. With the
collector running, young collections promote them, and once enough have been
promoted the collector scans the whole heap: every object of torch, of the
model's libraries and of the model (about 0.3 s a scan for an HF model, once or
twice in its trace: a quarter of the trace). So a conversion runs with the
collector paused (:func:`paused`); when it is switched back on, most of the
trace's objects have been freed by their reference counts and the two young
generations are collected at once: the cycles among the rest are found, and the
survivors (a cache entry, its graphs, the modules a first trace imported) join
the old generation after one scan. Left to the next young collections, they were
scanned twice, the second time inside whatever ran later (a generation-1 scan
of a first trace's imports, 40 ms, fell inside the next frame's conversion).

The backend's compile runs with the collector on (:func:`running`): a backend
such as inductor makes as many objects again and may run for minutes, and its
garbage cycles must not pile up. A program that switched the collector off
keeps it off.
"""
from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

_lock = threading.Lock()
_paused = 0  # conversions in progress that paused the collector (nested conversions count)


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block (if it was on when the outermost block began)."""
    global _paused
    with _lock:
        if not _paused and not gc.isenabled():
            owner = False  # the program keeps it off
        else:
            owner = True
            _paused += 1
            gc.disable()
    try:
        yield
    finally:
        if owner:
            with _lock:
                _paused -= 1
                if not _paused:
                    gc.enable()
                    gc.collect(1)


@contextlib.contextmanager
def running() -> Iterator[None]:
    """The collector on for the block when a conversion paused it (a backend's compile)."""
    global _paused
    with _lock:
        held, _paused = _paused, 0
        if held:
            gc.enable()
    try:
        yield
    finally:
        with _lock:
            if held:
                _paused = held
                gc.disable()
