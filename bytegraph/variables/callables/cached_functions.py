"""``functools.lru_cache`` wrappers around Python functions: what calling one does.

A call whose arguments are all constants goes through the real cache at trace
time (:meth:`WrappedFunctionVariable.call_function`); a call with tensors or
other objects the cache hashes by identity traces the wrapped function
(:meth:`WrappedFunctionVariable.trace_miss`). Anything else is a graph break,
so the call runs natively through the real cache.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from bytegraph.breaks import unimplemented
from bytegraph.guards.guards import GlobalStateMatch, IdMatch
from bytegraph.guards.source import AttrSource, ConstSource
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.callables.functions import UserMethodVariable
from bytegraph.variables.constant import (
    ConstantVariable,
    getattr_or_raise,
    is_constant_value,
    raise_traced,
    raise_traced_from,
)
from bytegraph.variables.tx import wrap, wrap_const

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

_NOT_CONSTANT = object()


class WrappedFunctionVariable(ConstantCallableVariable):
    """A ``functools.lru_cache`` wrapper around a Python function.

    A call with constant (hashable) arguments is made now, through the real
    cache, as eager's first call makes it (later eager calls are cache hits:
    no side effects, the same result object); the result is a constant,
    guarded by the cache still holding at least as many entries and not
    having evicted any (so ``cache_clear()`` recompiles). Symbolic ints are
    specialised for this.

    A call with tensors (or other objects hashed by identity) among its
    arguments is traced as the miss it is on fresh inputs (see
    :meth:`trace_miss`). Later runs of the compiled code make a constant
    call again (:class:`CacheHitReplay`), so the cache's statistics count
    every call; a conversion that traces the frame more than once makes each
    real call once (``OutputGraph.made_call``)."""

    def __init__(self, wrapper: Any, inner: VT, source=None):
        super().__init__(wrapper, source)
        self.inner = inner

    def attr_dunder_wrapped(self, tx: Tx) -> VT:
        return self.inner

    def var_getattr(self, tx: Tx, name: str) -> VT:
        """``__wrapped__`` is the inner function; the metadata ``functools.update_wrapper``
        copied onto the wrapper (``__name__``, ``__doc__``, ``__dict__``...) is read from it."""
        found = self.attr_from_handler(tx, name)
        if found is not None:
            return found
        if name in (*functools.WRAPPER_ASSIGNMENTS, "__dict__"):
            value = getattr_or_raise(self.fn, name)
            return wrap(tx, value, AttrSource(self.source, name)) if self.source is not None else wrap_const(tx, value)
        return super().var_getattr(tx, name)

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        keys = [_cache_key(tx, a) for a in (*args, *kwargs.values())]
        constants = [k for k in keys if k is not _NOT_CONSTANT]
        try:
            hash(tuple(constants))
        except TypeError as e:
            raise_traced_from(e)  # eager's "unhashable type" from the cache
        room = _has_room(self.fn)()
        if len(constants) == len(keys):
            made = self._call_now(tx, keys[:len(args)], dict(zip(kwargs, keys[len(args):])), room)
            if made is not None:
                return made
        elif room and all(_hashed_by_identity(a) for a, k in zip((*args, *kwargs.values()), keys)
                          if k is _NOT_CONSTANT):
            return self.trace_miss(tx, args, kwargs, keys)
        unimplemented(
            gb_type="lru_cache call",
            context=f"{self.fn.__qualname__} called with arguments known only when the graph runs"
            if room else f"{self.fn.__qualname__}, whose cache is full",
            explanation="The call runs natively through the real cache, so the wrapped function runs (and its side "
            "effects happen) only on a cache miss, as in eager.",
            hints=("Pass constants, tensors or plain objects to cached functions.",),
        )

    def _call_now(self, tx: Tx, values: list, keywords: dict, room: bool) -> VT | None:
        """The call with constant arguments, made through the real cache (None: no room)."""
        def make() -> Any:
            try:
                return self.fn(*values, **keywords)
            except Exception as e:  # noqa: BLE001 - the user function's own error, raised in the trace
                raise_traced_from(e)

        made = tx.output.made_call((self.fn, tuple(values), tuple(keywords.items())), make if room else None)
        if made is None:
            return None
        result, = made
        tx.output.side_effects.record_call(CacheHitReplay(self.fn), tuple(values), keywords)
        size = self.fn.cache_info().currsize
        tx.output.guards.add(GlobalStateMatch(None, _cache_holds(self.fn, size), True,
                                              f"cache of {self.fn.__qualname__}"))
        if is_constant_value(result):
            return ConstantVariable(result)
        return wrap(tx, result, ConstSource(result, f"{self.fn.__qualname__}(...)"))

    def trace_miss(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT], keys: list) -> VT:
        """Trace the wrapped function, as eager's call runs it on a miss: on
        fresh inputs every call with a tensor (hashed by identity) misses.

        A second call in the same trace with the same objects is the hit it is
        in eager: the first call's result. The call must leave every object
        that existed before it as it was (no recorded side effect, no write to
        an input tensor), or it is a graph break: eager makes those effects
        only on a miss, and a call with an object the cache already holds
        (not a fresh input) is a hit. What remains different from eager: the
        traced call does not fill the cache, so a later call with the same
        object computes again where eager returns the cached object. Guarded
        on the cache having room (eager's miss would evict an entry)."""
        typed = self.fn.cache_parameters()["typed"]
        key = (self.fn, tuple(kwargs), tuple(
            ("object", a) if k is _NOT_CONSTANT else ("value", type(k) if typed else None, k)
            for a, k in zip((*args, *kwargs.values()), keys)))
        for earlier, result in tx.output.traced_cache_calls:
            if _same_key(earlier, key):
                return result
        effects, writes = tx.output.side_effects.version, tx.output.written_inputs()
        result = self.inner.call_function(tx, list(args), dict(kwargs))
        if tx.output.side_effects.version != effects or writes is None or tx.output.written_inputs() != writes:
            unimplemented(
                gb_type="lru_cache call",
                context=f"{self.fn.__qualname__} changes objects that existed before the call",
                explanation="Traced, the wrapped function's effects would happen on every call; eager makes them "
                "only on a cache miss, and a call with an object the cache already holds is a hit.",
                hints=("Keep cached functions free of side effects on their arguments and on globals.",),
            )
        tx.output.guards.add(GlobalStateMatch(None, _has_room(self.fn), True, f"room in cache of {self.fn.__qualname__}"))
        tx.output.traced_cache_calls.append((key, result))
        return result


class CacheHitReplay:
    """An lru_cache call that a trace made (eager's first call, a miss), made
    again by every later run of the compiled code, after its graph: a cache
    hit, as each later eager call is, so ``cache_info()`` counts as in eager.
    The run right after the trace skips it (the trace's call was that run's)."""

    __slots__ = ("wrapper", "traced")

    def __init__(self, wrapper: Any):
        self.wrapper = wrapper
        self.traced = True

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if self.traced:
            self.traced = False
            return
        self.wrapper(*args, **kwargs)


def _cache_key(tx: Tx, arg: VT) -> Any:
    """The real value ``arg`` is for an lru_cache key, or _NOT_CONSTANT: a
    constant, or an object read from a source that the cache hashes by
    identity (guarded to stay that object)."""
    if arg.is_python_constant():
        return arg.as_python_constant()
    if arg.specializable:
        return arg.as_python_constant()  # specialised (a guard), as the cache needs the value
    value = None if isinstance(arg, UserMethodVariable) else getattr(arg, "value", None)  # (its value: the function)
    if arg.source is None or value is None or type(value).__hash__ is not object.__hash__:
        return _NOT_CONSTANT
    tx.output.guards.add(IdMatch.of(arg.source, value))
    return value


def _hashed_by_identity(arg: VT) -> bool:
    """Whether the cache hashes ``arg``'s object by identity (a tensor, a plain
    object); an unhashable one raises eager's TypeError in the trace."""
    cls = arg.python_type()
    if cls.__hash__ is None:
        raise_traced(TypeError, f"unhashable type: '{cls.__name__}'")
    return cls.__hash__ is object.__hash__ or cls.__hash__ is torch.Tensor.__hash__


def _same_key(a: tuple, b: tuple) -> bool:
    """Whether two traced calls have the same cache key: the same wrapper and
    keyword names, the same objects (identity) and equal constants."""
    return a[0] is b[0] and a[1] == b[1] and len(a[2]) == len(b[2]) and all(
        x[0] == y[0] and (x[1] is y[1] if x[0] == "object" else x[1:] == y[1:]) for x, y in zip(a[2], b[2]))


def _has_room(wrapper: Any) -> Callable[[], bool]:
    """A guard getter: ``wrapper``'s lru cache can take one more entry without evicting one."""
    def room() -> bool:
        info = wrapper.cache_info()
        return info.maxsize is None or info.currsize + 1 < info.maxsize

    return room


def _cache_holds(wrapper: Any, size: int) -> Callable[[], bool]:
    """A guard getter: ``wrapper``'s lru cache holds at least ``size`` entries
    and is not full (so no entry was evicted or cleared since)."""
    def holds() -> bool:
        info = wrapper.cache_info()
        return info.currsize >= size and (info.maxsize is None or info.currsize < info.maxsize)

    return holds
