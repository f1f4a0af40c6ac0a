"""A campaign worker (``python -m tools.fuzz.worker FD``): reads tasks (one
JSON object a line: seed, backend, output folder) on stdin, runs each program
eagerly and compiled, minimises a failure into the output folder, and answers
one JSON line per task on file descriptor FD (stdout and stderr, where
programs, torch and bytegraph print, go to the worker's log)."""
from __future__ import annotations

import json
import os
import pathlib
import sys
import time

from tools.fuzz.differential import compare, eager_is_deterministic, run_once, silence, verdict
from tools.fuzz.families import generate
from tools.fuzz.harness import Raised
from tools.fuzz.minimize import minimize
from tools.fuzz.program import render


def main(answers_fd: int) -> None:
    answers = os.fdopen(answers_fd, "w")
    for line in sys.stdin:
        task = json.loads(line)
        seed, backend, out = task["seed"], task["backend"], pathlib.Path(task["out"])
        start = time.monotonic()
        kind, parts = generate(seed)
        source = render(parts)
        answer = {"seed": seed, "backend": backend, "kind": kind}
        with silence():
            eager = run_once(source, None)
            answer["eager_runs"] = eager.error is None and not _raised_anywhere(eager.record)
            if not eager_is_deterministic(source):
                answer.update(status="flaky", diff="eager runs differ")
            else:
                diff = compare(source, backend)
                answer.update(status=verdict(diff), diff=diff)
                if diff is not None:
                    small = minimize(parts, backend, diff, budget_s=task.get("minimize_s", 300))
                    out.mkdir(parents=True, exist_ok=True)
                    path = out / f"seed{seed}-{backend}.py"
                    path.write_text(f"# {kind} seed {seed}, backend {backend}: {diff}\n" + render(small))
                    answer["file"] = str(path)
        answer["seconds"] = round(time.monotonic() - start, 2)
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


def _raised_anywhere(record: object) -> bool:
    """Whether a call recorded in ``record`` raised (eager did not run it through)."""
    if isinstance(record, Raised):
        return True
    if isinstance(record, dict):
        return any(_raised_anywhere(v) for v in record.values())
    if isinstance(record, (list, tuple)):
        return any(_raised_anywhere(v) for v in record)
    return False


if __name__ == "__main__":
    main(int(sys.argv[1]))
