"""Changing shapes: one program called on inputs whose first size changes
every call (automatic dynamic), compiled ``dynamic=True`` or ``False``, or
with ``mark_dynamic`` / ``maybe_mark_dynamic`` (with or without a range) on
each input; statements read sizes (branches, arithmetic, new tensors) and an
int argument that also changes.

``program(x, n)``: a (B, 4) tensor and an int; B runs through a drawn list
of sizes (sometimes 1, which torch specialises).
"""
from __future__ import annotations

import random

from tools.fuzz.program import Block, Part, statements

PRELUDE = '''\
import io

import bytegraph

OUT = io.StringIO()
'''

STATEMENTS = [
    "t = t + torch.arange(t.shape[0]).unsqueeze(1)",
    "t = t * (t.shape[0] // 2 + 1)",
    "t = t.reshape(-1).reshape(t.shape[0], 4)",
    "if t.shape[0] > 4:\n    t = t * 2\nelse:\n    t = t - 1",
    "t = torch.cat([t, t], 0)[:t.shape[0]]",
    "t = t + t.numel() / 100",
    "t = t * n",
    "t = torch.zeros(t.shape[0], n).sum(1, keepdim=True) + t",
    "t = t.new_ones(t.shape) * t.size(0)",
    "t = t.unflatten(0, (1, t.shape[0])).squeeze(0)",
    "t = t.softmax(0) * t.shape[0]",
    "t = torch.nn.functional.pad(t, (0, 0, 0, 1))[:-1]",
    "t = t.expand(2, *t.shape).sum(0)",
    "t = t.T.contiguous().T",
    "sizes.append(t.shape[0])",
    "t = t + torch.full((t.shape[0], 1), float(n))",
    "t = t * len(t)",
    "t = t.chunk(2, 1)[0].repeat(1, 2)",
    "print(t.shape, file=OUT)",
    "t = torch.split(t, 2)[0].sum() + t",
    "t = t.view(t.shape[0], 2, 2).flatten(1)",
    "t = t[t.shape[0] // 2:].sum(0) + t",
    "t = t + (t.shape[0] % 2)",
    "t = t.mean(0, keepdim=True).expand(t.shape[0], -1) + t",
    "if t.shape[0] * n > 10:\n    t = t.flip(0)",
    "t = t.repeat(n, 1)[: t.shape[0]]",
    "t = torch.stack(list(t.unbind(0)))",
    "t = t @ torch.ones(4, 4) / t.shape[0]",
]

#: how ``main`` compiles and marks (``{mark}`` is applied to each input)
MODES = [
    ("", ""), (", dynamic=True", ""), (", dynamic=False", ""),
    ("", "bytegraph.mark_dynamic(x, 0)"), ("", "bytegraph.maybe_mark_dynamic(x, 0)"),
    ("", "bytegraph.mark_dynamic(x, 0, min=1, max=8)"), ("", "bytegraph.mark_static(x, 0)"),
]

DRIVER = '''

def main(compile):
    fn = compile(program{options})
    out, args = [], []
    for size, n in zip(SIZES, NS):
        x = torch.randn(size, 4)
        {mark}
        args.append(x)
        out.append(attempt(fn, x, n))
    return {{"out": out, "args": args, "sizes": sizes, "printed": OUT.getvalue()}}
'''


def generate(rng: random.Random, seed: int) -> list[Part]:
    stmts = statements(rng, STATEMENTS, 2, 6)
    sizes = [rng.choice([2, 3, 4, 5, 6, 7, 8, 1]) for _ in range(rng.randint(3, 6))]
    ns = [rng.choice([2, 3, 4]) for _ in sizes]
    options, mark = rng.choice(MODES)
    head = (f"{PRELUDE}SIZES = {sizes}\nNS = {ns}\nsizes = []\n\n\n"
            "def program(x, n):\n    t = x * 1\n")
    return [head, Block(4, stmts + [["return t"]], keep=1), DRIVER.format(options=options, mark=mark or "pass")]
