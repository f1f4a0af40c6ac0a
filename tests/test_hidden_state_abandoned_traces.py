"""A call with hidden state that tracing meets (an lru_cache call, an iterator
step, a draw from a random generator, ``itertools.count``) must leave that
state as eager leaves it when the trace is then given up: the frame runs
natively as a whole (an escaping closure after it), a callee breaks after it
and compiles again as a frame of its own, or an inlined helper breaks after
it and the root frame breaks at its call. A call the trace made for real would
be made a second time by the code that then runs natively (the fuzzer found
that for lru_cache: eager's 0 hits were 1)."""
import functools
import io
import itertools
import random

import numpy as np
import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same
from bytegraph.variables.callables.cache_peek import MISSING, UNKNOWN, holds, lacks, peek
from tests.helpers import break_types

SINK = io.StringIO()


def _runs_natively(step):  # an escaping closure after the step: no graph, the frame runs natively
    def f(x):
        y = x + step()
        inner = functools.lru_cache(maxsize=None)(lambda n: n + 1)
        return y * inner(2)

    return f


def _callee_breaks(step):
    def callee(x):
        y = x + step()
        print(file=SINK)
        return y

    return lambda x: callee(x) + 1


def _helper_breaks(step):
    def helper():
        v = step()
        print(file=SINK)
        return v

    return lambda x: x + helper()


def _lru():
    scale = functools.lru_cache(maxsize=8)(lambda k: k * 2)
    return (lambda: scale(3)), lambda: tuple(scale.cache_info())


def _unbounded_lru():
    scale = functools.cache(lambda k: (k, k + 1))
    return (lambda: scale(3)[1]), lambda: tuple(scale.cache_info())


def _list_iterator():
    it = iter([1, 2, 3, 4, 5, 6, 7, 8, 9])
    return (lambda: next(it)), lambda: list(it)


def _count():
    counter = itertools.count()
    return (lambda: next(counter)), lambda: repr(counter)


def _random():
    rng = random.Random(0)
    return (lambda: rng.random()), lambda: rng.getstate()


def _numpy_generator():
    rng = np.random.default_rng(0)
    return (lambda: float(rng.random())), lambda: rng.bit_generator.state["state"]["state"]


def _generator():
    gen = (i * 2 for i in range(20))
    return (lambda: next(gen)), lambda: list(gen)


def _torch_generator():
    g = torch.Generator().manual_seed(0)
    return (lambda: torch.rand((), generator=g).item()), lambda: g.get_state()


STEPS = {"lru_cache": _lru, "functools.cache": _unbounded_lru, "list iterator": _list_iterator,
         "itertools.count": _count, "random.Random": _random, "numpy Generator": _numpy_generator,
         "generator": _generator, "torch Generator": _torch_generator}
SHAPES = {"frame runs natively": _runs_natively, "callee breaks": _callee_breaks, "helper breaks": _helper_breaks}

_BUILTIN = "unsupported builtin call"
_NUMPY = ["unsupported descriptor", "unsupported call"]
_GENERATOR = "unsupported graph argument"
#: (step, shape) -> (graphs compiled, graph breaks met) over three calls
COUNTS = {
    ("lru_cache", "frame runs natively"): (0, ["escaping closure"]),
    ("lru_cache", "callee breaks"): (2, ["print", "print"]),
    ("lru_cache", "helper breaks"): (1, ["print", "print"]),
    ("functools.cache", "frame runs natively"): (0, ["escaping closure"]),
    ("functools.cache", "callee breaks"): (2, ["print", "print"]),
    ("functools.cache", "helper breaks"): (1, ["print", "print"]),
    ("list iterator", "frame runs natively"): (0, ["escaping closure"]),
    ("list iterator", "callee breaks"): (4, ["print"] * 4),
    ("list iterator", "helper breaks"): (3, ["print"] * 4),
    ("itertools.count", "frame runs natively"): (1, [_BUILTIN] * 2 + ["escaping closure"]),
    ("itertools.count", "callee breaks"): (4, [_BUILTIN] * 3 + ["print"] * 2),
    ("itertools.count", "helper breaks"): (4, [_BUILTIN] * 3),
    ("random.Random", "frame runs natively"): (0, ["recursion limit"]),
    ("random.Random", "callee breaks"): (0, ["recursion limit"]),
    ("random.Random", "helper breaks"): (0, ["recursion limit"]),
    ("numpy Generator", "frame runs natively"): (1, _NUMPY[:1] + _NUMPY + ["escaping closure"]),
    ("numpy Generator", "callee breaks"): (4, _NUMPY[:1] * 2 + _NUMPY + ["print"] * 2),
    ("numpy Generator", "helper breaks"): (4, _NUMPY[:1] * 2 + _NUMPY),
    ("generator", "frame runs natively"): (1, [_BUILTIN] * 2 + ["escaping closure"]),
    ("generator", "callee breaks"): (4, [_BUILTIN] * 3 + ["print"] * 2),
    ("generator", "helper breaks"): (4, [_BUILTIN] * 3),
    ("torch Generator", "frame runs natively"): (1, [_GENERATOR] * 2 + ["escaping closure"]),
    ("torch Generator", "callee breaks"): (4, [_GENERATOR] * 3 + ["print"] * 2),
    ("torch Generator", "helper breaks"): (4, [_GENERATOR] * 3),
}


def _run(make_step, shape, compile):
    step, state = make_step()
    fn = compile(SHAPES[shape](step))
    return [fn(torch.ones(2)) for _ in range(3)], state()


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("step", list(STEPS))
def test_hidden_state_of_an_abandoned_trace_is_eagers(step, shape):
    expected = _run(STEPS[step], shape, lambda fn: fn)
    cnt = CompileCounter()
    actual = _run(STEPS[step], shape, lambda fn: bytegraph.compile(fn, backend=cnt))
    assert same(actual, expected)
    graphs, breaks = COUNTS[step, shape]
    assert sorted(break_types()) == sorted(breaks)
    assert cnt.frame_count == graphs


@pytest.mark.parametrize("options", [{"maxsize": None}, {"maxsize": 3}, {"maxsize": None, "typed": True},
                                     {"maxsize": 2, "typed": True}, {"maxsize": 0}])
def test_peek_reads_a_cache_as_a_call_would_without_changing_it(options):
    @functools.lru_cache(**options)
    def f(k, *args, **kwargs):
        return [k, args, kwargs]

    calls = [((1,), {}), (("s",), {}), ((2, 3), {}), ((4,), {"z": 5}), ((1.0,), {}), ((True,), {})]
    for args, kwargs in calls[:4]:
        f(*args, **kwargs)
    for args, kwargs in calls + calls[::-1]:
        before = f.cache_info()
        found = peek(f, args, kwargs)
        assert f.cache_info() == before and found is not UNKNOWN
        result = f(*args, **kwargs)  # (a miss fills the cache, or evicts an entry, before the next peek)
        hit = f.cache_info().hits > before.hits
        assert hit == (found is not MISSING) and (not hit or found is result)


def test_the_guard_on_a_hit_fails_once_the_entry_is_evicted_or_recomputed():
    scale = functools.lru_cache(maxsize=2)(lambda k: [k])
    scale(1)
    guard = holds(scale, (1,), {}, peek(scale, (1,), {}))
    scale(2)
    assert guard()  # (a miss on another key, nothing evicted)
    scale(3)
    assert not guard()  # (evicted)
    scale(1)
    assert not guard()  # (computed again: another object)
    missing = lacks(scale, (4,), {})
    assert missing()
    scale(4)
    assert not missing()
