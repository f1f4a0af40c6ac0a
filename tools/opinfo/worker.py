"""One sweep process: runs cases under one frontend and prints one JSON line per result.

``python -m tools.opinfo.worker --frontend bytegraph|torch --backends eager,aot_eager
--timeout S < cases`` reads cases, one ``NAME<TAB>VARIANT`` a line (an OpInfo full name and
one of ``cases.VARIANTS``), and for each prints ``{"start": [name, variant]}``, one result line per
backend (see :func:`run_case`) and ``{"end": [name, variant]}``, so the driver knows which
case a crash or a hang stopped at.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import warnings
from typing import Any

import torch

from tools.opinfo import cases
from tools.opinfo.frontends import BACKENDS, FRONTENDS, load


#: what a compiled run of a case can come to (see :func:`compiled_outcome`; the driver adds the last two)
OUTCOMES = ("captured", "raises", "wrong", "break", "error", "timeout", "crash")
#: the outcomes that do what eager does
SUCCESS = ("captured", "raises")


class Timeout(BaseException):
    """The case ran past its time (a BaseException, so no ``except Exception`` inside a frontend swallows it)."""


def _alarm(signum: int, frame: Any) -> None:
    raise Timeout()


def compiled_outcome(frontend: Any, case: cases.Case, backend: str) -> dict:
    """Run ``case`` compiled under ``frontend`` with ``backend`` and judge it against eager:
    ``captured`` (compiled whole and equal to eager), ``raises`` (raised the exception type
    eager raises), ``wrong`` (compiled whole, differs), ``break`` (a graph break under
    fullgraph) or ``error`` (an exception eager does not raise)."""
    if case.error is None:
        eager_args, eager_kwargs = case.fresh()
        expected = cases.run(case.fn, eager_args, eager_kwargs)
    args, kwargs = case.fresh()
    compiled, counter = frontend.compile(case.fn, backend)
    try:
        torch.manual_seed(0)
        actual = compiled(*args, **kwargs)
    except Timeout:
        raise
    except Exception as e:  # noqa: BLE001 - every failure is a result of the sweep
        if type(e).__name__ == case.error:
            return {"outcome": "raises", "reason": f"{case.error}, as eager", "graphs": counter.graphs}
        return {**frontend.describe(e), "graphs": counter.graphs}
    if case.error is not None:
        return {"outcome": "wrong", "reason": f"returned where eager raises {case.error}", "graphs": counter.graphs}
    why = cases.judge(case, expected, (eager_args, eager_kwargs), actual, (args, kwargs), exact=backend == "eager")
    if why is not None:
        return {"outcome": "wrong", "reason": why, "graphs": counter.graphs}
    return {"outcome": "captured", "graphs": counter.graphs}


def run_case(frontend: Any, name: str, variant: str, backends: list[str], timeout: float, samples: int = 1) -> list[dict]:
    """One result per backend for OpInfo ``name`` called as ``variant`` on its first ``samples``
    samples (see ``cases.make_cases``): the outcome of the first sample that is not captured,
    else of the last; with the case's identity (``op``, ``variant``, ``dtype``, ``sample``,
    ``random``), ``backend``, ``outcome`` and, when it was not captured, ``gb_type``/``reason``/
    ``where``; ``seconds`` of CPU time. A case that cannot run is one ``skipped`` line (backend
    ``None``); an empty list: the OpInfo has no in-place variant."""
    head = {"op": name, "variant": variant}
    start = time.process_time()
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        found = cases.make_cases(name, variant, samples)
    except cases.Skip as e:
        return [] if str(e) == "no in-place variant" else [{**head, "backend": None, "outcome": "skipped", "reason": str(e)}]
    except Timeout:
        return [{**head, "backend": None, "outcome": "timeout", "reason": f"eager reference over {timeout:.0f} s"}]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    head["dtype"] = str(found[0].dtype).removeprefix("torch.")
    if found[0].error is not None:
        head["eager_raises"] = found[0].error
    head["eager_seconds"] = round(time.process_time() - start, 3)
    results = []
    for backend in backends:
        start = time.process_time()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        for case in found:
            try:
                outcome = compiled_outcome(frontend, case, backend)
            except Timeout:
                outcome = {"outcome": "timeout", "reason": f"over {timeout:.0f} s"}
            except Exception as e:  # noqa: BLE001 - eager failing on a fresh copy, a frontend's reset...
                outcome = {"outcome": "error", "reason": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
            if outcome["outcome"] not in SUCCESS:
                break
        signal.setitimer(signal.ITIMER_REAL, 0)
        results.append({**head, "sample": case.index, "random": case.random, "backend": backend, **outcome,
                        "seconds": round(time.process_time() - start, 3)})
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frontend", choices=FRONTENDS, required=True)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case and backend")
    parser.add_argument("--samples", type=int, default=1, help="samples per case (the first that eager runs)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    frontend = load(args.frontend)
    signal.signal(signal.SIGALRM, _alarm)
    out = sys.stdout
    sys.stdout = sys.stderr  # what ops and frontends print does not mix with the results
    for line in sys.stdin:
        name, variant = line.rstrip("\n").split("\t")
        print(json.dumps({"start": [name, variant]}), file=out, flush=True)
        for result in run_case(frontend, name, variant, args.backends.split(","), args.timeout, args.samples):
            print(json.dumps(result), file=out, flush=True)
        print(json.dumps({"end": [name, variant]}), file=out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
