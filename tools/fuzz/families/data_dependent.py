"""Data-dependent shapes and values: boolean masks, ``nonzero``, ``unique``,
``masked_select``, sizes read with ``item()``/``int()``/``tolist()`` and used
to make tensors, branches on tensor data; with the capture settings on
(unbacked symbols in the graph) or off (graph breaks), drawn per program.

``program(x, mask, idx)``: a (4, 3) tensor, a boolean mask of its shape and
a (4,) int64 tensor; the second call's data differ, so every size does.
"""
from __future__ import annotations

import random

from tools.fuzz.program import Part, function_program, statements

STATEMENTS = [
    "v = x[x > 0]\nshapes.append(v.shape[0])",
    "v = torch.nonzero(x > 0)\nshapes.append(tuple(v.shape))",
    "v = x.masked_select(mask)",
    "v = torch.unique(idx)",
    "n = int(idx.max()) + 1\nv = torch.zeros(n)\nshapes.append(n)",
    "n = idx.sum().item()\nv = x.flatten()[:n]",
    "v = torch.arange(int(x.abs().sum().item()) % 5 + 1)",
    "v = x.repeat_interleave(idx.clamp(0, 3), dim=0)",
    "v = torch.bincount(idx.clamp(min=0))",
    "if x.sum().item() > 0:\n    v = x * 2\nelse:\n    v = x - 2",
    "v = x[idx.clamp(0, 3)]",
    "k = int((x > 0).sum())\nv = x.flatten().topk(max(k, 1)).values",
    "v = torch.tensor(x.tolist()) * 2",
    "vals = x[0].tolist()\nv = torch.tensor([a + 1 for a in vals])",
    "v = x.nonzero().float().mean(0)",
    "v = torch.where(mask)[0].float()",
    "n = len(x[mask])\nv = x * n",
    "v = x[mask].sum() if mask.any() else x.sum()",
    "v = x.new_zeros(int(mask.sum()))",
    "m = int(mask.sum())\nv = torch.split(x.flatten(), [m, 12 - m])[0]",
    "v = torch.masked_select(x, mask).cumsum(0)",
    "v = x[mask.nonzero(as_tuple=True)]",
    "print(tuple(v.shape), file=OUT)",
    "v = x[idx.argsort()[: int(idx.min().clamp(min=1))]]",
    "x[mask] = 0.5",
    "v = x.sum(1)[x.sum(1) > 0]\nshapes.append(len(v))",
    "u, counts = torch.unique(idx, return_counts=True)\nv = counts.float() * u",
    "n = int(idx[0])\nv = x[:n] if n > 1 else x[n:]",
]

PRELUDE = '''\
import io

OUT = io.StringIO()
'''


def generate(rng: random.Random, seed: int) -> list[Part]:
    stmts = [s + ["total = total + v.sum()", "values.append(v)"] if not s[0].startswith(("print", "x[mask]")) else s
             for s in statements(rng, STATEMENTS, 2, 5)]
    capture = rng.choice(["True", "False"])
    return function_program(
        PRELUDE, "x, mask, idx", "v = x\ntotal = x.sum() * 0\nshapes, values = [], []", stmts,
        result="total, shapes, values",
        inputs="(lambda x: (x, x > 0.3 * call, torch.randint(-1, 5, (4,))))(torch.randn(4, 3))",
        compile_args=f", capture={capture}", record=', "printed": OUT.getvalue()')
