"""Per-code caches of compiled frames, and the call path.

A :class:`FrameCache` belongs to one code object and one set of compile
options. It holds :class:`CacheEntry` objects, newest first; :func:`run`
checks their guards and runs the first hit, and on a miss converts the frame
again (a recompile), up to ``config.recompile_limit`` entries, after which the
code runs natively with one warning naming the guard that keeps failing.
"""
from __future__ import annotations

import inspect
import types
import warnings
import weakref
from typing import Any, Callable

from bytegraph import logs
from bytegraph.config import config
from bytegraph.convert import CompileOptions, Converted, RunNatively, convert_frame
from bytegraph.guards.guard_code import GuardFunction
from bytegraph.runtime import metrics


class CacheEntry:
    """One compiled version of a frame.

    Attributes:
        check: the guard function, ``check(cells, *args, **kwargs) -> bool``.
        guard: the GuardFunction (for failure reasons).
        code: the transformed code object.
    """

    __slots__ = ("check", "guard", "code", "_plain_fn", "_refs", "valid", "__weakref__")

    def __init__(self, converted: Converted, owner: FrameCache):
        self.guard: GuardFunction = converted.guard
        self.code = converted.code
        self._plain_fn: Callable | None = None
        self.valid = True
        entry_ref = weakref.ref(self)
        owner_ref = weakref.ref(owner)

        def on_death(_ref: Any) -> None:
            entry, cache = entry_ref(), owner_ref()
            if entry is not None and cache is not None:
                cache.invalidate(entry)

        self._refs = [weakref.ref(g.ref(), on_death) for g in converted.id_guards if isinstance(g.ref, weakref.ref)]
        self.check = converted.guard.check

    def function_for(self, fn: types.FunctionType) -> Callable:
        """The transformed code as a function with ``fn``'s globals, defaults and closure."""
        if fn.__closure__ is None and self._plain_fn is not None:
            return self._plain_fn
        new = types.FunctionType(self.code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        new.__kwdefaults__ = fn.__kwdefaults__
        if fn.__closure__ is None:
            self._plain_fn = new
        return new


class FrameCache:
    """Cache entries of one code object under one set of compile options."""

    def __init__(self, code: types.CodeType, options: CompileOptions):
        self.code = code
        self.options = options
        self.entries: list[CacheEntry] = []
        self.native = False
        self._signature: inspect.Signature | None = None

    def clear(self) -> None:
        """Drop every entry and the run-natively decision (``bytegraph.reset``)."""
        for entry in self.entries:
            entry.valid = False
        self.entries = []
        self.native = False

    def invalidate(self, entry: CacheEntry) -> None:
        entry.valid = False
        self.entries = [e for e in self.entries if e is not entry]

    def miss(self, fn: types.FunctionType, args: tuple, kwargs: dict) -> Any:
        """No entry matched: compile (or give up and run natively), then run."""
        if self.native:
            return fn(*args, **kwargs)
        cells = fn.__closure__
        if self.entries:
            reason = self.entries[0].guard.first_failure(cells, args, kwargs) or "unknown guard"
            metrics.record_recompile(self.code, reason)
            if len(self.entries) >= config.recompile_limit:
                self.native = True
                metrics.record_native(self.code)
                warnings.warn(
                    f"bytegraph: {self.code.co_qualname} hit config.recompile_limit "
                    f"({config.recompile_limit}); running it natively from now on. "
                    f"Last guard failure: {reason}",
                    stacklevel=3,
                )
                return fn(*args, **kwargs)
            if logs.enabled("recompiles"):
                logs.get("recompiles").info("recompiling %s: %s", self.code.co_qualname, reason)
        try:
            f_locals = self._bind(fn, args, kwargs)
        except TypeError:
            return fn(*args, **kwargs)  # raises the eager TypeError
        result = convert_frame(self.code, fn.__globals__, cells, f_locals, fn, self.options)
        if isinstance(result, RunNatively):
            metrics.record_break(self.code, result.reason)
            metrics.record_native(self.code)
            self.native = True
            return fn(*args, **kwargs)
        metrics.record_compile(self.code, result.graphs, result.guard.text.splitlines(), result.seconds)
        entry = CacheEntry(result, self)
        self.entries = [entry, *self.entries]
        return entry.function_for(fn)(*args, **kwargs)

    def _bind(self, fn: types.FunctionType, args: tuple, kwargs: dict) -> dict[str, Any]:
        if self._signature is None:
            self._signature = inspect.signature(fn)
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)


_CACHES: dict[tuple[types.CodeType, int], FrameCache] = {}
#: every FrameCache still alive; compiled wrappers hold theirs directly, so
#: reset() must clear them in place rather than only forget them.
_LIVE: "weakref.WeakSet[FrameCache]" = weakref.WeakSet()


def cache_for(code: types.CodeType, options: CompileOptions) -> FrameCache:
    """The FrameCache of ``code`` under ``options`` (created on first use)."""
    key = (code, id(options))
    cache = _CACHES.get(key)
    if cache is None or cache.options is not options:
        cache = FrameCache(code, options)
        _CACHES[key] = cache
        _LIVE.add(cache)
    return cache


def run(cache: FrameCache, fn: types.FunctionType, args: tuple, kwargs: dict) -> Any:
    """Call ``fn`` through its cache: first entry whose guard passes, else a miss."""
    cells = fn.__closure__
    for entry in cache.entries:
        try:
            hit = entry.check(cells, *args, **kwargs)
        except TypeError:  # the arguments do not bind to the signature: raise eager's error
            return fn(*args, **kwargs)
        if hit:
            return entry.function_for(fn)(*args, **kwargs)
    return cache.miss(fn, args, kwargs)


def reset() -> None:
    """Drop every cache entry and statistic; compiled functions that are still
    alive recompile on their next call."""
    for cache in list(_LIVE):
        cache.clear()
    _CACHES.clear()
    metrics.reset()
