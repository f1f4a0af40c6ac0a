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
tier: the rows run in the test's process, with torch's entry points served as
``bytegraph run`` serves them, :func:`run_row_here`) and against live
torch.compile runs (slow tier: both sides in processes of their own).
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import io
import json
import os
import pathlib
import runpy
import subprocess
import sys
import traceback
import warnings

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


def run_row_here(name: str) -> dict:
    """``{"rc", "stdout"}`` of row ``name`` run in this process as ``bytegraph run``
    runs it (torch's entry points served by bytegraph), leaving torch's settings,
    the stance and bytegraph's caches as they were."""
    import torch
    import torch._dynamo

    import bytegraph
    from bytegraph.dropin import serving_torch_compile

    settings = torch._dynamo.config
    changed_before = {k for k in settings._config if not settings._is_default(k)}
    stance = torch._dynamo.eval_frame._stance
    out, rc = io.StringIO(), 0
    sys.path.insert(0, str(ROWS))
    sys.modules.pop("rowlib", None)
    try:
        with contextlib.redirect_stdout(out), serving_torch_compile(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                runpy.run_path(str(ROWS / f"{name}.py"), run_name="__main__")
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else int(e.code is not None)
            except Exception:
                rc = 1
                traceback.print_exc(file=sys.stderr)
            rowlib = sys.modules.get("rowlib")
            if rowlib is not None:
                atexit.unregister(rowlib.report)
                rowlib.report()
    finally:
        sys.path.remove(str(ROWS))
        sys.modules.pop("rowlib", None)
        for key in [k for k in settings._config if not settings._is_default(k)]:
            if key not in changed_before:
                unset_torch_setting(key)
        torch._dynamo.eval_frame._set_stance(stance)
        bytegraph.reset()
    return {"rc": rc, "stdout": out.getvalue().splitlines()}


def unset_torch_setting(name: str) -> None:
    """Put ``torch._dynamo.config.<name>`` back to never having been set (``del``
    resets it but also hides it; unhide it)."""
    import torch._dynamo

    delattr(torch._dynamo.config, name)
    torch._dynamo.config._config[name].hide = False


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
