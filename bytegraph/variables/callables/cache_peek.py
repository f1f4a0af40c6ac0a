"""Reading a ``functools.lru_cache`` wrapper's entry for a call without making
the call: a real call at trace time would change the cache's statistics (and,
on a miss, fill it), which a frame that then runs natively would do a second
time.

CPython's C wrapper keeps its entries in a dict it reports to the garbage
collector (``gc.get_referents``) just before the wrapped function and its
keyword marker; a bounded cache reports each entry's key and result first, in
that order, one entry after another. :func:`peek` relies on that layout only
after checking it, and says :data:`UNKNOWN` when it does not find it (the
call is then a graph break). Keys are built as the C wrapper builds them."""
from __future__ import annotations

import gc
from typing import Any, Callable

#: what :func:`peek` answers when the wrapper's layout is not the one it knows
UNKNOWN = object()

#: what :func:`peek` answers when the cache holds no entry for the call (a miss)
MISSING = object()


def peek(wrapper: Any, args: tuple, kwargs: dict) -> Any:
    """The result ``wrapper(*args, **kwargs)`` would return from its cache,
    :data:`MISSING` if the call would miss, :data:`UNKNOWN` if the cache
    cannot be read; the cache is left as it was."""
    layout = _layout(wrapper)
    if layout is None:
        return UNKNOWN
    cache, kwd_mark, entries = layout
    key = _make_key(args, kwargs, wrapper.cache_parameters()["typed"], kwd_mark)
    try:
        present = key in cache
    except TypeError:
        return UNKNOWN  # (an unhashable argument: the call raises eager's TypeError itself)
    if not present:
        return MISSING
    if entries is None:
        return cache[key]
    for stored, result in entries:
        if stored is key or stored == key:
            return result
    return UNKNOWN


def lacks(wrapper: Any, args: tuple, kwargs: dict) -> Callable[[], bool]:
    """A guard getter: the cache holds no entry for the call (constant time;
    the wrapper's layout must be one :func:`peek` reads)."""
    cache, kwd_mark, _ = _layout(wrapper)
    key = _make_key(args, kwargs, wrapper.cache_parameters()["typed"], kwd_mark)
    return lambda: key not in cache


def holds(wrapper: Any, args: tuple, kwargs: dict, result: Any) -> Callable[[], bool]:
    """A guard getter: the cache still holds ``result`` for the call, as
    :func:`peek` found it (not evicted, or cleared and filled again), checked
    in constant time while the cache has had no miss since the last check."""
    cache, kwd_mark, entries = _layout(wrapper)
    key = _make_key(args, kwargs, wrapper.cache_parameters()["typed"], kwd_mark)
    slot = cache.get(key)  # (the result itself in an unbounded cache, else the entry's link)
    misses = [wrapper.cache_info().misses]

    def check() -> bool:
        if cache.get(key) is not slot:
            return False
        if entries is None or wrapper.cache_info().misses == misses[0]:
            return True  # (no entry was evicted: a link is reused for another key only on a miss)
        misses[0] = wrapper.cache_info().misses
        return peek(wrapper, args, kwargs) is result

    return check


def _layout(wrapper: Any) -> tuple[dict, Any, list | None] | None:
    """``(cache dict, keyword marker, [(key, result)...] or None for an
    unbounded cache)`` read from the wrapper's referents, or None."""
    refs = gc.get_referents(wrapper)
    func = getattr(wrapper, "__wrapped__", None)
    at = [i for i, r in enumerate(refs) if r is func]
    if not at or at[-1] < 2 or at[-1] + 1 >= len(refs):
        return None
    i = at[-1]
    cache, kwd_mark = refs[i - 1], refs[i + 1]
    if type(cache) is not dict or type(kwd_mark) is not object:
        return None
    if wrapper.cache_parameters()["maxsize"] is None:
        return (cache, kwd_mark, None) if i == 2 else None
    links = refs[1:i - 1]  # (key, result, link type) per entry
    if len(links) != 3 * len(cache) or any(type(t) is not type for t in links[2::3]):
        return None
    return cache, kwd_mark, list(zip(links[0::3], links[1::3]))


def _make_key(args: tuple, kwargs: dict, typed: bool, kwd_mark: Any) -> Any:
    """The key the C wrapper stores a call's result under."""
    if not typed and not kwargs:
        if len(args) == 1 and type(args[0]) in (int, str):
            return args[0]
        return tuple(args)
    key = list(args)
    if kwargs:
        key.append(kwd_mark)
        for name, value in kwargs.items():
            key += [name, value]
    if typed:
        key += [type(a) for a in args] + [type(v) for v in kwargs.values()]
    return tuple(key)
