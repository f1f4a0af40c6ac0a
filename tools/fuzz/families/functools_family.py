"""``functools``: ``lru_cache``/``cache`` helpers (their ``cache_info`` is
compared), partials (of user functions, of torch functions, of partials, made
in the frame), ``wraps`` decorators, ``reduce``, ``cached_property``,
``partialmethod`` and ``singledispatch``.

``program(x, k)``: a (3, 4) tensor and an int that changes between calls.
"""
from __future__ import annotations

import random

from tools.fuzz.program import Part, function_program, statements

PRELUDE = '''\
import io

OUT = io.StringIO()


@functools.lru_cache(maxsize=8)
def scale_for(n):
    return n * 0.5 + 1


@functools.cache
def table(k):
    return tuple(range(k))


def mul(u, k=2.0):
    return u * k


double = functools.partial(mul, k=2.0)
add2 = functools.partial(functools.partial(torch.add, alpha=2))


def deco(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs) + 1
    return wrapper


@deco
def plus(u):
    return u * 3


class Holder:
    def __init__(self, u):
        self.u = u

    @functools.cached_property
    def heavy(self):
        return self.u.sum() * 2

    def scaled(self, k):
        return self.u * k

    triple = functools.partialmethod(scaled, 3)


@functools.singledispatch
def describe(value):
    return 0


@describe.register
def _(value: int):
    return value + 1
'''

STATEMENTS = [
    "t = t * scale_for(x.shape[0])",
    "t = t + scale_for(3) + scale_for(3)",
    "t = t * scale_for(k)",
    "t = t * len(table(3)) + len(table(k))",
    "t = double(t)",
    "t = functools.partial(mul, k=t.shape[1])(t)",
    "t = add2(t, t)",
    "t = plus(t)",
    "h = Holder(t)\nt = t + h.heavy + h.heavy",
    "t = Holder(t).triple()",
    "t = functools.reduce(lambda a, b: a + b, [t, t, t])",
    "t = functools.reduce(torch.add, [t, t], t)",
    "t = t + describe(k) + describe('s')",
    "p = functools.partial(torch.clamp, min=-0.5)\nt = p(t, max=0.5)",
    "cached = functools.lru_cache(maxsize=None)(lambda n: n + 1)\nt = t * cached(k) * cached(k)",
    "print(scale_for.cache_info().hits, file=OUT)",
    "t = t * scale_for(int(t.shape[0] * 2))",
    "p = functools.partial(mul)\nt = p(t, k=k)",
    "t = t + plus.__wrapped__(t)",
    "res['name'] = plus.__name__ + double.func.__name__",
    "res['kw'] = dict(double.keywords)",
    "t = t + table(k)[-1]",
    "scale_for.cache_clear()",
]


def generate(rng: random.Random, seed: int) -> list[Part]:
    stmts = statements(rng, STATEMENTS, 2, 6)
    return function_program(
        PRELUDE, "x, k", "t = x * 1\nres = {}", stmts, result="t, res",
        inputs="(torch.randn(3, 4), 2 + call)",
        record=', "scale_for": tuple(scale_for.cache_info()), "table": tuple(table.cache_info()), '
               '"printed": OUT.getvalue()')
