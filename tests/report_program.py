"""A program for the report tests: graph breaks, a data-dependent branch, a
nested (inlined) call, a recompile that makes a size dynamic. Runs as a script
(``bytegraph run``) or through :func:`main`. Prints JSON to stdout."""
import json
import sys

import torch

ROWS = 4


def helper(y):
    return y.sin() * 2


@torch.compile(backend="eager")
def with_breaks(x, n):
    y = x.cos() + n
    print("a graph break", file=sys.stderr)
    z = helper(y)
    if z.sum() > 0:
        z = z + 1
    return z.relu()


@torch.compile(backend="eager")
def no_breaks(x, *, k=2):
    a, b = x.chunk(2)
    return {"s": (a * k).sum(0), "t": [b, 1]}, (x,)


def main(argv=()):
    x = torch.randn(ROWS, 3)
    out = [with_breaks(x, 2).sum().item()]
    for rows in (ROWS, ROWS + 2, ROWS + 4):  # the second call recompiles with the rows dynamic
        out.append(no_breaks(torch.randn(rows, 3))[0]["s"].sum().item())
    if "--fail" in argv:
        raise ValueError("the program failed")
    return out


if __name__ == "__main__":
    print(json.dumps({"argv": sys.argv[1:], "results": len(main(sys.argv[1:]))}))
