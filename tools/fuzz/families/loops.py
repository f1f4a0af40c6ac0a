"""Loops with graph breaks inside, and iterators live across breaks.

``program(xs, t)`` takes a list of three (3, 4) tensors and a (3, 4) tensor;
each statement loops or iterates over them, some printing (a graph break)
in the middle of the loop or between two ``next`` calls on one iterator.
What the program printed is compared too.
"""
from __future__ import annotations

import random

from tools.fuzz.program import Part, function_program, statements

PRELUDE = '''\
import io

OUT = io.StringIO()
TABLE = {"a": 1.0, "b": -2.0, "c": 0.5}
'''

STATEMENTS = [
    "for i, u in enumerate(xs):\n    t = t + u * i\n    print(i, file=OUT)",
    "it = iter(xs)\nfirst = next(it)\nprint('mid', file=OUT)\nt = t + first + next(it)",
    "for u in xs:\n    if u.sum() > 0:\n        break\n    t = t - u",
    "i = 0\nwhile i < len(xs):\n    t = t + xs[i]\n    if i == 1:\n        print(t.shape, file=OUT)\n    i += 1",
    "for a, b in zip(xs, xs[1:]):\n    t = t + a * b",
    "gen = (u * 2 for u in xs)\nt = t + next(gen)\nprint('gen', file=OUT)\nt = t + sum(gen)",
    "for k, v in TABLE.items():\n    t = t * v\n    print(k, file=OUT)",
    "for u in reversed(xs):\n    if u.shape[0] == 3:\n        t = t * 0.5 + u\n        continue\n    t = t - 100",
    "for i in range(3):\n    t = t + i\n    if i == 1:\n        print(round(t.sum().item(), 2), file=OUT)",
    "it = map(torch.sin, xs)\nt = t + next(it)\nprint('map', file=OUT)\nt = t + next(it)",
    "for row in t:\n    t = t + row.sum() * 0.01",
    "en = enumerate(xs)\n_, a = next(en)\nprint('enum', file=OUT)\n_, b = next(en)\nt = t + a - b",
    "rest = list(xs)\nwhile rest:\n    t = t + rest.pop()\n    print(len(rest), file=OUT)",
    "for u in itertools.chain(xs, [t]):\n    t = t + u * 0.5",
    "for i, u in enumerate(xs):\n    try:\n        t = t + u[i + 1]\n    except IndexError:\n        t = t - 1",
    "it = iter(xs)\nfor u in it:\n    t = t + u\n    print('first', file=OUT)\n    break\nt = t + next(it)",
    "xs.append(t * 2)",
    "t = t + len(xs)",
    "zi = zip(range(5), xs)\nn, u = next(zi)\nprint(n, file=OUT)\nt = t + u * sum(1 for _ in zi)",
    "for i, u in enumerate(xs):\n    if i == 1:\n        print(i, file=OUT)\n        break\n    t = t + u\nelse:\n    t = t * 0",
    "acc = [u.sum() for u in xs if u.mean() > 0]\nt = t + len(acc)",
    "total = t\nfor u in xs:\n    for v in xs:\n        total = total + u * v\n        if v is xs[0]:\n            print('inner', file=OUT)\nt = total * 0.1",
]


def generate(rng: random.Random, seed: int) -> list[Part]:
    stmts = statements(rng, STATEMENTS, 2, 6)
    return function_program(
        PRELUDE, "xs, t", "", stmts,
        inputs="([torch.randn(3, 4) for _ in range(3)], torch.randn(3, 4))",
        record=', "printed": OUT.getvalue()')
