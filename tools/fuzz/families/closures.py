"""Closures: ``nonlocal`` counters and accumulators (in the program, in the
function it is made by, and in callees), cells rebound between calls, late
binding in loops, nested closures, and lambdas with default arguments.

``program(x)`` is made by ``make_program()``, so it has free variables of its
own (``scale``, ``history``, ``calls``); between the two calls ``main``
rebinds ``scale`` through a setter.
"""
from __future__ import annotations

import random

from tools.fuzz.program import Block, Part, statements

PRELUDE = '''\
import io

OUT = io.StringIO()


def make_counter():
    n = 0

    def step(u):
        nonlocal n
        n += 1
        return u * n

    def count():
        return n

    return step, count


STEP, COUNT = make_counter()


def make_program():
    scale = 2.0
    history = []
    calls = 0
    total = None

    def set_scale(value):
        nonlocal scale
        scale = value

    def state():
        return {"scale": scale, "history": history, "calls": calls, "total": total}

    def program(x):
        nonlocal calls, total
        t = x * 1
'''

STATEMENTS = [
    "t = STEP(t)",
    "calls += 1\nt = t + calls",
    "total = t.sum() if total is None else total + t.sum()",
    "t = t * scale",
    "history.append(t.sum().item())",
    "k = 2\ndef by_k(u):\n    return u * k\nk = 3\nt = by_k(t)",
    "fs = [lambda u, i=i: u + i for i in range(3)]\nt = fs[2](t)",
    "fs = [lambda u: u * i for i in range(3)]\nt = fs[0](t)",
    "def outer():\n    c = t.sum()\n    def inner(u):\n        nonlocal c\n        c = c + 1\n        return u + c\n"
    "    return inner\nt = outer()(t)",
    "acc = []\ndef keep(u):\n    acc.append(u)\n    return len(acc)\nt = t * keep(t) + keep(t * 2)",
    "print(calls, file=OUT)",
    "def bump(u):\n    nonlocal scale\n    scale = scale + 1\n    return u * scale\nt = bump(t)",
    "m = 0\ndef count_up():\n    nonlocal m\n    m += 1\n    print(m, file=OUT)\n    return m\nt = t + count_up() + count_up()",
    "history.append(calls)\nt = t + len(history)",
    "g = (lambda s: (lambda u: u * s))(scale)\nt = g(t)",
    "def ret():\n    return t.shape\nt = t * ret()[0]",
    "t = t + COUNT()",
]

DRIVER = '''
    return program, set_scale, state


def main(compile):
    program, set_scale, state = make_program()
    fn = compile(program)
    out = [attempt(fn, torch.randn(3, 4))]
    set_scale(SCALE)
    out.append(attempt(fn, torch.randn(3, 4)))
    out.append(attempt(fn, torch.randn(3, 4)))
    return {"out": out, "state": snapshot(state()), "count": COUNT(), "printed": OUT.getvalue()}
'''


def generate(rng: random.Random, seed: int) -> list[Part]:
    stmts = statements(rng, STATEMENTS, 2, 6)
    scale = rng.choice(["2.0", "3.0", "-1.5", "4"])
    return [f"SCALE = {scale}\n" + PRELUDE, Block(8, stmts + [["return t"]], keep=1), DRIVER]
