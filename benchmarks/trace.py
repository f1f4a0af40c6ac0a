"""Trace time of the current tree against a pinned reference commit, and where it goes.

``python -m benchmarks.trace [--models a,b] [--repeat N] [--no-torch-compile]``
``python -m benchmarks.trace --profile MODEL [--top N]``

**Budget** (the default): each corpus model (``benchmarks.models.MODELS``; all
whose packages are installed unless ``--models`` picks) is compiled with backend
``eager`` by three frontends, each run in a fresh process: bytegraph at
:data:`REFERENCE` (checked out into a temporary ``git worktree`` and imported
through ``PYTHONPATH`` with the same venv), bytegraph of this tree, and
``torch.compile``. The runs are alternated (round ``i`` starts with the ``i``-th
frontend), ``--repeat`` rounds; the table holds medians. The figure is CPU time
(``time.process_time``; steadier than wall time on a shared machine) of the first
call of the compiled model, minus the CPU time of one eager call (the fastest of
three), with one thread and after the frontend's one-time start-up is paid
(a small function compiled and called so that every import a trace may need
on first use is done, then the caches reset). Printed: model,
reference seconds, current seconds, their ratio and the geometric mean of the
ratios (the budget: the current tree must not drift above the reference), then
current / torch.compile per model and its geomean (a torch.compile user's view).

**Profile** (``--profile MODEL``): one first call of ``MODEL`` under
``cProfile`` in each tree, the self time of every function summed into buckets
by the module it lives in (:data:`BUCKETS`: FakeTensor propagation, the
ShapeEnv, guard building, variable wrapping, bytecode decode and assembly,
codegen, backend hand-off...), then the cumulative time of a few entry points
and the functions with the most self time. How many traces ran with a ShapeEnv
is counted too (its constructor, called for the trace or for the backend's fake
mode). Profiled times are inflated by the profiler; read the shares.

Run as ``make bench-trace``. Times depend on the machine's load (printed with
the results); compare figures from one run only.
"""
from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
#: the commit the trace budget is measured against (main before the trace-time regression of issue 29)
REFERENCE = "9be1afd"
FRONTENDS = ("reference", "current", "torch.compile")


# ---- the child: one model, one frontend, one fresh process ------------------------------------

def _warm_up(compile_fn: Any) -> None:
    """Pay the frontend's one-time costs: lazy imports, the first FakeTensorMode,
    and what a ShapeEnv imports on first use (a captured ``.item()`` and
    ``nonzero()``, whose unbacked symbols import much of ``torch.export``, and a
    size that changes between calls), so that no model is charged for them."""
    import torch

    def warm_up_fn(x):
        y = (x * 2).sin() + x.shape[0]
        return y * y.sum().item(), (y > 0).nonzero()

    compiled = compile_fn(warm_up_fn)
    compiled(torch.randn(4))
    compiled(torch.randn(5))


def _frontend(name: str) -> tuple[Any, Any]:
    """(compile function for backend eager, reset function) of ``name``."""
    import torch

    if name == "torch.compile":
        import torch._dynamo

        return (lambda model: torch.compile(model, backend="eager")), torch._dynamo.reset
    import bytegraph

    return (lambda model: bytegraph.compile(model, backend="eager")), bytegraph.reset


def child(model: str, frontend: str, profile: str | None = None) -> dict[str, Any]:
    """Measure (or profile, into ``profile``) the first compiled call of ``model``."""
    import torch

    from benchmarks.models import MODELS, run_step

    torch.set_num_threads(1)
    compile_fn, reset = _frontend(frontend)
    _warm_up(compile_fn)
    reset()
    case = MODELS[model].build()
    run_step(case, case.model, case.inputs)  # eager's own first-call costs (kernels, allocator) paid here
    eager = []
    for _ in range(3):
        start = time.process_time()
        run_step(case, case.model, case.inputs)
        eager.append(time.process_time() - start)
    compiled = compile_fn(case.model)
    shape_envs = _count_shape_envs()
    if profile:
        import cProfile

        profiler = cProfile.Profile(time.process_time)  # CPU time: wall time on a loaded machine is mostly waiting
        start = time.process_time()
        profiler.runcall(run_step, case, compiled, case.inputs)
        cpu = time.process_time() - start
        profiler.dump_stats(profile)
    else:
        start_wall, start = time.perf_counter(), time.process_time()
        run_step(case, compiled, case.inputs)
        cpu, wall = time.process_time() - start, time.perf_counter() - start_wall
    result = {"model": model, "frontend": frontend, "first_call_cpu_s": cpu, "eager_cpu_s": min(eager),
              "trace_cpu_s": cpu - min(eager), "shape_envs": shape_envs[0]}
    if not profile:
        result["wall_s"] = wall
    return result


