"""``try``/``except`` around graph operations: operations that raise on
shapes or data, exceptions raised and caught in the frame or an inlined
callee, ``else``/``finally``, mutations before the raise, a break inside the
``try``, and exceptions that escape to the caller (compared by type).

``program(x, y, idx, log)``: two (3, 4) tensors, an index tensor (out of
range on some calls) and a list the program appends to.
"""
from __future__ import annotations

import contextlib  # noqa: F401  (programs use it through the prelude)
import random

from tools.fuzz.program import Part, function_program, statements

PRELUDE = '''\
import contextlib
import io

OUT = io.StringIO()


def checked(u):
    assert u.sum() > 100, "small"
    return u


def inner(u):
    if u.shape[0] == 3:
        raise KeyError("k")
    return u
'''

STATEMENTS = [
    "try:\n    t = t @ y\nexcept RuntimeError:\n    t = t + y",
    "try:\n    u = t @ y.t()\nexcept RuntimeError as e:\n    log.append(type(e).__name__)\nelse:\n    t = u @ t\n"
    "finally:\n    log.append('finally')",
    "try:\n    t = t.view(5, 5)\nexcept RuntimeError:\n    t = t.reshape(4, 3).reshape(3, 4)",
    "with contextlib.suppress(IndexError):\n    t = t + t[5]",
    "try:\n    raise ValueError(t.shape[0])\nexcept ValueError as e:\n    t = t * e.args[0]",
    "try:\n    t = checked(t)\nexcept AssertionError:\n    t = t - 1",
    "try:\n    t = inner(t)\nexcept LookupError:\n    t = t * 2",
    "try:\n    x.add_(1)\n    t = t + x[:, 10]\nexcept IndexError:\n    t = t + x",
    "try:\n    try:\n        t = torch.cat([t, y.t()])\n    except RuntimeError:\n        raise TypeError('wrapped')\n"
    "except TypeError:\n    t = t + y",
    "try:\n    t = t.index_select(0, idx)\nexcept IndexError:\n    log.append('index')",
    "t = t + t.index_select(0, idx).sum()",
    "try:\n    t = t * int(t)\nexcept (RuntimeError, ValueError):\n    t = t + 1",
    "try:\n    print(t.shape, file=OUT)\n    t = t + t[7]\nexcept IndexError:\n    t = t + 2",
    "for i in range(3):\n    try:\n        t = t + t[i * 2]\n    except IndexError:\n        log.append(i)\n        continue",
    "try:\n    s = float(y.sum())\nexcept Exception:\n    s = 0.0\nt = t + s",
    "e = None\ntry:\n    t.t().view(12)\nexcept RuntimeError as err:\n    e = err\nt = t + (e is not None)",
    "if t.sum() > 1000:\n    raise RuntimeError('big')",
    "try:\n    t = t + y\n    raise StopIteration\nexcept StopIteration:\n    t = t * 0.5",
    "try:\n    log.append(len(log))\n    t = t + torch.ones(2, 2)\nexcept RuntimeError:\n    log.pop()",
    "try:\n    t = t.sum(dim=3)\nexcept IndexError as e:\n    log.append(type(e).__name__)",
    "try:\n    t = torch.ones(3, 4, dtype=torch.long) + t\nfinally:\n    log.append('done')",
    "try:\n    with torch.no_grad():\n        t = t * 2\n        raise ZeroDivisionError\nexcept ZeroDivisionError:\n    t = t + y",
    "try:\n    t = t / 0\nexcept ZeroDivisionError:\n    t = t - 1",
    "try:\n    t = t + (1 // int(idx.sum() * 0))\nexcept ZeroDivisionError:\n    log.append('zero')",
]


def generate(rng: random.Random, seed: int) -> list[Part]:
    stmts = statements(rng, STATEMENTS, 2, 5)
    return function_program(
        PRELUDE, "x, y, idx, log", "t = x * 1", stmts,
        inputs="(torch.randn(3, 4), torch.randn(3, 4, requires_grad=call == 1), "
               "torch.tensor([(call * 2 + 1) % 4]), [])",
        record=', "printed": OUT.getvalue()')
