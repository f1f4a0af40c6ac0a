"""Run the drop-in row scripts (``tests/dropin/*.py``) under plain torch.compile
and under ``bytegraph run``, each in a process of its own, and compare what they print.

Each row script uses torch.compile's user surface the way a program written for
torch.compile does; ``python ROW.py`` is torch.compile's answer and ``bytegraph run
ROW.py`` is bytegraph's. The printed results and the graph count (``graphs: N``, from
the counting backend of ``tests/dropin/rowlib.py``) must agree, and so must the exit status.

Usage::

    python tools/dropin_rows.py --record          # run torch.compile, rewrite tests/dropin/expected.json
    python tools/dropin_rows.py [ROW ...]          # compare bytegraph run against the recorded answers
    python tools/dropin_rows.py --live [ROW ...]   # compare against torch.compile run now

``tests/test_dropin.py`` runs the comparison against the recorded answers (quick
tier) and against live torch.compile runs (slow tier).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
ROWS = ROOT / "tests" / "dropin"
EXPECTED = ROWS / "expected.json"
#: environment of every row run: the script's folder on the path (rowlib), no user logging settings
ENV_DROP = ("TORCH_LOGS", "TORCH_COMPILE_DEBUG", "BYTEGRAPH_LOGS")


def row_names() -> list[str]:
    """Every row script, by name (``mark_dynamic`` for ``tests/dropin/mark_dynamic.py``)."""
    return sorted(p.stem for p in ROWS.glob("*.py") if p.stem != "rowlib")


def run_row(name: str, frontend: str, timeout: float = 300) -> dict:
    """``{"rc": exit status, "stdout": lines}`` of row ``name`` run by ``frontend``
    (``"torch"``: ``python ROW.py``; ``"bytegraph"``: ``python -m bytegraph run ROW.py``)."""
    script = str(ROWS / f"{name}.py")
    env = {k: v for k, v in os.environ.items() if k not in ENV_DROP}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env.update(_row_env(name))
    command = [sys.executable, script] if frontend == "torch" else [sys.executable, "-m", "bytegraph", "run", script]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, cwd=str(ROWS))
    return {"rc": done.returncode, "stdout": done.stdout.splitlines(), "stderr": done.stderr}


def _row_env(name: str) -> dict[str, str]:
    """Environment variables a row sets (a ``# env: NAME=VALUE`` first line)."""
    first = (ROWS / f"{name}.py").read_text().splitlines()[:1]
    if first and first[0].startswith("# env: "):
        key, _, value = first[0][len("# env: "):].partition("=")
        return {key.strip(): value.strip()}
    return {}


def answer(result: dict) -> dict:
    """What a row's two runs must agree on: exit status and standard output."""
    return {"rc": result["rc"], "stdout": result["stdout"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="*", help="row names (default: all)")
    parser.add_argument("--record", action="store_true", help="run torch.compile and rewrite expected.json")
    parser.add_argument("--live", action="store_true", help="compare against torch.compile run now")
    args = parser.parse_args(argv)
    names = args.rows or row_names()
    if args.record:
        recorded = json.loads(EXPECTED.read_text()) if EXPECTED.exists() and args.rows else {}
        for name in names:
            recorded[name] = answer(run_row(name, "torch"))
            print(f"{name}: rc {recorded[name]['rc']}, {recorded[name]['stdout'][-1:]}")
        EXPECTED.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n")
        return 0
    recorded = {} if args.live else json.loads(EXPECTED.read_text())
    failed = 0
    for name in names:
        want = answer(run_row(name, "torch")) if args.live else recorded[name]
        got = run_row(name, "bytegraph")
        same = answer(got) == want
        failed += not same
        print(f"{'ok  ' if same else 'DIFF'} {name}")
        if not same:
            print(f"     torch.compile: {want}\n     bytegraph:     {answer(got)}\n{got['stderr'][-2000:]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
