"""One measurement: one corpus model under one frontend, in its own process.

``python -m benchmarks.worker MODEL FRONTEND --backend eager --result OUT.json``
is what ``benchmarks.compare`` runs for each model and frontend (``bytegraph``
or ``torch.compile``). The protocol, identical for both frontends:

0. warm up the frontend: compile and call a two-op function, so one-time
   costs (lazy imports, first FakeTensorMode) are not charged to the model;
1. build the model (seed 0) and an eager twin (``copy.deepcopy``); run eager
   to get the reference outputs and the eager time per call;
2. **cold call**: compile, first call on ``inputs``; wall time minus one eager
   call is the cold trace time; peak RSS growth during the call (``VmHWM``
   reset through ``/proc/self/clear_refs``) is the compile's peak memory;
   graphs, ops and graph breaks are read from the frontend's own records;
3. correctness: max abs difference vs eager (outputs, or loss and parameter
   gradients for training entries);
4. second call, same inputs (must not recompile); then warm timing:
   compiled and eager steps in adjacent pairs of samples, ``vs_eager_us`` =
   median of the paired differences (negative when the graph runs faster
   than the Python it replaced); then the frontend's own time per compiled
   forward call, ``frontend_us``: call time minus time inside the backend's
   graphs (every graph the backend returns is timed, :class:`GraphTimer`);
5. third call on ``inputs2`` (another shape): recompiles counted over the
   three calls, with reasons (recompiles during the warm calls, which repeat
   identical inputs, are counted apart: ``recompiles_warm``); its output is
   compared with eager too.

A failure in any phase is recorded (phase, exception, traceback) with what
was measured before it; the result file is always written. The benchmark
never imports ``torch._dynamo`` in the bytegraph process (``import bytegraph``
does, through ``torch._functorch.aot_autograd``: see ``dynamo_imported`` in
the result); each frontend is imported before measuring, so no cold time
includes importing it.
"""
from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import platform
import re
import statistics
import sys
import time
import traceback
from typing import Any, Callable

import torch

from benchmarks.models import MODELS, Case, Entry, all_close, max_abs_diff, run_step
from benchmarks.report import short_path

FRONTENDS = ("bytegraph", "torch.compile")


# ---- frontend adapters: compile, and read what was compiled ---------------------------------

def _loc(filename: str, lineno: Any, name: str) -> str:
    return f"{short_path(filename)}:{lineno} in {name}"


class GraphTimer:
    """Wraps a backend: each compiled graph it returns is timed, so per-call
    frontend time = call time - time inside graphs. Attribute reads go to the
    wrapped backend (torch.compile asks inductor's wrapper for its config)."""

    def __init__(self, inner: Callable):
        self.inner = inner
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        fn = self.inner(gm, example_inputs)
        timer = self

        def timed(*args: Any, **kwargs: Any) -> Any:  # boxed or not: the arguments pass through unchanged
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                timer.seconds += time.perf_counter() - start

        if hasattr(fn, "_boxed_call"):
            timed._boxed_call = fn._boxed_call  # type: ignore[attr-defined]
        return timed


