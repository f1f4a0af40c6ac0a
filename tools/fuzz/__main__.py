"""Differential fuzzing of bytegraph against eager.

Usage: ``python -m tools.fuzz [--n 2000] [--seed 0] [--backend eager --backend aot_eager] [--out DIR]
[--raise-backend-errors]``
(``make fuzz N=2000``). Each failing program is minimised (statements removed
while the same difference remains) and written to ``DIR/seed<k>-<backend>.py``;
a table of the campaign is printed at the end.
"""
from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time

from tools.fuzz.differential import SETTINGS, compare, silence
from tools.fuzz.minimize import minimize
from tools.fuzz.programs import generate, render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="programs to generate")
    parser.add_argument("--seed", type=int, default=0, help="first program seed")
    parser.add_argument("--backend", action="append", help="backends to compare (default: eager, aot_eager)")
    parser.add_argument("--out", default="fuzz-failures", help="where minimised failures are written")
    parser.add_argument("--raise-backend-errors", action="store_true",
                        help="count a backend failure as a failure (by default the frame runs natively)")
    args = parser.parse_args(argv)
    if args.raise_backend_errors:
        SETTINGS["raise_on_backend_error"] = True
    backends = args.backend or ["eager", "aot_eager"]
    out = pathlib.Path(args.out)
    failures: collections.Counter = collections.Counter()
    start = time.perf_counter()
    for seed in range(args.seed, args.seed + args.n):
        body = generate(seed)
        for backend in backends:
            with silence():
                diff = compare(render(body), seed, backend)
            if diff is None:
                continue
            failures[(backend, diff)] += 1
            with silence():
                small = minimize(body, seed, backend, diff)
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"seed{seed}-{backend}.py"
            path.write_text(f"# seed {seed}, backend {backend}: {diff}\n" + render(small))
            print(f"seed {seed} [{backend}]: {diff} -> {path}", flush=True)
    seconds = time.perf_counter() - start
    print(f"\n{args.n} programs x {len(backends)} backends in {seconds:.0f} s; "
          f"{sum(failures.values())} failing runs")
    for (backend, diff), count in sorted(failures.items()):
        print(f"  {count:5d}  {backend:10s} {diff}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
