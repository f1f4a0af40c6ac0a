"""Per-call frontend time of bytegraph and torch.compile, with the graph's own time taken out.

``python -m benchmarks.per_call [--models a,b] [--frontends bytegraph,torch.compile] [--repeat N]``

Each model (a corpus entry, ``benchmarks.models.MODELS``) is compiled by each
frontend with a backend whose compiled graph returns the outputs it computed on
its first call: every later call of the compiled model then costs only the
frontend's work (guards, dispatch, argument loading, output rebuilding), with
no graph time to subtract and none of its noise. Printed per model and
frontend: the minimum and the median over ``--repeat`` samples of 100 calls,
in microseconds per call, and the ratio bytegraph / torch.compile of the
minimums (the steadiest figure on a shared machine). Each model and frontend
runs in a fresh process. The outputs are not checked (they are the first
call's, by construction): ``benchmarks.compare`` checks correctness.

Training entries are timed forward only, with grad mode on.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import timeit
from typing import Any

FRONTENDS = ("bytegraph", "torch.compile")
DEFAULT_MODELS = ("mlp", "transformer_encoder", "resnet", "shape_control_flow", "gpt2", "bert", "vit")


def replaying_backend(gm: Any, example_inputs: list) -> Any:
    """A backend whose graph runs once; later calls return that call's outputs."""
    outputs: list = []

    def replay(*args: Any) -> Any:
        if not outputs:
            outputs.append(gm.forward(*args))
        return outputs[0]

    return replay


def child(model: str, frontend: str, repeat: int) -> dict[str, Any]:
    import torch

    from benchmarks.models import MODELS

    torch.set_num_threads(1)
    case = MODELS[model].build()
    if frontend == "bytegraph":
        import bytegraph

        compiled = bytegraph.compile(case.model, backend=replaying_backend)
    else:
        compiled = torch.compile(case.model, backend=replaying_backend)
    args, kwargs = case.inputs.args, case.inputs.kwargs
    with torch.set_grad_enabled(case.training):
        compiled(*args, **kwargs)
        compiled(*args, **kwargs)
        samples = timeit.repeat(lambda: compiled(*args, **kwargs), number=100, repeat=repeat)
    us = [s / 100 * 1e6 for s in samples]
    return {"model": model, "frontend": frontend, "min_us": min(us), "median_us": statistics.median(us)}


def run_process(model: str, frontend: str, repeat: int) -> dict[str, Any]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.per_call", "--child", model, frontend,
                           "--repeat", str(repeat)], capture_output=True, text=True, env=env, cwd=root)
    if proc.returncode != 0:
        return {"model": model, "frontend": frontend, "error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated corpus entries")
    parser.add_argument("--frontends", default=",".join(FRONTENDS), help="comma-separated (default: both)")
    parser.add_argument("--repeat", type=int, default=20, help="samples of 100 calls (default: 20)")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "FRONTEND"), help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    if ns.child:
        print(json.dumps(child(*ns.child, ns.repeat)))
        return 0
    frontends = [f for f in ns.frontends.split(",") if f]
    rows = {(m, f): run_process(m, f, ns.repeat) for m in ns.models.split(",") if m for f in frontends}
    print(f"frontend µs per call (graph replayed, 1 thread; {ns.repeat} samples x 100 calls)\n")
    print("| model | " + " | ".join(f"{f} min / median" for f in frontends) + " | min ratio |")
    print("|---|" + "---:|" * (len(frontends) + 1))
    for model in dict.fromkeys(m for m, _ in rows):
        cells = []
        for f in frontends:
            r = rows[(model, f)]
            cells.append("error" if "error" in r else f"{r['min_us']:.1f} / {r['median_us']:.1f}")
        a, b = (rows.get((model, f), {}).get("min_us") for f in FRONTENDS)
        print(f"| {model} | {' | '.join(cells)} | {f'{a / b:.2f}x' if a and b else '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
