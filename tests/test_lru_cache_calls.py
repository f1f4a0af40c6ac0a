"""Calls of ``functools.lru_cache``-wrapped functions with tensors (or other
objects the cache hashes by identity) among their arguments: on fresh inputs
each is a cache miss in eager, and the wrapped function is traced into the
graph. A repeat with the same objects in one frame is eager's hit (the same
result object); a wrapped function that changes objects existing before the
call is a graph break (eager makes those changes only on a miss).
Constant-argument calls are in test_hidden_state.py."""
import functools

import torch

from tests.helpers import check, check_scenario


@functools.lru_cache
def _scaled_sine(x, y, _unused=None):
    return torch.sin(x * y)


@functools.cache
def _blend(a, b, *, weight=0.5):
    return a * weight + b * (1 - weight)


class _Config:
    def __init__(self, gain):
        self.gain = gain

    @functools.lru_cache  # noqa: B019 (the cache of a method, keyed by the instance)
    def apply(self, t, offset=1.0):
        return t * self.gain + offset


_CONFIG = _Config(3.0)

_LOG = []


@functools.lru_cache
def _logged(t):
    _LOG.append(1)
    return t + 1


@functools.lru_cache
def _bumped(t):
    t.add_(1)
    return t * 2


def test_module_level_cached_function_with_tensor_and_default_arguments():
    def f(a, b):
        return _scaled_sine(a, 2, b) + _scaled_sine(b, 3)

    check(f, torch.randn(4), torch.randn(4), fullgraph=True)


def test_unbounded_cache_with_keyword_arguments():
    def f(a, b):
        return _blend(a, b, weight=0.25) - _blend(b, a)

    check(f, torch.randn(3), torch.randn(3), fullgraph=True)


def test_cached_method_of_a_global_object_with_a_tensor():
    def f(x):
        return _CONFIG.apply(x) + _CONFIG.apply(x, offset=2.0)

    check(f, torch.randn(2), fullgraph=True)


def test_cached_method_of_an_object_made_in_the_trace_changes_it_as_eager():
    class Counter:
        def __init__(self, start):
            self.total = start

        @functools.lru_cache  # noqa: B019
        def add(self, amount):
            self.total += amount
            return self.total

    def f(x):
        c = Counter(4)
        c.add(x.sum())
        c.add(3)
        return x + c.total

    check(f, torch.randn(3), fullgraph=True)


def test_a_repeat_with_the_same_tensor_is_the_first_calls_result():
    def f(x):
        first = _scaled_sine(x, 2)
        again = _scaled_sine(x, 2)
        other = _scaled_sine(x, 3)
        return first is again, first is other, first + again + other

    check(f, torch.randn(3), fullgraph=True)


def test_wraps_over_a_cached_function_keeps_its_metadata_and_traces():
    def decorate(func):
        @functools.wraps(func)
        def inner(*args, **kwargs):
            return func(*args, **kwargs)

        return inner

    def f(x):
        wrapped = decorate(decorate(_scaled_sine))
        return wrapped(x, 4), wrapped.__name__, wrapped.__qualname__, wrapped.__doc__, _scaled_sine.__name__

    check(f, torch.randn(3), fullgraph=True)


def test_an_unhashable_argument_raises_eagers_type_error():
    def f(x):
        try:
            return _scaled_sine([x], 2)
        except TypeError as e:
            return x - 1, str(e)

    check(f, torch.randn(3), fullgraph=True)


def test_a_cached_function_with_side_effects_runs_natively():
    def run(compile):
        _LOG.clear()
        _logged.cache_clear()
        _bumped.cache_clear()
        g = compile(lambda t: _logged(t) * 2)
        h = compile(lambda t: _bumped(t) + 1)
        x, y = torch.ones(2), torch.zeros(2)
        results = [g(x), g(x), g(torch.ones(2)), h(y), h(y)]  # repeats with one object: eager's hits
        return results, list(_LOG), y

    # (one graph per function: the resumed code after the native call)
    check_scenario(run, graphs=2, breaks=2, gb_types=["lru_cache call", "lru_cache call"])


def test_a_call_that_would_fill_the_cache_runs_natively():
    def run(compile):
        cached = functools.lru_cache(maxsize=2)(lambda t: t * 2)
        cached(torch.zeros(1))  # one entry: eager's next miss fills the cache, the one after evicts
        g = compile(lambda t: cached(t) + 1)
        return [g(torch.ones(2)) for _ in range(3)], cached.cache_info().currsize

    check_scenario(run, graphs=1, breaks=1, gb_types=["lru_cache call"])
