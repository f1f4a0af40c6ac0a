"""Per-call frontend time of bytegraph and torch.compile, with the graph's own time taken out.

``python -m benchmarks.per_call [--models a,b] [--frontends bytegraph,torch.compile] [--repeat N]``

Each model (a corpus entry, ``benchmarks.models.MODELS``, or :data:`STACK`, a
stack of 120 ``Linear`` + ``ReLU`` layers: 240 parameters, the parameter-guard
case) is built once per frontend and compiled with a backend that measures in
two ways, both reported:

- ``replay``: the compiled graph returns the outputs it computed on its first
  call, so every later call of the compiled model costs only the frontend's
  work (guards, dispatch, argument loading, output rebuilding), with no graph
  time to subtract and none of its noise;
- ``timing``: the graph runs on every call and the time spent inside it is
  summed; the frontend's time is the call's time minus the graph's (the graph
  makes real outputs, so the frontend rebuilds real results, and a frontend that
  copies or saves inputs around the graph pays for it here).

All frontends of one model run in one process, their samples alternated (on a
loaded machine, load that comes and goes then hits each alike), timed in CPU
time of the thread (time the process spent waiting for a core is not counted).
Printed per model and frontend: the minimum and the median over ``--repeat``
samples of 50 calls, in microseconds per call, and the ratios bytegraph /
torch.compile of the minimums and of the medians, with their geometric means.
The outputs are not checked (with ``replay`` they are the first call's, by
construction): ``benchmarks.compare`` checks correctness.

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
from typing import Any, Callable

FRONTENDS = ("bytegraph", "torch.compile")
METHODS = ("replay", "timing")
DEFAULT_MODELS = ("mlp", "transformer_encoder", "resnet", "shape_control_flow", "gpt2", "bert", "vit")
#: the pseudo-model of 120 ``Linear(16, 16)`` + ``ReLU`` layers (not a corpus entry)
STACK = "linear_relu_120"

#: the method compiled graphs follow now, and the CPU seconds spent inside them in ``timing``
_METHOD = ["timing"]
_GRAPH_SECONDS = [0.0]


def measuring_backend(gm: Any, example_inputs: list) -> Any:
    """A backend whose graph, as :data:`_METHOD` says, returns its first call's
    outputs (``replay``) or runs, its time summed into :data:`_GRAPH_SECONDS` (``timing``)."""
    forward, clock, total, method, outputs = gm.forward, time.thread_time, _GRAPH_SECONDS, _METHOD, []

    def measured(*args: Any) -> Any:
        if method[0] == "replay":
            if not outputs:
                outputs.append(forward(*args))
            return outputs[0]
        start = clock()
        try:
            return forward(*args)
        finally:
            total[0] += clock() - start

    return measured


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


def child(model: str, frontends: list[str], repeat: int) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    calls: dict[str, Callable[[], Any]] = {}
    training = False
    for frontend in frontends:
        module, args, kwargs, training = _build(model)
        if frontend == "bytegraph":
            import bytegraph

            compiled = bytegraph.compile(module, backend=measuring_backend)
        else:
            compiled = torch.compile(module, backend=measuring_backend)
        calls[frontend] = lambda c=compiled, a=args, k=kwargs: c(*a, **k)
    samples: dict[str, dict[str, list[float]]] = {m: {f: [] for f in frontends} for m in METHODS}
    with torch.set_grad_enabled(training):
        for method in METHODS:
            _METHOD[0] = method
            for call in calls.values():
                call(), call()
        for i in range(repeat):
            for method in METHODS:
                _METHOD[0] = method
                for frontend in frontends if i % 2 == 0 else frontends[::-1]:
                    samples[method][frontend].append(_sample_us(calls[frontend]))
    return {"model": model, "samples": samples}


def _sample_us(call: Callable[[], Any], number: int = 50) -> float:
    """CPU microseconds per call of ``call`` outside compiled graphs, over ``number`` calls."""
    graph_before, start = _GRAPH_SECONDS[0], time.thread_time()
    for _ in range(number):
        call()
    seconds = time.thread_time() - start
    return (seconds - (_GRAPH_SECONDS[0] - graph_before)) / number * 1e6


def run_process(model: str, frontends: list[str], repeat: int) -> dict[str, Any]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.per_call", "--child", model,
                           "--frontends", ",".join(frontends), "--repeat", str(repeat)],
                          capture_output=True, text=True, env=env, cwd=root)
    if proc.returncode != 0:
        return {"model": model, "error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(rows: list[dict[str, Any]], method: str, frontends: list[str]) -> list[str]:
    """The markdown table of one method, with the geometric means of the ratios."""
    lines = ["| model | " + " | ".join(f"{f} min / median µs" for f in frontends) + " | ratio of min | of median |",
             "|---|" + "---:|" * (len(frontends) + 2)]
    ratios: list[tuple[float, float]] = []
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['model']} | error: {' '.join(row['error'])} |")
            continue
        got = {f: row["samples"][method][f] for f in frontends}
        cells = [f"{min(us):.1f} / {statistics.median(us):.1f}" for us in got.values()]
        ratio = "- | -"
        if all(f in got for f in FRONTENDS):
            a, b = got["bytegraph"], got["torch.compile"]
            pair = (min(a) / min(b), statistics.median(a) / statistics.median(b))
            ratios.append(pair)
            ratio = f"{pair[0]:.2f}x | {pair[1]:.2f}x"
        lines.append(f"| {row['model']} | {' | '.join(cells)} | {ratio} |")
    if ratios:
        lines.append(f"| geomean ({len(ratios)} models) |{' |' * len(frontends)} "
                     f"{statistics.geometric_mean(r[0] for r in ratios):.2f}x "
                     f"| {statistics.geometric_mean(r[1] for r in ratios):.2f}x |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated corpus entries")
    parser.add_argument("--frontends", default=",".join(FRONTENDS), help="comma-separated (default: both)")
    parser.add_argument("--repeat", type=int, default=20, help="samples of 50 calls per method (default: 20)")
    parser.add_argument("--json", help="also write the samples to this file")
    parser.add_argument("--child", metavar="MODEL", help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    frontends = [f for f in ns.frontends.split(",") if f]
    if ns.child:
        print(json.dumps(child(ns.child, frontends, ns.repeat)))
        return 0
    rows = [run_process(m, frontends, ns.repeat) for m in ns.models.split(",") if m]
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(rows, f)
    for method in METHODS:
        print(f"\nfrontend CPU µs per call, {method} "
              f"(1 thread; {ns.repeat} samples x 50 calls, frontends alternated)\n")
        print("\n".join(table(rows, method, frontends)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
