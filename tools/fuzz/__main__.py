"""Differential fuzzing of bytegraph against eager: a campaign.

Usage: ``python -m tools.fuzz [--n 2000] [--seed 0] [--backend eager --backend aot_eager]
[--inductor-every K] [--workers 2] [--out DIR] [--timeout S] [--kind FAMILY] [--replay FILE]``
(``make fuzz N=10000``).

Program ``seed`` (its family drawn from the seed, see ``tools/fuzz/families``)
runs on every ``--backend``, and on inductor too when ``seed % K == 0``.
A task is one program and the backends it still needs (its eager runs are
made once for all of them); tasks go to ``--workers`` long-lived worker
processes (one that dies, or runs past ``--timeout`` seconds on one backend,
is replaced: that backend's run counts as a crash or a hang, and the
program's other backends go to the next worker);
each answer is appended to ``DIR/campaign.jsonl`` at once, so an interrupted
campaign resumes where it stopped. Each failure is minimised into
``DIR/seed<k>-<backend>.py``. The table printed at the end counts, per
program kind, the runs in the requested seed range: how many, how many eager
runs without raising, ok, wrong, crash, hang, rerun (a hidden fallback: no
difference, but a graph raised and its frame ran again natively in a program
whose eager run raised nowhere; minimised and reported, not a failure),
refused (a ``mark_dynamic`` dimension the program specialises:
ConstraintViolationError, as torch.compile raises) and flaky (eager itself
is not deterministic: the generator's fault, not compared).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import selectors
import subprocess
import sys
import time

COLUMNS = ("count", "eager-runs", "ok", "wrong", "crash", "hang", "rerun", "refused", "flaky")


class Worker:
    """One worker process and the task it is running."""

    #: the worker's command line, less the answers' file descriptor
    COMMAND = (sys.executable, "-m", "tools.fuzz.worker")

    def __init__(self, log: pathlib.Path):
        read, write = os.pipe()
        self.log = open(log, "a")
        self.proc = subprocess.Popen([*self.COMMAND, str(write)], stdin=subprocess.PIPE,
                                     stdout=self.log, stderr=subprocess.STDOUT, text=True, pass_fds=(write,))
        os.close(write)
        self.answers = os.fdopen(read)
        self.task: dict | None = None
        #: the task's backends not answered yet, the first one running since ``started``
        self.remaining: list[str] = []
        self.started = 0.0

    def send(self, task: dict) -> None:
        self.task, self.remaining, self.started = task, list(task["backends"]), time.monotonic()
        self.proc.stdin.write(json.dumps(task) + "\n")
        self.proc.stdin.flush()

    def answered(self, backend: str) -> None:
        self.remaining.remove(backend)
        self.started = time.monotonic()
        if not self.remaining:
            self.task = None

    def overdue(self) -> bool:
        return self.task is not None and time.monotonic() - self.started > self.task["timeout"][self.remaining[0]]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.answers.close()
        self.log.close()


def _done(state: pathlib.Path) -> dict[tuple[int, str], dict]:
    results = {}
    if state.exists():
        for line in state.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                results[(r["seed"], r["backend"])] = r
    return results


def run_campaign(tasks: list[dict], workers: int, out: pathlib.Path, state: pathlib.Path) -> None:
    """Run ``tasks`` on ``workers`` processes, appending each answer to ``state``."""
    pending = collections.deque(tasks)
    pool = [Worker(out / f"worker-{i}.log") for i in range(min(workers, len(tasks)))]
    selector = selectors.DefaultSelector()
    for w in pool:
        selector.register(w.answers, selectors.EVENT_READ, w)
    with open(state, "a") as record:
        def finish(worker: Worker, answer: dict) -> None:
            record.write(json.dumps(answer) + "\n")
            record.flush()
            if answer["status"] != "ok":
                print(f"seed {answer['seed']} [{answer['backend']}] {answer['kind']}: {answer['status']}: "
                      f"{answer.get('diff')} {answer.get('file', '')}", flush=True)
            worker.answered(answer["backend"])

        def replace(worker: Worker, status: str) -> Worker:
            task, (backend, *rest) = worker.task, worker.remaining
            selector.unregister(worker.answers)
            worker.stop()
            finish(worker, {"seed": task["seed"], "backend": backend, "kind": task["kind"], "status": status,
                            "diff": f"worker {status}", "eager_runs": None})
            if rest:  # the program's other backends, on the next worker
                pending.appendleft({**task, "backends": rest})
            new = Worker(out / f"worker-{pool.index(worker)}.log")
            pool[pool.index(worker)] = new
            selector.register(new.answers, selectors.EVENT_READ, new)
            return new

        try:
            while pending or any(w.task for w in pool):
                for w in pool:
                    if w.task is None and pending:
                        w.send(pending.popleft())
                for key, _ in selector.select(timeout=5):
                    w = key.data
                    line = w.answers.readline()
                    if line:
                        finish(w, json.loads(line))
                    elif w.task is not None:
                        replace(w, "crash")
                for w in list(pool):
                    if w.overdue():
                        replace(w, "hang")
        finally:
            for w in pool:
                w.stop()


def table(results: list[dict]) -> str:
    """The summary: one row per program kind and backend, then the totals."""
    rows: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    for r in results:
        for key in ((r["kind"], r["backend"]), ("all", r["backend"])):
            rows[key]["count"] += 1
            rows[key]["eager-runs"] += bool(r.get("eager_runs"))
            rows[key][r["status"]] += 1
    lines = [f"{'kind':16s} {'backend':10s}" + "".join(f"{c:>11s}" for c in COLUMNS)]
    for (kind, backend) in sorted(rows, key=lambda k: (k[0] == "all", k)):
        lines.append(f"{kind:16s} {backend:10s}" + "".join(f"{rows[kind, backend][c]:11d}" for c in COLUMNS))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="programs to generate")
    parser.add_argument("--seed", type=int, default=0, help="first program seed")
    parser.add_argument("--backend", action="append", help="backends every program runs on (default: eager, aot_eager)")
    parser.add_argument("--inductor-every", type=int, default=0, help="also run every K-th program on inductor")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds one program may take on one backend (minimising included; inductor twice that)")
    parser.add_argument("--out", default="fuzz-failures", help="where minimised failures and the campaign log go")
    parser.add_argument("--kind", help="generate programs of this family only (default: each seed draws its family)")
    parser.add_argument("--replay", help="compare one program file (a minimised failure) and print what differs")
    args = parser.parse_args(argv)
    if args.replay:
        from tools.fuzz.differential import compare, silence

        source = pathlib.Path(args.replay).read_text()
        for backend in args.backend or ["eager", "aot_eager"]:
            with silence():
                diff = compare(source, backend)
            print(f"{backend}: {diff or 'same as eager'}")
        return 0
    from tools.fuzz.families import generate  # (the campaign process itself imports no torch)

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    state = out / "campaign.jsonl"
    seeds = range(args.seed, args.seed + args.n)
    backends = args.backend or ["eager", "aot_eager"]
    wanted = [(s, b) for s in seeds
              for b in backends + (["inductor"] if args.inductor_every and s % args.inductor_every == 0 else [])]
    done = _done(state)
    todo: dict[int, list[str]] = {}
    for s, b in wanted:
        if (s, b) not in done:
            todo.setdefault(s, []).append(b)
    tasks = [{"seed": s, "backends": bs, "kind": generate(s, args.kind)[0], "out": str(out),
              "timeout": {b: args.timeout * (2 if b == "inductor" else 1) for b in bs},
              "minimize_s": {b: 120 if b == "inductor" else 300 for b in bs}}
             for s, bs in todo.items()]
    start = time.monotonic()
    runs = sum(len(bs) for bs in todo.values())
    print(f"{len(wanted)} runs wanted, {len(wanted) - runs} already in {state}; running {runs} "
          f"({len(tasks)} programs) on {args.workers} workers", flush=True)
    run_campaign(tasks, args.workers, out, state)
    done = _done(state)
    results = [done[k] for k in wanted if k in done]
    print(f"\n{len(results)} runs ({len(set(s for s, _ in wanted))} programs) in {time.monotonic() - start:.0f} s")
    print(table(results))
    return 1 if any(r["status"] in ("wrong", "crash", "hang") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
