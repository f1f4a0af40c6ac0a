"""Side-by-side benchmark of bytegraph and torch.compile on the model corpus.

Usage::

    python -m benchmarks.compare [--backend eager|aot_eager|inductor] [--quick]
                                 [--models a,b] [--out DIR] [--readme] [--baseline FILE] [--jobs N] [--resume]

For each model and each frontend (bytegraph, torch.compile), one subprocess
(``benchmarks.worker``) builds the model, compiles it with the same backend and
measures correctness against eager, graphs and graph breaks (with gb_types),
recompiles over three calls with one shape change, cold trace time, warm
per-call overhead and the compile's peak memory. A model that fails, crashes
or times out is reported in the table with its error; the run goes on.

Writes to ``--out`` (default ``benchmarks/results/``, gitignored):
``compare.md`` (table and every graph break, recompile and error),
``compare.csv`` (one row per model and frontend), ``compare.png`` (ratios
bytegraph / torch.compile), and ``raw/`` and ``logs/`` per subprocess.
``--readme`` also copies the three reports to ``benchmarks/results/readme/``
(the one tracked folder under results) and rewrites the marked benchmark
block of ``README.md``; ``make bench`` runs the full corpus that way.
``--baseline FILE`` records torch.compile's first-call graphs and breaks per
model in FILE (see :mod:`benchmarks.baseline`), which the slow test tier
reads instead of running torch.compile itself.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import baseline, report
from benchmarks.models import MODELS, quick_names
from benchmarks.worker import FRONTENDS

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results"
README_ASSETS = DEFAULT_OUT / "readme"


def run_one(model: str, frontend: str, ns: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Run the worker for one model and frontend; always returns a result dict."""
    slug = f"{model}.{frontend}"
    result_path, log_path = out / "raw" / f"{slug}.json", out / "logs" / f"{slug}.log"
    if ns.resume and result_path.exists():
        return json.loads(result_path.read_text())
    result_path.unlink(missing_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env["HF_HUB_OFFLINE"] = "1"  # the zoo is built from config objects: any hub access is a bug
    cmd = [sys.executable, "-m", "benchmarks.worker", model, frontend, "--backend", ns.backend,
           "--repeat", str(ns.repeat), "--threads", str(ns.threads), "--result", str(result_path)]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-inductor-") as cache, open(log_path, "w") as log:
        env["TORCHINDUCTOR_CACHE_DIR"] = cache  # inductor's cold time must not come from an earlier run's cache
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=ns.timeout)
            failure = None if proc.returncode == 0 else f"worker exited with status {proc.returncode}"
        except subprocess.TimeoutExpired:
            failure = f"timed out after {ns.timeout:.0f} s"
    wall = time.perf_counter() - start
    if result_path.exists():
        result = json.loads(result_path.read_text())
    else:
        tail = log_path.read_text(errors="replace").strip().splitlines()[-15:]
        result = {"model": model, "frontend": frontend, "backend": ns.backend, "status": "error",
                  "error": failure or "no result written", "error_phase": "process", "traceback": "\n".join(tail),
                  "description": MODELS[model].description}
    result["wall_s"] = wall
    result["log"] = str(log_path.relative_to(out))
    result_path.write_text(json.dumps(result, indent=1, default=str))  # with wall_s, for --resume
    return result


def select_models(ns: argparse.Namespace) -> list[str]:
    if ns.models:
        names = [n.strip() for n in ns.models.split(",") if n.strip()]
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            raise SystemExit(f"unknown model(s): {', '.join(unknown)}; known: {', '.join(MODELS)}")
        return names
    return quick_names() if ns.quick else list(MODELS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="eager", help="backend for both frontends (default: eager)")
    parser.add_argument("--quick", action="store_true", help=f"only the quick subset ({', '.join(quick_names())})")
    parser.add_argument("--models", default="", help="comma-separated model names (default: all)")
    parser.add_argument("--frontends", default=",".join(FRONTENDS), help="comma-separated (default: both)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder (default: benchmarks/results)")
    parser.add_argument("--repeat", type=int, default=15, help="timing samples per measurement (default: 15)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads in each worker (default: 1)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="workers run at once (default: 1; more shortens the run on an idle machine, "
                             "and makes the timings of each noisier)")
    parser.add_argument("--resume", action="store_true",
                        help="reuse the results an interrupted run left in OUT/raw/ (same options) instead of rerunning")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per model and frontend (default: 600)")
    parser.add_argument("--readme", action="store_true",
                        help="also update README.md's benchmark block and benchmarks/results/readme/")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="record torch.compile's graph counts of the models run in this JSON file "
                             f"(the slow tier reads {baseline.DEFAULT.relative_to(ROOT)})")
    ns = parser.parse_args(argv)
    names = select_models(ns)
    frontends = [f.strip() for f in ns.frontends.split(",") if f.strip()]
    for f in frontends:
        if f not in FRONTENDS:
            raise SystemExit(f"unknown frontend {f!r}; known: {', '.join(FRONTENDS)}")
    out: Path = ns.out.resolve()
    (out / "raw").mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(parents=True, exist_ok=True)

    command = "python -m benchmarks.compare " + " ".join(argv if argv is not None else sys.argv[1:])
    start = time.perf_counter()
    jobs = [(model, frontend) for model in names for frontend in frontends]
    with concurrent.futures.ThreadPoolExecutor(max_workers=ns.jobs) as pool:  # threads only wait on workers
        futures = [pool.submit(run_one, model, frontend, ns, out) for model, frontend in jobs]
        for future in concurrent.futures.as_completed(futures):
            print(report.progress_line(future.result()), flush=True)
    results = [f.result() for f in futures]
    meta = report.run_metadata(results, ns.backend, command.strip(), time.perf_counter() - start)
    paths = report.write_all(results, meta, out)
    print("\n" + report.markdown_table(results))
    print("\nwrote " + ", ".join(str(p) for p in paths))
    if ns.baseline is not None:
        recorded = baseline.record(ns.baseline, results, meta)
        print(f"recorded torch.compile's counts of {recorded} model(s) in {ns.baseline}")
    if ns.readme:
        README_ASSETS.mkdir(parents=True, exist_ok=True)
        for p in paths:
            shutil.copy(p, README_ASSETS / p.name)
        report.update_readme(ROOT / "README.md", results, meta, README_ASSETS.relative_to(ROOT))
        print(f"updated README.md and {README_ASSETS.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
