"""The OpInfo sweep: every OpInfo of torch's ``op_db`` compiled with ``fullgraph=True``.

Usage::

    python -m tools.opinfo --frontend bytegraph [--backends eager,aot_eager] [--quick | --ops a,b]
                           [--samples 1] [--jobs 1] [--timeout 60] [--json PATH]
    python -m tools.opinfo --docs          # docs/opinfo.md from tools/opinfo/results/*.json

Each case (an OpInfo called as ``op.op`` or as its in-place variant on its first CPU sample
that eager runs, see ``cases.py``; ``--samples N``: its first N, the first that is not
captured deciding) runs in a worker process (``worker.py``) of the chosen
frontend, a chunk of cases per process: a crash or a hang ends that process, is recorded
for the case it stopped at, and a new process goes on with the next case. bytegraph and
torch.compile never share a process. The results are a JSON file (default
``tools/opinfo/results/<frontend>.json``) and the tables of ``docs/opinfo.md``
(``make opinfo`` runs both frontends and regenerates it).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import platform
import resource
import select
import subprocess
import sys
import tempfile
import threading
import time

import torch

from tools.opinfo import cases, table
from tools.opinfo.frontends import BACKENDS, FRONTENDS
from tools.opinfo.quick import QUICK

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tools" / "opinfo" / "results"
CHUNK = 350  # cases per worker process (its imports cost about 5 s of CPU)


def _lost(case: tuple[str, str], backends: list[str], done: set[str], outcome: str, reason: str) -> list[dict]:
    return [{"op": case[0], "variant": case[1], "backend": b, "outcome": outcome, "reason": reason}
            for b in backends if b not in done]


class Progress:
    """Cases finished so far, printed to stderr every ``every`` cases (workers run in threads)."""

    def __init__(self, total: int, every: int = 100) -> None:
        self.total, self.every, self.done = total, every, 0
        self.lock = threading.Lock()
        self.start = time.perf_counter()

    def step(self) -> None:
        with self.lock:
            self.done += 1
            if self.done % self.every == 0 or self.done == self.total:
                print(f"  {self.done}/{self.total} cases, {time.perf_counter() - self.start:.0f} s", file=sys.stderr)


def run_chunk(chunk: list[tuple[str, str]], frontend: str, backends: list[str], timeout: float, samples: int,
              progress: Progress) -> list[dict]:
    """Results of ``chunk`` (cases), run by as many worker processes as crashes and hangs need."""
    results: list[dict] = []
    todo = list(chunk)
    while todo:
        command = [sys.executable, "-m", "tools.opinfo.worker", "--frontend", frontend,
                   "--backends", ",".join(backends), "--timeout", str(timeout), "--samples", str(samples)]
        stderr = tempfile.TemporaryFile("w+")
        proc = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=stderr, text=True)
        proc.stdin.write("".join(f"{name}\t{variant}\n" for name, variant in todo))
        proc.stdin.close()
        current, done, finished = None, set(), set()
        deadline = time.monotonic() + 300  # the worker's imports
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            line = proc.stdout.readline() if ready else None
            if not line:  # hung (None), or the process ended ("")
                if line is None:
                    proc.kill()
                code = proc.wait()
                if current is not None:
                    why = ("timeout", "the worker hung") if line is None else ("crash", f"the worker died (exit {code})")
                    results += _lost(current, backends, done, *why)
                    finished.add(current)
                    progress.step()
                if not finished:  # it never got to a case: the worker itself is broken
                    stderr.seek(0)
                    raise RuntimeError(f"the {frontend} worker exited (code {code}) before its first case:\n"
                                       + stderr.read()[-3000:])
                todo = [c for c in todo if c not in finished]
                break
            record = json.loads(line)
            if "start" in record:
                current, done = tuple(record["start"]), set()
                # the eager reference and each backend, each within its timeout, and some slack
                deadline = time.monotonic() + timeout * (len(backends) + 1) + 30
            elif "end" in record:
                finished.add(current)
                current = None
                progress.step()
            else:
                results.append(record)
                done.update(backends if record["backend"] is None else [record["backend"]])
        proc.stdout.close()
        stderr.close()
    return results


def sweep(names: list[str], frontend: str, backends: list[str], jobs: int, timeout: float, samples: int = 1) -> dict:
    """Run every variant of every OpInfo in ``names``; the JSON document of the sweep."""
    pairs = [(name, variant) for name in names for variant in cases.VARIANTS]
    chunks = [pairs[i:i + CHUNK] for i in range(0, len(pairs), CHUNK)]
    start, cpu_start = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    progress = Progress(len(pairs))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        parts = list(pool.map(lambda c: run_chunk(c, frontend, backends, timeout, samples, progress), chunks))
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    order = {name: i for i, name in enumerate(names)}
    results = sorted((r for part in parts for r in part),
                     key=lambda r: (order[r["op"]], cases.VARIANTS.index(r["variant"]), str(r["backend"])))
    return {
        "frontend": frontend, "backends": backends, "torch": torch.__version__,
        "python": platform.python_version(), "ops": len(names), "samples": samples, "jobs": jobs,
        "wall_seconds": round(time.perf_counter() - start, 1),
        "cpu_seconds": round(cpu.ru_utime + cpu.ru_stime - cpu_start.ru_utime - cpu_start.ru_stime, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "results": results,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frontend", choices=FRONTENDS)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--quick", action="store_true", help="only the quick tier's slice of op_db")
    parser.add_argument("--ops", help="comma-separated OpInfo full names (default: all of op_db)")
    parser.add_argument("--samples", type=int, default=1, help="samples per case (default: the first eager runs)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes at once")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case and backend")
    parser.add_argument("--json", help="where the results go (default tools/opinfo/results/<frontend>.json)")
    parser.add_argument("--docs", action="store_true", help="regenerate docs/opinfo.md from the results")
    args = parser.parse_args(argv)
    if args.frontend:
        names = QUICK if args.quick else (args.ops.split(",") if args.ops else list(cases.op_db()))
        unknown = [n for n in names if n not in cases.op_db()]
        if unknown:
            parser.error(f"not in op_db: {', '.join(unknown)}")
        doc = sweep(names, args.frontend, args.backends.split(","), args.jobs, args.timeout, args.samples)
        path = pathlib.Path(args.json) if args.json else RESULTS / f"{args.frontend}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        print(table.summary(doc))
        print(f"{len(names)} ops in {doc['wall_seconds']} s wall, {doc['cpu_seconds']} s CPU "
              f"(load {doc['load_average']}); results in {path}")
    if args.docs:
        docs = table.write_docs(RESULTS, ROOT / "docs" / "opinfo.md")
        print(f"wrote {docs}")
    if not (args.frontend or args.docs):
        parser.error("give --frontend, --docs or both")
    return 0


if __name__ == "__main__":
    sys.exit(main())