class BytegraphFrontend:
    """bytegraph, read through ``bytegraph.runtime.metrics.FRAMES``."""

    name = "bytegraph"

    def __init__(self) -> None:
        import bytegraph
        from bytegraph.runtime import metrics

        self.bytegraph, self.metrics = bytegraph, metrics

    def backend(self, name: str) -> Callable:
        from bytegraph.backends.registry import lookup_backend

        return lookup_backend(name)

    def compile(self, model: Callable, backend: Callable) -> Callable:
        return self.bytegraph.compile(model, backend=backend)

    def reset_records(self) -> None:
        self.metrics.reset()

    def snapshot(self) -> dict[str, Any]:
        frames = list(self.metrics.FRAMES.values())
        breaks = []
        for s, b in self.metrics.distinct_breaks(frames):
            where = b.user_stack[-1] if b.user_stack else None
            location = _loc(where.filename, where.lineno, where.name) if where else "<unknown>"
            context = b.reason[len(b.gb_type) + 2:] if b.reason.startswith(b.gb_type + ": ") else b.reason
            context = re.sub(r" \([^()]*:\d+\)$", "", context)  # the location is reported separately
            breaks.append({
                "gb_type": b.gb_type, "reason": context, "location": location, "frame": s.name,
                "stack": [_loc(f.filename, f.lineno, f.name) for f in b.user_stack],
            })
        return {
            "graphs": sum(len(s.graphs) for s in frames),
            "ops": sum(g.op_count for s in frames for g in s.graphs),
            "breaks": breaks,
            "recompile_reasons": [f"{s.name}: {r}" for s in frames for r in s.recompile_reasons],
            "native_frames": [s.name for s in frames if s.ran_natively],
            "frames": len(frames),
            "trace_s": sum(s.trace_seconds for s in frames),
        }


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class TorchCompileFrontend:
    """torch.compile (TorchDynamo), read through its own records: graph and op
    counts from ``torch._dynamo.utils.counters["stats"]``; graph breaks from
    ``InstructionTranslatorBase.log_graph_break`` (every break that resumes, with
    its exception: gb_type, message, user stack); frames it gave up on ("skip
    frame") from ``torch._dynamo.convert_frame``'s log; recompile reasons from
    the ``recompiles`` log."""

    name = "torch.compile"

    def __init__(self) -> None:
        import torch._dynamo
        import torch._dynamo.convert_frame
        import torch._dynamo.symbolic_convert as sc
        from torch._dynamo.utils import counters

        self.counters = counters
        self.break_excs: list[Any] = []
        original = sc.InstructionTranslatorBase.log_graph_break
        seen = self.break_excs

        def log_graph_break(tx: Any, code_options: Any, reason: str, exc: Any) -> None:
            if not getattr(exc, "logged", False):
                seen.append(exc)
            return original(tx, code_options, reason, exc)

        sc.InstructionTranslatorBase.log_graph_break = log_graph_break
        torch._logging.set_logs(recompiles=True)
        self.recompiles = _Records()
        logging.getLogger("torch._dynamo.guards.__recompiles").addHandler(self.recompiles)
        self.skips = _Records()
        skip_log = logging.getLogger("torch._dynamo.convert_frame")
        skip_log.setLevel(logging.INFO)
        skip_log.addHandler(self.skips)

    def backend(self, name: str) -> Callable:
        """What ``torch.compile(backend=name)`` would use."""
        if name == "inductor":
            return torch._TorchCompileInductorWrapper(None, None, None)
        from torch._dynamo.backends.registry import lookup_backend

        return lookup_backend(name)

    def compile(self, model: Callable, backend: Callable) -> Callable:
        return torch.compile(model, backend=backend)

    def reset_records(self) -> None:
        self.counters.clear()
        self.break_excs.clear()
        self.recompiles.records.clear()
        self.skips.records.clear()

    @staticmethod
    def _describe(exc: Any) -> tuple[str, str, list[str]]:
        msg = str(getattr(exc, "msg", exc))
        first_line = msg.splitlines()[0].strip() if msg.strip() else type(exc).__name__
        gb_type = getattr(exc, "gb_type", None) or first_line
        context = re.search(r"Developer debug context: (.*)", msg)
        reason = context.group(1).strip() if context else first_line
        stack = [_loc(f.filename, f.lineno, f.name) for f in (getattr(exc, "real_stack", None) or [])]
        return gb_type, reason, stack

    def snapshot(self) -> dict[str, Any]:
        skip_excs = [r.exc_info[1] for r in self.skips.records if r.exc_info and r.levelno >= logging.INFO]
        skip_ids = {id(e) for e in skip_excs}
        excs = self.break_excs + [e for e in skip_excs if all(e is not b for b in self.break_excs)]
        breaks, skipped = [], []
        for exc in excs:
            gb_type, reason, stack = self._describe(exc)
            skip = id(exc) in skip_ids  # the frame fell back to eager entirely
            breaks.append({"gb_type": gb_type, "reason": ("skipped frame: " if skip else "") + reason,
                           "location": stack[-1] if stack else "<unknown>", "frame": "", "stack": stack,
                           "skip": skip})
            if skip:
                skipped.append(gb_type)
        reasons = []
        for rec in self.recompiles.records:
            text = rec.getMessage()
            head = re.match(r"Recompiling function (\S+)", text)
            for line in re.findall(r"- \d+/\d+: (.*)", text):
                reasons.append(f"{head.group(1) if head else '?'}: {line.strip()}")
        stats = self.counters["stats"]
        return {
            "graphs": int(stats["unique_graphs"]),
            "ops": int(stats["calls_captured"]),
            "breaks": breaks,
            "recompile_reasons": reasons,
            "native_frames": skipped,
            "frames": int(self.counters["frames"]["total"]),
            "trace_s": None,
        }


# ---- measurement ----------------------------------------------------------------------------

