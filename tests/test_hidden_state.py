"""Objects whose state only their C implementation sees, advanced by calls
that bytegraph folds at trace time or replays: after any number of compiled
calls their state is eager's (``lru_cache`` statistics, counters, random
generators, iterator positions)."""
import functools
import io
import itertools
import random

import numpy as np
import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same
from tests.helpers import break_types

SINK = io.StringIO()


def _scale(k):
    return k * 2


def _lru(maxsize=128):
    return functools.lru_cache(maxsize=maxsize)(_scale)


class _Holder:
    @functools.lru_cache  # noqa: B019 (the cache of a method, keyed by the instance)
    def k(self, n):
        return n + 1


def _once():
    scale = _lru()
    return (lambda x: x * scale(3)), lambda: tuple(scale.cache_info())


def _cache():
    scale = functools.cache(_scale)
    return (lambda x: x * scale(3)), lambda: tuple(scale.cache_info())


def _twice():
    scale = _lru()
    return (lambda x: x * scale(3) + scale(3)), lambda: tuple(scale.cache_info())


def _loop():
    scale = _lru()

    def f(x):
        for i in range(3):
            x = x * scale(i % 2 + 1)
        return x

    return f, lambda: tuple(scale.cache_info())


def _method():
    _Holder.k.cache_clear()
    holder = _Holder()
    return (lambda x: x * holder.k(2)), lambda: tuple(_Holder.k.cache_info())


def _full():  # the second call finds the cache full: its real call evicts the first's entry, as eager's
    scale = _lru(maxsize=2)
    return (lambda x: x * scale(3) + scale(4)), lambda: tuple(scale.cache_info())


def _info_read():
    scale = _lru()
    return (lambda x: x * scale(3) + scale.cache_info().hits), lambda: tuple(scale.cache_info())


def _cleared():
    scale = _lru()

    def f(x):
        y = x * scale(3)
        scale.cache_clear()
        return y

    return f, lambda: tuple(scale.cache_info())


def _across_break():
    scale = _lru()

    def f(x):
        y = x * scale(3)
        print(file=SINK)
        return y * scale(3) + scale(5)

    return f, lambda: tuple(scale.cache_info())


def _frame_runs_natively():  # an escaping closure after the call: no graph, the frame runs natively
    scale = _lru()

    def f(x):
        y = x * scale(3)
        inner = functools.lru_cache(maxsize=None)(lambda n: n + 1)
        return y * inner(2)

    return f, lambda: tuple(scale.cache_info())


def _breaks_in_a_callee():  # the callee breaks after the call: it compiles again as a frame of its own
    scale = _lru()

    def callee(x):
        y = x * scale(3)
        print(file=SINK)
        return y

    return (lambda x: callee(x) + 1), lambda: tuple(scale.cache_info())


def _bounded_hits():  # hits read from a bounded cache, whose entries a later call evicts
    scale = _lru(maxsize=2)
    scale(3)
    scale(4)

    def f(x):
        return x * scale(3) + scale(4) + scale(5)

    return f, lambda: tuple(scale.cache_info())


def _typed_keywords():
    @functools.lru_cache(maxsize=None, typed=True)
    def scale(k, *, by=2):
        return k * by

    scale(3, by=2)
    return (lambda x: x * scale(3, by=2) + scale(3.0, by=2) + scale(3)), lambda: tuple(scale.cache_info())


def _miss_raises():
    @functools.cache
    def inverse(k):
        return 1 / k

    def f(x):
        try:
            return x * inverse(0)
        except ZeroDivisionError:
            return x * inverse(2)

    return f, lambda: tuple(inverse.cache_info())


def _miss_after_a_mutation():  # a miss after the frame changed a list: it runs natively
    log = []
    scale = functools.cache(lambda k: len(log) + k)

    def f(x):
        log.append(1)
        return x * scale(3)

    return f, lambda: (tuple(scale.cache_info()), log)


def _tensor_factory():  # a miss returning a tensor runs natively; the next call converts again with the hit
    ramp = functools.lru_cache(maxsize=4)(lambda k: torch.arange(k, dtype=torch.float32))
    return (lambda x: x * ramp(2)), lambda: tuple(ramp.cache_info())


def _count():
    counter = itertools.count()
    return (lambda x: x + next(counter)), lambda: repr(counter)


def _cycle():
    cycle = itertools.cycle([1, 2, 5])
    return (lambda x: x + next(cycle)), lambda: [next(cycle) for _ in range(3)]


def _random():
    rng = random.Random(0)
    return (lambda x: x * rng.random()), lambda: rng.getstate()


def _numpy_generator():
    rng = np.random.default_rng(0)
    return (lambda x: x * float(rng.random())), lambda: rng.bit_generator.state["state"]["state"]


def _list_iterator():
    it = iter([1, 2, 3, 4, 5, 6])
    return (lambda x: x + next(it)), lambda: list(it)


def _generator():
    it = iter(range(10))
    gen = (i * 2 for i in it)
    return (lambda x: x + next(gen)), lambda: list(gen)


#: name -> (make, graphs compiled, graph breaks met) over the three calls; the trace makes no call, the
#: compiled code makes the real one, so a cache that is full or cleared needs no recompile; one read in the
#: frame recompiles on a later call (its guard sees the cache change)
CASES = {
    "lru_cache": (_once, 1, []), "functools.cache": (_cache, 1, []), "twice in a frame": (_twice, 1, []),
    "in a loop": (_loop, 1, []), "method": (_method, 1, []),
    "full cache": (_full, 1, []),
    "cache_info read in the frame": (_info_read, 3, ["unsupported method call"]),
    "cache_clear in the frame": (_cleared, 1, ["unsupported method call"]),
    "across a graph break": (_across_break, 2, ["print"]),
    "frame runs natively": (_frame_runs_natively, 0, ["escaping closure"]),
    "callee breaks after the call": (_breaks_in_a_callee, 2, ["print", "print"]),
    # (each call's misses evict entries the previous graph read as hits: the next call recompiles)
    "bounded cache hits and eviction": (_bounded_hits, 3, []), "typed, keywords": (_typed_keywords, 1, []),
    "a miss that raises": (_miss_raises, 0, ["lru_cache call"]),
    "a miss after a mutation": (_miss_after_a_mutation, 3, ["lru_cache call"]),
    "a miss returning a tensor": (_tensor_factory, 2, ["lru_cache call"]),
    "itertools.count": (_count, 2, ["unsupported builtin call"]),
    "itertools.cycle": (_cycle, 2, ["unsupported builtin call"]),
    "random.Random": (_random, 0, ["recursion limit"]),  # (the frame runs natively)
    "numpy Generator": (_numpy_generator, 2, ["unsupported descriptor", "unsupported call"]),
    "list iterator": (_list_iterator, 3, []), "generator": (_generator, 2, ["unsupported builtin call"]),
}


def _calls(fn, state):
    results = [fn(torch.ones(2)) for _ in range(3)]
    return results, state()


@pytest.mark.parametrize("case", list(CASES))
def test_hidden_state_after_compiled_calls_is_eagers(case):
    make, graphs, breaks = CASES[case]
    expected = _calls(*make())
    fn, state = make()
    cnt = CompileCounter()
    actual = _calls(bytegraph.compile(fn, backend=cnt), state)
    assert same(actual, expected)
    assert sorted(break_types()) == sorted(breaks)  # (the order two frames record theirs in may vary)
    assert cnt.frame_count == graphs
