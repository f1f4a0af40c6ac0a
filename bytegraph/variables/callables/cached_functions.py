"""``functools.lru_cache`` wrappers around Python functions: what calling one does.

A call whose arguments are all constants reads the cache without calling it
(:meth:`WrappedFunctionVariable._call_constant`); a call with tensors or
other objects the cache hashes by identity traces the wrapped function
(:meth:`WrappedFunctionVariable.trace_miss`). Anything else is a graph break,
so the call runs natively through the real cache.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Sequence

import torch

from bytegraph.breaks import Unsupported, unimplemented
from bytegraph.guards.guards import GlobalStateMatch, IdMatch
from bytegraph.guards.source import AttrSource, ConstSource
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.callables.cache_peek import MISSING, UNKNOWN, holds, lacks, peek
from bytegraph.variables.callables.functions import UserMethodVariable
from bytegraph.variables.constant import (
    ConstantVariable,
    getattr_or_raise,
    is_constant_value,
    raise_traced,
    raise_traced_from,
)
from bytegraph.variables.exceptions import TracedException
from bytegraph.variables.tx import wrap, wrap_const

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

_NOT_CONSTANT = object()


class WrappedFunctionVariable(ConstantCallableVariable):
    """A ``functools.lru_cache`` wrapper around a Python function.

    A call with constant (hashable) arguments is not made by the trace (see
    :meth:`_call_constant`): its result is read from the cache (a hit) or
    traced (a miss), and the compiled code makes the real call, so the
    cache's statistics and entries are eager's whether the graph is used or
    the frame runs natively. Symbolic ints are specialised for this.

    A call with tensors (or other objects hashed by identity) among its
    arguments is traced as the miss it is on fresh inputs (see
    :meth:`trace_miss`)."""

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
        if len(constants) == len(keys):
            made = self._call_constant(tx, args, kwargs, keys[:len(args)], dict(zip(kwargs, keys[len(args):])))
            if made is not None:
                return made
            self._miss_runs_natively(tuple(keys[:len(args)]), dict(zip(kwargs, keys[len(args):])))
        room = _has_room(self.fn)()
        if room and all(_hashed_by_identity(a) for a, k in zip((*args, *kwargs.values()), keys) if k is _NOT_CONSTANT):
            return self.trace_miss(tx, args, kwargs, keys)
        unimplemented(
            gb_type="lru_cache call",
            context=f"{self.fn.__qualname__} called with arguments known only when the graph runs"
            if room else f"{self.fn.__qualname__}, whose cache is full",
            explanation="The call runs natively through the real cache, so the wrapped function runs (and its side "
            "effects happen) only on a cache miss, as in eager.",
            hints=("Pass constants, tensors or plain objects to cached functions.",),
        )

    def _miss_runs_natively(self, values: tuple, keywords: dict) -> NoReturn:
        """The graph break of a call with constant arguments :meth:`_call_constant`
        does not trace: it runs natively through the real cache. Unless the
        cache cannot be read, the entry that breaks here is guarded on the
        call still missing, so that once the native call filled the cache a
        later call converts the frame again, with the hit traced."""
        found = peek(self.fn, values, keywords)
        try:
            unimplemented(
                gb_type="lru_cache call",
                context=f"{self.fn.__qualname__}{values}: " + (
                    "a cache bytegraph cannot read" if found is UNKNOWN else
                    "a miss whose wrapped function has effects, follows a change of an object or returns "
                    "something other than a constant"),
                explanation="The call runs natively through the real cache, so the wrapped function runs (and its "
                "side effects happen) only on a cache miss, as in eager.",
                hints=("Pass constants, tensors or plain objects to cached functions.",),
            )
        except Unsupported as brk:
            if found is MISSING:
                brk.guards = (GlobalStateMatch(None, lacks(self.fn, values, keywords), True,
                                               f"miss in the cache of {self.fn.__qualname__}"),)
            raise

    def _call_constant(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT], values: list,
                       keywords: dict) -> VT | None:
        """The call with constant arguments, or None (a graph break). The trace
        makes no real call: a frame that then runs natively (or past a graph
        break) makes it, and only once. The cache is read (:func:`peek`): a hit
        is the cached object, guarded by the cache still holding it; a miss
        traces the wrapped function, which must change nothing and return a
        constant. Either way the compiled code makes the real call, before
        the frame's other side effects (a hit counted, or a miss that fills
        the cache as eager's does: the wrapped function run then sees what
        the trace saw, as nothing was changed before the call)."""
        found = peek(self.fn, tuple(values), keywords)
        if found is UNKNOWN:
            return None
        if found is MISSING:
            if tx.output.side_effects.changed_objects():
                return None
            result = self._trace_pure(tx, args, kwargs)
            if result is None:
                return None
        else:
            tx.output.guards.add(GlobalStateMatch(None, holds(self.fn, tuple(values), keywords, found), True,
                                                  f"entry of the cache of {self.fn.__qualname__}"))
            result = ConstantVariable(found) if is_constant_value(found) else \
                wrap(tx, found, ConstSource(found, f"{self.fn.__qualname__}(...)"))
        tx.output.side_effects.record_call(self.fn, tuple(values), keywords, first=True)
        return result

    def _trace_pure(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
        """The wrapped function traced on constant arguments (eager's miss),
        or None when it changes an object, adds an operation to the graph or
        returns something other than a constant (its real run when the graph
        runs would then differ from the trace's). Calls it records to be made
        after the graph (a warning, a log line) are dropped: its real run
        makes them."""
        effects, operations = tx.output.side_effects, tx.output.operations
        made = effects.calls_made()
        try:
            result = self.inner.call_function(tx, list(args), dict(kwargs))
        except TracedException:
            return None  # (eager's miss raises too, counted a miss: the real call makes it)
        if effects.changed_objects() or tx.output.operations != operations or not result.is_python_constant() \
                or not is_constant_value(result.as_python_constant()):
            return None  # (a list or a dict is one object eager's later calls return again)
        effects.drop_calls(made)
        return result

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

