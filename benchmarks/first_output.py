"""Time to first output with inductor, cold and warm process, both frontends.

``python -m benchmarks.first_output [--programs NAME ...] [--cold-runs N] [--warm-runs N] [--json OUT] [--readme]``
(``--rows OUT`` renders a saved run instead of measuring)

For each program and frontend (bytegraph, torch.compile), with one empty
``TORCHINDUCTOR_CACHE_DIR`` per program and frontend:

- **cold**: a fresh process on an empty cache folder (``--cold-runs`` of
  them, each on its own folder; median reported);
- **warm**: then ``--warm-runs`` more fresh processes on the first cold run's folder
  (median reported): what a second run of the same program pays once
  inductor's FX graph cache and AOTAutograd's cache are filled.

Each process builds the model and its eager reference (seed 0), imports
torch, then starts the clock at the ``compile()`` call and stops it at the
first output (training programs: after ``backward()``), so each frontend pays
its own imports in that span (``import bytegraph``; ``torch.compile`` imports
torch's frontend at the call). The output is compared with eager. Torch's
compile-cache counters (``fxgraph_cache_hit``/``_miss``/``_bypass``,
``autograd_cache_hit``/...) are read from torch's counter object after the
clock stops. For bytegraph the span is split from bytegraph's own records
into import (``import bytegraph``, and torch's modules imported on first use
during the first trace and backend call), trace (the frontend: tracing,
guards, code generation), backend seconds (imports excluded) and run (the
rest: the first call of the compiled code, and for training programs the loss
and ``backward()``).

**floor** (warm runs): a third fresh process per warm run builds the same
model and reference, then only imports, in order, the torch modules the
bytegraph warm process had imported by its first output (bytegraph's own
modules and the compiled kernels inductor loads from its cache left out).
That is the import bill any frontend pays to run inductor's cached code in
that process (torch's ``FakeTensorMode`` imports ``torch._dynamo``; the cached
wrapper imports inductor's runtime); ``floor / torch.compile`` bounds what a
frontend that still traces and runs inductor's cached code can reach.

Any corpus entry (``benchmarks.models.MODELS``) can be given with
``--programs``; ``make bench-inductor`` runs the ones inductor compiles in
reasonable time on 2 cores.

bytegraph's bytecode cache (``__pycache__``) is written before the first
process, as installing a package does. Times are wall seconds, and the process's own CPU seconds in the same span
(``time.process_time``: steadier on a loaded machine, but it leaves out
inductor's compile workers, so it undercounts cold runs); read them as a
table, not as a test. Programs: ``transformer_encoder`` (corpus entry: nn.TransformerEncoder,
2 layers, d=64, under no_grad) and ``mlp_train`` (an MLP training step:
forward, cross-entropy, backward; no dropout, so eager and compiled gradients
compare).
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FRONTENDS = ("bytegraph", "torch.compile")
PROGRAMS = ("transformer_encoder", "mlp_train")  # the default: the table
COUNTERS = (("inductor", "fxgraph_cache_hit"), ("inductor", "fxgraph_cache_miss"),
            ("inductor", "fxgraph_cache_bypass"), ("aot_autograd", "autograd_cache_hit"),
            ("aot_autograd", "autograd_cache_miss"), ("aot_autograd", "autograd_cache_bypass"))


def build(program: str):
    """A fresh (seeded) :class:`benchmarks.models.Case` for ``program``."""
    import torch
    from torch import nn

    from benchmarks.models import MODELS, Case, Inputs, WithLoss

    if program == "mlp_train":
        torch.manual_seed(0)
        mlp = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.LayerNorm(256),
                            nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
        inputs = Inputs((torch.randn(32, 128), torch.randint(0, 10, (32,))))
        return Case(WithLoss(mlp, nn.CrossEntropyLoss()).train(), inputs, inputs, loss=lambda out: out, atol=1e-4)
    return MODELS[program].build()


def child(program: str, frontend: str) -> dict[str, Any]:
    """One measurement in this (fresh) process; returns the result row."""
    import torch

    from benchmarks.models import max_abs_diff, run_step

    reference_case = build(program)
    expected = run_step(reference_case, reference_case.model, reference_case.inputs)
    case = build(program)
    before = set(sys.modules)
    start, cpu_start = time.perf_counter(), time.process_time()
    if frontend == "floor":
        return floor_child(program, start, cpu_start)
    if frontend == "bytegraph":
        import bytegraph

        imported = time.perf_counter()
        compiled = bytegraph.compile(case.model)
    else:
        imported = start
        compiled = torch.compile(case.model)
    out = run_step(case, compiled, case.inputs)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    from torch._dynamo.utils import counters  # torch's own counters (read by the benchmark, after timing)

    row = {"program": program, "frontend": frontend, "seconds": seconds, "cpu_seconds": cpu_seconds,
           "max_abs_diff": max_abs_diff(out, expected),
           "counters": {name: counters[group][name] for group, name in COUNTERS}}
    if frontend == "bytegraph":
        from bytegraph.runtime import metrics

        frames = metrics.FRAMES.values()
        later_imports = sum(s.import_seconds for s in frames)  # first use, inside trace and backend
        backend = sum(g.compile_seconds - g.import_seconds for s in frames for g in s.graphs)
        trace = sum(s.trace_seconds for s in frames) - backend - later_imports
        imports = imported - start + later_imports
        row.update(import_seconds=imports, trace_seconds=trace, backend_seconds=backend,
                   run_seconds=seconds - imports - trace - backend, graphs=sum(len(s.graphs) for s in frames),
                   torch_modules=[m for m in sys.modules if m not in before and _is_torch_import(m)])
    return row


#: modules of the frontend itself, and inductor's compiled kernels (loaded from its cache by path)
NOT_FLOOR = ("bytegraph", "bytecode", "torch._inductor.runtime.compile_tasks.")


def _is_torch_import(name: str) -> bool:
    return not name.startswith(NOT_FLOOR)


def floor_child(program: str, start: float, cpu_start: float) -> dict[str, Any]:
    """Import the modules listed in ``$FIRST_OUTPUT_FLOOR`` (a JSON list), timed from ``start``."""
    import importlib

    names = json.loads(os.environ["FIRST_OUTPUT_FLOOR"])
    for name in names:
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # a module made at run time (no file): not an import anyone pays
                pass
    return {"program": program, "frontend": "floor", "seconds": time.perf_counter() - start,
            "cpu_seconds": time.process_time() - cpu_start, "modules": len(names)}


def run_process(program: str, frontend: str, cache_dir: str, floor: list[str] | None = None) -> dict[str, Any]:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
    if floor is not None:
        env["FIRST_OUTPUT_FLOOR"] = json.dumps(floor)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.first_output", "--child", program, frontend],
                          capture_output=True, text=True, env=env, cwd=root)
    if proc.returncode != 0:
        return {"program": program, "frontend": frontend, "error": proc.stderr[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(programs: list[str], warm_runs: int, cold_runs: int = 1) -> list[dict[str, Any]]:
    # bytegraph's modules get their bytecode cache first, as `pip install` writes it (torch's came with
    # its install): with PYTHONDONTWRITEBYTECODE set, every process would compile ~100 modules from source
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    compileall.compile_dir(os.path.join(root, "bytegraph"), quiet=1)
    rows = []
    for program in programs:
        # the frontends alternate run by run, so a change in the machine's load hits both alike
        found = {f: {"program": program, "frontend": f, "cold": [], "warm": []} for f in FRONTENDS}
        floors: list[dict[str, Any]] = []
        with tempfile.TemporaryDirectory(prefix="first-output-") as scratch:
            for i in range(cold_runs):  # each on its own empty folder; the warm runs reuse the first
                for frontend in FRONTENDS:
                    cache_dir = os.path.join(scratch, f"{frontend}-{i}")
                    found[frontend]["cold"].append(run_process(program, frontend, cache_dir))
                found["bytegraph"]["cold"][-1].pop("torch_modules", None)
            for _ in range(warm_runs):
                for frontend in FRONTENDS:
                    found[frontend]["warm"].append(run_process(program, frontend, os.path.join(scratch, f"{frontend}-0")))
                modules = found["bytegraph"]["warm"][-1].pop("torch_modules", None)
                if modules is not None:
                    floors.append(run_process(program, "floor", os.path.join(scratch, "bytegraph-0"), modules))
        for frontend in FRONTENDS:
            row = found[frontend]
            rows.append(row)
            print(f"  {program} {frontend}: cold {[_seconds(c) for c in row['cold']]}, "
                  f"warm {[_seconds(w) for w in row['warm']]}", file=sys.stderr, flush=True)
        rows.append({"program": program, "frontend": "floor", "cold": [], "warm": floors})
        print(f"  {program} floor: warm {[_seconds(w) for w in floors]}", file=sys.stderr, flush=True)
    return rows


def _runs(row: dict[str, Any], run: str) -> list[dict[str, Any]]:
    """The rows of ``run`` ("cold" or "warm"); files written before ``--cold-runs`` hold one cold row."""
    found = row[run]
    return found if isinstance(found, list) else [found]


def _seconds(row: dict[str, Any]) -> str:
    return "error" if "error" in row else f"{row['seconds']:.2f} s"


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else None


def _hits(row: dict[str, Any]) -> str:
    if "error" in row:
        return "error"
    c = row["counters"]
    return (f"fx {c['fxgraph_cache_hit']}h/{c['fxgraph_cache_miss']}m/{c['fxgraph_cache_bypass']}b, "
            f"aot {c['autograd_cache_hit']}h/{c['autograd_cache_miss']}m/{c['autograd_cache_bypass']}b")


def table(rows: list[dict[str, Any]]) -> str:
    """A markdown table: per program and run, both frontends' seconds, the
    ratio, and the cache counters (h/m/b: hits, misses, bypasses)."""
    by_key = {(r["program"], r["frontend"]): r for r in rows}
    lines = ["| program | run | bytegraph s | torch.compile s | ratio | CPU s: bytegraph / torch.compile (ratio) "
             "| bytegraph import / trace / backend / run s | floor s (÷ torch.compile) | bytegraph caches "
             "| torch.compile caches |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for program in dict.fromkeys(r["program"] for r in rows):
        ours, theirs = by_key[(program, "bytegraph")], by_key[(program, "torch.compile")]
        floors = by_key.get((program, "floor"), {}).get("warm", [])
        for run in ("cold", "warm"):
            a, b = _runs(ours, run), _runs(theirs, run)
            sa, sb = _median(a, "seconds"), _median(b, "seconds")
            sf = _median(floors, "seconds") if run == "warm" else None
            floor = f"{sf:.2f} ({sf / sb:.2f}x)" if sf and sb else "-"
            ca, cb = _median(a, "cpu_seconds"), _median(b, "cpu_seconds")
            cpu = f"{ca:.2f} / {cb:.2f} ({ca / cb:.2f}x)" if ca and cb else "-"
            parts = [f"{_median(a, k):.2f}" if _median(a, k) is not None else "-"
                     for k in ("import_seconds", "trace_seconds", "backend_seconds", "run_seconds")]
            lines.append(
                f"| {program} | {run}{'' if len(a) == 1 else f' (median of {len(a)})'} | "
                f"{'error' if sa is None else f'{sa:.2f}'} | {'error' if sb is None else f'{sb:.2f}'} | "
                f"{f'{sa / sb:.2f}x' if sa and sb else '-'} | {cpu} | {' / '.join(parts)} | {floor} | {_hits(a[-1])} | {_hits(b[-1])} |")
    return "\n".join(lines)


README_BEGIN = "<!-- bench-inductor:begin (generated by `make bench-inductor`; do not edit by hand) -->"
README_END = "<!-- bench-inductor:end -->"
LEGEND = """Seconds from the `compile()` call to the first output (training programs: after `backward()`), backend
`inductor`, one fresh process per run. **cold**: an empty `TORCHINDUCTOR_CACHE_DIR` (one per program and
frontend); **warm**: later processes on that folder (median), where inductor's FX graph cache and
AOTAutograd's cache hit (**caches**: hits/misses/bypasses by torch's counters, last run). Each frontend pays
its own imports in the span. **import / trace / backend / run**: bytegraph's split of its span (imports of
bytegraph and of torch modules on first use; the frontend's trace, guards and code generation; the
backend's compile, imports excluded; the rest: the first call, loss and backward). **floor**: a process
that only imports the torch modules bytegraph's warm process had imported by its first output (median):
what any frontend that traces with FakeTensors and runs inductor's cached code pays before its first
output. **CPU s**: the process's own CPU time (steadier on a loaded machine; it leaves out inductor's
compile workers)."""


def readme_block(rows: list[dict[str, Any]], meta: dict[str, Any], chart: str | None) -> str:
    """The README block: run line, machine, the table, the legend and the chart."""
    env = meta["env"]
    took = f" ({meta['seconds']:.0f} s)" if meta.get("seconds") is not None else ""
    header = (f"Run {meta['date']}, `{meta['command']}`{took}.\n"
              f"Machine: {env['cpu']}, {env['cores']} cores; Python {env['python']}, torch {env['torch']}"
              f"{'; load average ' + format(meta['load'], '.1f') + ' during the run' if meta.get('load') else ''}.")
    parts = [README_BEGIN, header, table(rows), LEGEND]
    if chart:
        parts.append(f"![time to first output with inductor]({chart})")
    parts.append("Every run's seconds, split and counters: "
                 "[benchmarks/results/readme/first_output.json](benchmarks/results/readme/first_output.json).")
    return "\n\n".join([*parts, README_END])


def write_chart(rows: list[dict[str, Any]], path: str) -> None:
    """Bars per program: cold and warm seconds of each frontend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    programs = list(dict.fromkeys(r["program"] for r in rows))
    by_key = {(r["program"], r["frontend"]): r for r in rows}
    series = [(f"{frontend} {run}", frontend, run) for frontend in FRONTENDS for run in ("cold", "warm")]
    fig, ax = plt.subplots(figsize=(2.4 + 1.8 * len(programs), 3.6))
    width = 0.8 / len(series)
    for i, (label, frontend, run) in enumerate(series):
        values = []
        for program in programs:
            row = by_key[(program, frontend)]
            values.append(_median(_runs(row, run), "seconds") or 0.0)
        ax.bar([p + (i - (len(series) - 1) / 2) * width for p in range(len(programs))], values, width, label=label,
               color=("#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78")[i])
    ax.set_xticks(range(len(programs)), programs)
    ax.set_ylabel("seconds to first output")
    ax.set_title("inductor, time to first output", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def update_readme(rows: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    """Rewrite README.md's inductor block and benchmarks/results/readme/first_output.{png,json}."""
    from benchmarks import report

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    assets = os.path.join("benchmarks", "results", "readme")
    os.makedirs(os.path.join(root, assets), exist_ok=True)
    with open(os.path.join(root, assets, "first_output.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    chart: str | None = f"{assets}/first_output.png"
    try:
        write_chart(rows, os.path.join(root, chart))
    except ImportError as exc:
        print(f"no chart: {exc} (pip install -e '.[bench]')", file=sys.stderr)
        chart = None
    report.replace_block(Path(root) / "README.md", readme_block(rows, meta, chart), README_BEGIN, README_END,
                         "Time to first output with inductor")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from benchmarks.models import MODELS

    parser.add_argument("--programs", nargs="+", default=list(PROGRAMS), choices=sorted({*PROGRAMS, *MODELS}))
    parser.add_argument("--warm-runs", type=int, default=2, help="warm processes per program and frontend")
    parser.add_argument("--cold-runs", type=int, default=1,
                        help="cold processes per program and frontend, each on its own empty cache folder (median)")
    parser.add_argument("--json", help="also write the raw rows (and the run's metadata) to this file")
    parser.add_argument("--rows", help="render a saved --json file instead of measuring")
    parser.add_argument("--readme", action="store_true",
                        help="also rewrite README.md's inductor block and benchmarks/results/readme/first_output.png")
    parser.add_argument("--child", nargs=2, metavar=("PROGRAM", "FRONTEND"), help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    if ns.child:
        print(json.dumps(child(*ns.child)))
        return 0
    if ns.warm_runs < 1 or ns.cold_runs < 1:
        parser.error("--warm-runs and --cold-runs must be at least 1")
    if ns.rows:
        with open(ns.rows) as f:
            saved = json.load(f)
        rows, meta = saved["rows"], saved["meta"]
    else:
        from benchmarks.worker import environment

        command = "python -m benchmarks.first_output " + " ".join(argv if argv is not None else sys.argv[1:])
        start = time.perf_counter()
        rows = measure(ns.programs, ns.warm_runs, ns.cold_runs)
        meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": command.strip(),
                "seconds": time.perf_counter() - start, "env": environment(), "load": os.getloadavg()[1]}
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    print(table(rows))
    if ns.readme:
        update_readme(rows, meta)
        print("updated README.md's inductor block", file=sys.stderr)
    errors = [r for row in rows for r in [*_runs(row, "cold"), *row["warm"]] if "error" in r]
    for r in errors:
        print(f"\n{r['program']} / {r['frontend']} failed:\n{r['error']}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