def _rss_kb() -> tuple[int, int] | None:
    """(VmRSS, VmHWM) in kB, or None off Linux."""
    try:
        with open("/proc/self/status") as f:
            text = f.read()
    except OSError:
        return None
    get = lambda key: int(re.search(key + r":\s+(\d+)", text).group(1))  # noqa: E731
    return get("VmRSS"), get("VmHWM")


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _time_once(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def _paired_us(eager: Callable[[], Any], compiled: Callable[[], Any], inner: int, repeat: int) -> dict[str, float]:
    """Per-call microseconds of ``eager`` and ``compiled``, sampled in adjacent
    pairs (order alternating) so load changes on the machine hit both alike.

    Returns medians of each, the median of the paired differences and half
    the interquartile range of those differences (the machine's noise).
    """
    pairs = []
    for n in range(repeat):
        sample = {}
        for name, fn in (("e", eager), ("c", compiled)) if n % 2 == 0 else (("c", compiled), ("e", eager)):
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            sample[name] = (time.perf_counter() - start) / inner * 1e6
        pairs.append(sample)
    diffs = sorted(p["c"] - p["e"] for p in pairs)
    q1, _, q3 = statistics.quantiles(diffs, n=4) if len(diffs) > 1 else (diffs[0], 0, diffs[0])
    return {
        "eager_us": statistics.median(p["e"] for p in pairs),
        "compiled_us": statistics.median(p["c"] for p in pairs),
        "vs_eager_us": statistics.median(diffs),
        "vs_eager_noise_us": (q3 - q1) / 2,
    }


def _twin(case: Case) -> Case:
    twin = copy.copy(case)
    twin.model = copy.deepcopy(case.model)
    return twin


def _warm_up(frontend: Any, backend: Callable) -> float:
    """Compile and call a two-op function once: the frontend's one-time costs
    (lazy imports, first FakeTensorMode...) are paid here, not by the model."""
    def warm_up_fn(x):
        return (x * 2).sin()

    start = time.perf_counter()
    frontend.compile(warm_up_fn, backend)(torch.randn(4))
    return time.perf_counter() - start


def _frontend_us(compiled: Callable, case: Case, timer: GraphTimer, inner: int, repeat: int) -> dict[str, float]:
    """Per compiled forward call: total time and the time outside the backend's
    graphs (guards, dispatch, argument loading, output reconstruction, and any
    code run natively between graphs). Training entries: forward only."""
    totals, outside = [], []
    args, kwargs = case.inputs.args, case.inputs.kwargs
    with torch.set_grad_enabled(case.training):
        for _ in range(repeat):
            graph_before = timer.seconds
            start = time.perf_counter()
            for _ in range(inner):
                compiled(*args, **kwargs)
            total = time.perf_counter() - start
            totals.append(total / inner * 1e6)
            outside.append((total - (timer.seconds - graph_before)) / inner * 1e6)
    q1, _, q3 = statistics.quantiles(outside, n=4) if len(outside) > 1 else (outside[0], 0, outside[0])
    return {"forward_us": statistics.median(totals), "frontend_us": statistics.median(outside),
            "frontend_noise_us": (q3 - q1) / 2}


def measure(entry: Entry, frontend_name: str, backend: str, repeat: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "model": entry.name, "frontend": frontend_name, "backend": backend, "status": "ok",
        "description": entry.description, "error": None, "error_phase": None, "traceback": None,
    }
    phase = "setup"
    try:
        missing = entry.missing()
        if missing:
            result.update(status="skipped", error=f"missing module(s): {', '.join(missing)}", error_phase=phase)
            return result
        frontend = BytegraphFrontend() if frontend_name == "bytegraph" else TorchCompileFrontend()
        phase = "warm-up"
        result["init_s"] = _warm_up(frontend, frontend.backend(backend))
        frontend.reset_records()

        phase = "build"
        case = entry.build()
        eager = _twin(case)
        result["training"] = case.training
        result["inputs"], result["inputs2"] = case.inputs.describe(), case.inputs2.describe()
        expected = run_step(eager, eager.model, case.inputs)
        expected2 = run_step(eager, eager.model, case.inputs2)
        eager_once = min(_time_once(lambda: run_step(eager, eager.model, case.inputs))[0] for _ in range(3))
        eager2_once = min(_time_once(lambda: run_step(eager, eager.model, case.inputs2))[0] for _ in range(3))
        result["eager_ms"] = eager_once * 1e3

        phase = "compile"
        timer = GraphTimer(frontend.backend(backend))
        compiled = frontend.compile(case.model, timer)
        phase = "cold call"
        before = _rss_kb()
        can_peak = _reset_peak_rss()
        seconds, out = _time_once(lambda: run_step(case, compiled, case.inputs))
        after = _rss_kb()
        result["cold_s"] = seconds - eager_once
        if before and after:
            result["rss_retained_mb"] = (after[0] - before[0]) / 1024
            result["rss_peak_mb"] = (after[1] - before[0]) / 1024 if can_peak else None
        first = frontend.snapshot()
        result.update({f"first_{k}": v for k, v in first.items()})
        result.update(graphs=first["graphs"], ops=first["ops"], breaks=len(first["breaks"]))

        phase = "compare"
        result["max_abs_diff"] = max_abs_diff(out, expected)
        result["correct"] = all_close(out, expected, case.atol, case.rtol)

        phase = "second call"
        out = run_step(case, compiled, case.inputs)
        result["max_abs_diff_call2"] = max_abs_diff(out, expected)
        result["correct"] = result["correct"] and all_close(out, expected, case.atol, case.rtol)
        after_call2 = len(frontend.snapshot()["recompile_reasons"])
        result["recompiles_call1"] = len(first["recompile_reasons"])
        result["recompiles_call2"] = after_call2 - result["recompiles_call1"]

        phase = "warm timing"
        inner = max(1, min(200, int(0.02 / max(eager_once, 1e-6))))
        result.update(_paired_us(lambda: run_step(eager, eager.model, case.inputs),
                                 lambda: run_step(case, compiled, case.inputs), inner, repeat))
        result.update(_frontend_us(compiled, case, timer, inner, repeat))
        result["timing"] = f"{repeat} samples x {inner} calls"
        after_warm = len(frontend.snapshot()["recompile_reasons"])
        result["recompiles_warm"] = after_warm - after_call2

        phase = "shape change"
        seconds, out = _time_once(lambda: run_step(case, compiled, case.inputs2))
        result["recompile_s"] = seconds - eager2_once
        result["max_abs_diff_shape_change"] = max_abs_diff(out, expected2)
        result["correct"] = result["correct"] and all_close(out, expected2, case.atol, case.rtol)
        last = frontend.snapshot()
        result.update({f"total_{k}": v for k, v in last.items()})
        result["recompiles_shape_change"] = len(last["recompile_reasons"]) - after_warm
        # over the three calls of the protocol; recompiles during the warm calls are kept apart
        result["recompiles"] = len(last["recompile_reasons"]) - result["recompiles_warm"]
        if not result["correct"]:
            result["status"] = "wrong"
    except BaseException as exc:  # noqa: BLE001  (report every failure, never abort)
        result.update(status="error", error=f"{type(exc).__name__}: {exc}"[:2000], error_phase=phase,
                      traceback=traceback.format_exc()[-6000:])
        try:
            snap = frontend.snapshot()  # type: ignore[possibly-undefined]
            result.update({f"total_{k}": v for k, v in snap.items()})
            result.setdefault("graphs", snap["graphs"])
            result.setdefault("breaks", len(snap["breaks"]))
            result.setdefault("first_breaks", snap["breaks"])
            result.setdefault("first_native_frames", snap["native_frames"])
        except Exception:  # noqa: BLE001
            pass
    return result


def zoo_versions() -> dict[str, str]:
    """Installed version of each distribution the zoo's entries require."""
    from importlib.metadata import PackageNotFoundError, packages_distributions, version

    dists = packages_distributions()
    versions = {}
    for module in sorted({m for e in MODELS.values() for m in e.requires}):
        for dist in dists.get(module, [module]):
            try:
                versions[dist] = version(dist)
            except PackageNotFoundError:
                pass
    return versions


def environment() -> dict[str, Any]:
    """Versions and machine, for the report header."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = re.findall(r"model name\s*:\s*(.*)", f.read())
        cpu = names[0].strip() if names else cpu
    except OSError:
        pass
    versions = {"python": platform.python_version(), "torch": torch.__version__, "libraries": zoo_versions()}
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(), "threads": torch.get_num_threads(),
            **versions}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one model, one frontend (run by benchmarks.compare)")
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("frontend", choices=FRONTENDS)
    parser.add_argument("--backend", default="eager")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--result", required=True, help="where to write the JSON result")
    ns = parser.parse_args(argv)
    torch.set_num_threads(ns.threads)
    result = measure(MODELS[ns.model], ns.frontend, ns.backend, ns.repeat)
    result["env"] = environment()
    result["dynamo_imported"] = "torch._dynamo" in sys.modules
    with open(ns.result, "w") as f:
        json.dump(result, f, indent=1, default=str)
    print(json.dumps({k: result.get(k) for k in ("model", "frontend", "status", "error", "graphs", "breaks",
                                                 "recompiles", "cold_s", "frontend_us", "max_abs_diff")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