def _count_shape_envs() -> list[int]:
    """A one-item list counting ShapeEnv constructions from now on."""
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    count = [0]
    init = ShapeEnv.__init__

    def counting_init(self, *args, **kwargs):
        count[0] += 1
        init(self, *args, **kwargs)

    ShapeEnv.__init__ = counting_init
    return count


# ---- the parent: processes, alternation, tables -----------------------------------------------

@contextlib.contextmanager
def checkout(commit: str | None) -> Iterator[Path | None]:
    """A folder whose only entry is the ``bytegraph`` package of ``commit``, to put
    on ``PYTHONPATH``: a temporary ``git worktree`` (detached; removed after).
    None for None (this tree)."""
    if commit is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="bytegraph-ref-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), commit],
                       check=True)
        try:
            path = Path(tmp) / "path"
            path.mkdir()
            (path / "bytegraph").symlink_to(tree / "bytegraph")
            compileall.compile_dir(str(tree / "bytegraph"), quiet=1)
            yield path
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def run_child(model: str, frontend: str, trees: dict[str, Path | None], profile: str | None = None,
              timeout: float = 900) -> dict[str, Any]:
    """One child process. A checked-out tree's package comes first on the path
    (the child's working directory is an empty folder, so this tree's
    ``bytegraph`` cannot shadow it); the corpus is always this tree's."""
    tree = trees.get(frontend)
    paths = ([str(tree)] if tree is not None else []) + [str(ROOT)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    child_frontend = "bytegraph" if frontend in ("reference", "current") else frontend
    cmd = [sys.executable, "-m", "benchmarks.trace", "--child", model, child_frontend]
    if profile:
        cmd += ["--profile-out", profile]
    with tempfile.TemporaryDirectory(prefix="bench-trace-") as cwd:
        try:
            proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"model": model, "frontend": frontend, "error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"model": model, "frontend": frontend, "error": tail}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["frontend"] = frontend
    return result


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _load() -> str:
    try:
        return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"
    except OSError:
        return "load unknown"


def _fmt(value: float | None, spec: str = ".3f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def _describe(commit: str, current: str | None) -> str:
    return f"reference {commit}, current {current or 'this tree'}"


def budget(models: list[str], frontends: list[str], repeat: int, commit: str, current: str | None) -> int:
    print(f"trace time: first call CPU s minus one eager call, backend eager, 1 thread; medians of {repeat} "
          f"alternated fresh-process runs; {_describe(commit, current)}; {_load()} at start", flush=True)
    samples: dict[tuple[str, str], list[float]] = {}
    errors: dict[tuple[str, str], str] = {}
    with checkout(commit if "reference" in frontends else None) as ref_path, checkout(current) as cur_path:
        trees = {"reference": ref_path, "current": cur_path}
        compileall.compile_dir(str(ROOT / "bytegraph"), quiet=1)
        for model in models:
            for round_ in range(repeat):
                for frontend in frontends[round_ % len(frontends):] + frontends[:round_ % len(frontends)]:
                    r = run_child(model, frontend, trees)
                    if "error" in r:
                        errors[(model, frontend)] = r["error"]
                    else:
                        samples.setdefault((model, frontend), []).append(r["trace_cpu_s"])
            print(f"  {model}: " + ", ".join(
                f"{f} {_fmt(statistics.median(samples[(model, f)]) if (model, f) in samples else None)}"
                for f in frontends), flush=True)
    med = {key: statistics.median(values) for key, values in samples.items()}
    print(f"\n{_load()} at end\n")
    print("| model | reference s | current s | current / reference | torch.compile s | current / torch.compile |")
    print("|---|---:|---:|---:|---:|---:|")
    vs_ref, vs_tc = [], []
    for model in models:
        ref, cur, tc = (med.get((model, f)) for f in FRONTENDS)
        a = cur / ref if cur and ref else None
        b = cur / tc if cur and tc else None
        vs_ref.append(a)
        vs_tc.append(b)
        print(f"| {model} | {_fmt(ref)} | {_fmt(cur)} | {_fmt(a, '.2f', 'x')} | {_fmt(tc)} | {_fmt(b, '.2f', 'x')} |")
    print(f"| **geomean** | | | **{_fmt(geomean(vs_ref), '.2f', 'x')}** | | "
          f"**{_fmt(geomean(vs_tc), '.2f', 'x')}** |")
    for (model, frontend), error in errors.items():
        print(f"\n{model} / {frontend}: {error}")
    return 1 if errors else 0


# ---- profile ------------------------------------------------------------------------------------

#: (bucket, path fragments): a function's self time goes to the first bucket with a
#: fragment in its file's path (``/`` separated); anything else is "other"
BUCKETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("guard building", ("bytegraph/guards/", "/tokenize.py")),
    ("variable wrapping", ("bytegraph/variables/builder.py",)),
    ("bytecode decode/assembly", ("bytegraph/bytecode/", "/dis.py", "/bytecode/", "/opcode.py")),
    ("bytecode codegen", ("bytegraph/graph/codegen.py", "bytegraph/translator/graph_break.py")),
    ("symbolic execution (translator, variables)", ("bytegraph/translator/", "bytegraph/variables/")),
    ("graph bookkeeping (OutputGraph, side effects)", ("bytegraph/graph/",)),
    ("backend hand-off", ("bytegraph/backends/", "torch/_functorch/", "torch/_inductor/", "torch/_dynamo/backends/",
                          "torch/_guards.py")),
    ("ShapeEnv (symbolic shapes, sympy)", ("torch/fx/experimental/", "/sympy/", "torch/utils/_sympy/")),
    ("FakeTensor conversion of inputs", ("torch/_subclasses/meta_utils.py",)),
    ("FakeTensor propagation", ("torch/_subclasses/", "torch/_ops.py", "torch/_refs/", "torch/_prims",
                                "torch/_decomp/", "torch/_meta_registrations.py", "torch/utils/_python_dispatch",
                                "torch/_dispatch/", "torch/utils/_pytree.py", "torch/_library/",
                                "torch/_higher_order_ops/")),
    ("FX graph and GraphModule codegen", ("torch/fx/",)),
    ("eager run of the graph (torch.nn, kernels)", ("torch/nn/", "{method", "{built-in method torch.")),
    ("bytegraph (other)", ("bytegraph/",)),
)

#: entry points whose cumulative time the profile prints (function names; the first match of each)
ENTRY_POINTS = ("convert_frame", "build_guard_function", "_bind_globals", "decode", "assemble",
                "call_backend", "compile_subgraph", "from_tensor", "produce_guards", "rerun_natively_on_error",
                "build_module")


def bucket_of(filename: str) -> str | None:
    """The bucket of a function defined in ``filename``, or None (builtins,
    the standard library, generated code: charged to their callers)."""
    where = filename.replace(os.sep, "/")
    for bucket, fragments in BUCKETS:
        if any(f in where for f in fragments):
            return bucket
    return None


def _profile_rows(path: str) -> tuple[dict[str, float], dict[str, float], list[tuple[float, str]], float]:
    """(self time by bucket, cumulative time of :data:`ENTRY_POINTS`, (self time,
    function) largest first, total self time) of a saved profile. A function
    outside every bucket (``builtins.compile``, ``re``) is charged to the bucket of
    its caller, split by the time each caller spent in it (up the call chain
    until a caller has a bucket; "other" if none has)."""
    import pstats

    stats = pstats.Stats(path).stats
    memo: dict[tuple, str] = {}

    def resolve(func: tuple, seen: frozenset = frozenset()) -> str:
        if func in memo:
            return memo[func]
        bucket = bucket_of(func[0])
        if bucket is None:
            callers = stats.get(func, (0, 0, 0, 0, {}))[4]
            best = max((c for c in callers if c not in seen), key=lambda c: callers[c][3], default=None)
            bucket = "other" if best is None else resolve(best, seen | {func})
        memo[func] = bucket
        return bucket

    buckets: dict[str, float] = {}
    entries: dict[str, float] = {}
    selfs = []
    total = 0.0
    for func, (_cc, _nc, tottime, cumtime, callers) in stats.items():
        filename, line, function = func
        total += tottime
        if bucket_of(filename) is None and callers:
            for caller, (_c, _n, tt, _ct) in callers.items():  # split by caller
                bucket = resolve(caller)
                buckets[bucket] = buckets.get(bucket, 0.0) + tt
        else:
            bucket = resolve(func)
            buckets[bucket] = buckets.get(bucket, 0.0) + tottime
        where = filename.replace(os.sep, "/")
        if function in ENTRY_POINTS and function not in entries and (
                "bytegraph/" in where or function in ("from_tensor", "produce_guards")):
            entries[function] = cumtime
        short = where.split("site-packages/")[-1]
        short = "bytegraph/" + short.split("/bytegraph/", 1)[1] if "/bytegraph/" in short else short
        selfs.append((tottime, f"{short}:{line}({function})"))
    selfs.sort(reverse=True)
    return buckets, entries, selfs, total


def profile(model: str, frontends: list[str], commit: str, current: str | None, top: int) -> int:
    print(f"profile of the first call of {model} (backend eager, 1 thread); {_describe(commit, current)}; "
          f"{_load()}\n", flush=True)
    results, rows = {}, {}
    with checkout(commit if "reference" in frontends else None) as ref_path, checkout(current) as cur_path, \
            tempfile.TemporaryDirectory(prefix="bench-trace-prof-") as tmp:
        for frontend in frontends:
            out = str(Path(tmp) / f"{frontend}.prof")
            r = run_child(model, frontend, {"reference": ref_path, "current": cur_path}, profile=out)
            if "error" in r:
                print(f"{frontend}: {r['error']}")
                continue
            results[frontend] = r
            rows[frontend] = _profile_rows(out)
    names = [f for f in frontends if f in rows]
    label = {"reference": f"reference {commit}", "current": f"current {current or ''}".strip(),
             "torch.compile": "torch.compile"}
    print("| bucket (self time, profiled s) | " + " | ".join(label[f] for f in names) + " |")
    print("|---|" + "---:|" * len(names))
    order = [b for b, _ in BUCKETS] + ["other"]
    for bucket in order:
        cells = [f"{rows[f][0].get(bucket, 0.0):.3f} ({rows[f][0].get(bucket, 0.0) / rows[f][3]:.0%})" for f in names]
        print(f"| {bucket} | " + " | ".join(cells) + " |")
    print("| **total profiled** | " + " | ".join(f"**{rows[f][3]:.3f}**" for f in names) + " |")
    print("| first call, CPU s under the profiler | " + " | ".join(
        f"{results[f]['first_call_cpu_s']:.3f}" for f in names) + " |")
    print("| ShapeEnvs made | " + " | ".join(str(results[f]["shape_envs"]) for f in names) + " |")
    print("\n| entry point (cumulative, profiled s) | " + " | ".join(label[f] for f in names) + " |")
    print("|---|" + "---:|" * len(names))
    for entry in ENTRY_POINTS:
        print(f"| {entry} | " + " | ".join(_fmt(rows[f][1].get(entry)) for f in names) + " |")
    for f in names:
        print(f"\nmost self time, {label[f]}:")
        for seconds, where in rows[f][2][:top]:
            print(f"  {seconds:7.3f}  {where}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.trace", description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="", help="comma-separated corpus entries (default: all installed)")
    parser.add_argument("--repeat", type=int, default=3, help="alternated rounds per model (default: 3)")
    parser.add_argument("--reference", default=REFERENCE, help=f"reference commit (default: {REFERENCE})")
    parser.add_argument("--current", metavar="REV", help="measure commit REV as the current tree (default: this tree)")
    parser.add_argument("--no-torch-compile", action="store_true", help="leave torch.compile out")
    parser.add_argument("--profile", metavar="MODEL", help="profile MODEL's first call in each tree instead")
    parser.add_argument("--top", type=int, default=15, help="functions listed per profile (default: 15)")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "FRONTEND"), help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still removes its worktrees
    if ns.child:
        print(json.dumps(child(*ns.child, profile=ns.profile_out)))
        return 0
    from benchmarks.models import MODELS

    frontends = [f for f in FRONTENDS if not (ns.no_torch_compile and f == "torch.compile")]
    if ns.profile:
        if ns.profile not in MODELS:
            raise SystemExit(f"unknown model {ns.profile!r}; known: {', '.join(MODELS)}")
        return profile(ns.profile, frontends, ns.reference, ns.current, ns.top)
    if ns.models:
        models = [m.strip() for m in ns.models.split(",") if m.strip()]
        unknown = [m for m in models if m not in MODELS]
        if unknown:
            raise SystemExit(f"unknown model(s): {', '.join(unknown)}; known: {', '.join(MODELS)}")
    else:
        models = [name for name, entry in MODELS.items() if not entry.missing()]
        skipped = [name for name, entry in MODELS.items() if entry.missing()]
        if skipped:
            print(f"skipped (packages missing): {', '.join(skipped)}")
    return budget(models, frontends, ns.repeat, ns.reference, ns.current)


if __name__ == "__main__":
    sys.exit(main())
