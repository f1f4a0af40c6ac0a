"""Per-call frontend time of bytegraph and torch.compile, with the graph's own time taken out.

``python -m benchmarks.per_call [--models a,b] [--frontends bytegraph,torch.compile] [--repeat N]
[--method replay|timing] [--rounds R]``

Each model (a corpus entry, ``benchmarks.models.MODELS``, or :data:`STACK`, a
stack of 120 ``Linear`` + ``ReLU`` layers: 240 parameters, the parameter-guard
case) is compiled by each frontend with one of two backends:

- ``replay`` (the default): the compiled graph returns the outputs it computed
  on its first call, so every later call of the compiled model costs only the
  frontend's work (guards, dispatch, argument loading, output rebuilding), with
  no graph time to subtract and none of its noise;
- ``timing``: the graph runs on every call and the time spent inside it is
  summed; the frontend's time is the call's time minus the graph's (the graph
  sees real outputs, so the frontend rebuilds real results, and a frontend that
  clones or saves inputs around the graph pays for it here too).

Printed per model and frontend: the minimum and the median over ``--repeat``
samples of 100 calls, in microseconds per call, and the ratio bytegraph /
torch.compile of the minimums (the steadiest figure on a shared machine), with
the geometric mean of the ratios. Each model and frontend runs in a fresh
process; with ``--rounds R`` every (model, frontend) process runs R times, the
frontends alternated, and the minimum of the rounds' minimums is reported with
the spread of the rounds' ratios. The outputs are not checked (with ``replay``
they are the first call's, by construction): ``benchmarks.compare`` checks
correctness.

Training entries are timed forward only, with grad mode on.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import timeit
from typing import Any, Callable

FRONTENDS = ("bytegraph", "torch.compile")
DEFAULT_MODELS = ("mlp", "transformer_encoder", "resnet", "shape_control_flow", "gpt2", "bert", "vit")
#: the pseudo-model of 120 ``Linear(16, 16)`` + ``ReLU`` layers (not a corpus entry)
STACK = "linear_relu_120"


def replaying_backend(gm: Any, example_inputs: list) -> Any:
    """A backend whose graph runs once; later calls return that call's outputs."""
    outputs: list = []

    def replay(*args: Any) -> Any:
        if not outputs:
            outputs.append(gm.forward(*args))
        return outputs[0]

    return replay


#: seconds spent inside compiled graphs by :func:`timing_backend` graphs
_GRAPH_SECONDS = [0.0]


def timing_backend(gm: Any, example_inputs: list) -> Any:
    """A backend whose graph runs on every call, its time summed into :data:`_GRAPH_SECONDS`."""
    forward, clock, total = gm.forward, time.perf_counter, _GRAPH_SECONDS

    def timed(*args: Any) -> Any:
        start = clock()
        try:
            return forward(*args)
        finally:
            total[0] += clock() - start

    return timed


def _build(model: str) -> tuple[Any, tuple, dict, bool]:
    """(module, args, kwargs, training) of a corpus entry or of :data:`STACK`."""
    import torch

    from benchmarks.models import MODELS

    if model == STACK:
        torch.manual_seed(0)
        layers = [layer for _ in range(120) for layer in (torch.nn.Linear(16, 16), torch.nn.ReLU())]
        return torch.nn.Sequential(*layers).eval(), (torch.randn(4, 16),), {}, False
    case = MODELS[model].build()
    return case.model, case.inputs.args, case.inputs.kwargs, case.training


def child(model: str, frontend: str, repeat: int, method: str) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    module, args, kwargs, training = _build(model)
    backend = replaying_backend if method == "replay" else timing_backend
    if frontend == "bytegraph":
        import bytegraph

        compiled = bytegraph.compile(module, backend=backend)
    else:
        compiled = torch.compile(module, backend=backend)
    with torch.set_grad_enabled(training):
        compiled(*args, **kwargs)
        compiled(*args, **kwargs)
        us = [_sample_us(lambda: compiled(*args, **kwargs)) for _ in range(repeat)]
    return {"model": model, "frontend": frontend, "min_us": min(us), "median_us": statistics.median(us)}


def _sample_us(call: Callable[[], Any], number: int = 100) -> float:
    """Microseconds per call of ``call`` outside compiled graphs, over ``number`` calls."""
    graph_before = _GRAPH_SECONDS[0]
    seconds = timeit.timeit(call, number=number)
    return (seconds - (_GRAPH_SECONDS[0] - graph_before)) / number * 1e6


def run_process(model: str, frontend: str, repeat: int, method: str) -> dict[str, Any]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.per_call", "--child", model, frontend,
                           "--repeat", str(repeat), "--method", method], capture_output=True, text=True, env=env, cwd=root)
    if proc.returncode != 0:
        return {"model": model, "frontend": frontend, "error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated corpus entries")
    parser.add_argument("--frontends", default=",".join(FRONTENDS), help="comma-separated (default: both)")
    parser.add_argument("--repeat", type=int, default=20, help="samples of 100 calls (default: 20)")
    parser.add_argument("--method", choices=("replay", "timing"), default="replay",
                        help="replay the first call's outputs, or run the graph and subtract its time")
    parser.add_argument("--rounds", type=int, default=1, help="fresh processes per model and frontend")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "FRONTEND"), help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    if ns.child:
        print(json.dumps(child(*ns.child, ns.repeat, ns.method)))
        return 0
    frontends = [f for f in ns.frontends.split(",") if f]
    models = [m for m in ns.models.split(",") if m]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {(m, f): [] for m in models for f in frontends}
    for round_ in range(ns.rounds):
        for m in models:
            for f in frontends if round_ % 2 == 0 else frontends[::-1]:
                runs[(m, f)].append(run_process(m, f, ns.repeat, ns.method))
    print(f"frontend µs per call ({ns.method}, 1 thread; {ns.rounds} rounds x {ns.repeat} samples x 100 calls)\n")
    print("| model | " + " | ".join(f"{f} min / median" for f in frontends) + " | min ratio | rounds' ratios |")
    print("|---|" + "---:|" * (len(frontends) + 2))
    ratios = []
    for model in models:
        cells, best = [], {}
        for f in frontends:
            ok = [r for r in runs[(model, f)] if "error" not in r]
            if not ok:
                cells.append("error")
                continue
            best[f] = min(r["min_us"] for r in ok)
            cells.append(f"{best[f]:.1f} / {statistics.median(r['median_us'] for r in ok):.1f}")
        a, b = (best.get(f) for f in FRONTENDS)
        spread = [x["min_us"] / y["min_us"] for x, y in zip(*(runs.get((model, f), []) for f in FRONTENDS))
                  if "error" not in x and "error" not in y]
        if a and b:
            ratios.append(a / b)
        print(f"| {model} | {' | '.join(cells)} | {f'{a / b:.2f}x' if a and b else '-'} | "
              f"{', '.join(f'{r:.2f}' for r in spread) or '-'} |")
    if ratios:
        print(f"\ngeomean min ratio over {len(ratios)} models: {statistics.geometric_mean(ratios):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
