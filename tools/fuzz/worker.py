"""A campaign worker (``python -m tools.fuzz.worker FD``): reads tasks on
stdin (one JSON object a line: a program's seed, the backends it runs on, the
output folder), runs each program eagerly twice (its record, and whether eager
is deterministic) and then compiled on each backend in turn, compared with
that eager record; minimises a wrong result or a crash into the output
folder, and answers one JSON line per backend on file descriptor FD as soon
as that backend is done (stdout and stderr, where programs, torch and
bytegraph print, go to the worker's log). A worker runs task after task: the
campaign replaces one that dies or hangs, and gives the backends of its task
left unanswered to the next."""
from __future__ import annotations

import json
import os
import pathlib
import sys
import time

from tools.fuzz.differential import eager_is_deterministic, raised_anywhere, run_once, signature, silence, verdict
from tools.fuzz.families import generate
from tools.fuzz.minimize import minimize
from tools.fuzz.program import render


def main(answers_fd: int) -> None:
    answers = os.fdopen(answers_fd, "w")
    for line in sys.stdin:
        task = json.loads(line)
        seed, out = task["seed"], pathlib.Path(task["out"])
        start = time.monotonic()
        kind, parts = generate(seed, task["kind"])  # (the family the seed draws, unless the campaign chose one)
        source = render(parts)
        with silence():
            eager = run_once(source, None)
            eager_runs = not raised_anywhere(eager)
            deterministic = eager_is_deterministic(source, eager)
        for backend in task["backends"]:
            answer = {"seed": seed, "backend": backend, "kind": kind, "eager_runs": eager_runs}
            if not deterministic:
                answer.update(status="flaky", diff="eager runs differ")
            else:
                with silence():
                    diff, reruns = signature(source, backend, eager)
                answer.update(status=verdict(diff, reruns), diff=diff if diff or not reruns else f"reran {list(reruns)}")
                if answer["status"] in ("wrong", "crash", "rerun"):  # (a refusal is torch.compile's answer too)
                    with silence():
                        small = minimize(parts, backend, diff, reruns=answer["status"] == "rerun",
                                         budget_s=task["minimize_s"][backend])
                    out.mkdir(parents=True, exist_ok=True)
                    path = out / f"seed{seed}-{backend}.py"
                    path.write_text(f"# {kind} seed {seed}, backend {backend}: {answer['diff']}\n" + render(small))
                    answer["file"] = str(path)
            answer["seconds"] = round(time.monotonic() - start, 2)  # (the first backend's include eager's runs)
            answers.write(json.dumps(answer) + "\n")
            answers.flush()
            start = time.monotonic()


if __name__ == "__main__":
    main(int(sys.argv[1]))
