"""Soak and load scenarios for bytegraph: long runs that must keep memory
flat, threads, fork. ``python -m tools.soak [scenario ...] [--scale F]``
(``make soak``) runs them and prints their figures; ``tests/test_soak.py``
(slow tier) runs them smaller and asserts the mechanism each one is about.

Each scenario returns a dict of figures; memory is the process's resident set
(``/proc/self/statm``), read after ``gc.collect()``. :func:`main` adds to
every scenario's figures the resident set before it and after it (and
``bytegraph.reset()``), and the growth between.
"""
from __future__ import annotations

import argparse
import gc
import io
import os
import sys
import threading
import time
import warnings
import weakref
from typing import Any, Callable

import torch

import bytegraph
from bytegraph.runtime import cache, metrics


def rss_mb() -> float:
    """Resident set size of this process, in MiB, after full collections
    until one frees nothing (the weakref callbacks of one pass, a freed
    cache's finalizer letting go of its metrics record's guards, free more in
    the next)."""
    for _ in range(10):
        if not gc.collect():
            break
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Marker:
    """An object a compiled function reads (through its globals or closure): it
    must be freed when the function is dropped."""

    def __init__(self, k: float):
        self.k = k


#: bodies of the dropped functions: each reads a global and a closure value and breaks the graph
_BODIES = [
    "y = x * box.k + {c}\n    print(file=SINK)\n    return (y + G.k).sum()",
    "y = torch.relu(x) - {c}\n    print(file=SINK)\n    return y * box.k + G.k",
    "if x.sum() > {c}:\n        x = x * 2\n    return x + box.k * G.k",
]


def _make_function(i: int) -> tuple[Callable, Marker, Marker]:
    """Function ``i``: its own code object and module globals, a closure cell and a global."""
    box, glob = Marker(2.0), Marker(0.5)
    namespace = {"torch": torch, "SINK": io.StringIO(), "G": glob}
    body = _BODIES[i % len(_BODIES)].format(c=i % 5)
    exec(f"def make(box):\n  def f{i}(x):\n    {body}\n  return f{i}\n", namespace)  # distinct code per i
    return namespace["make"](box), box, glob


def dropped_functions(n: int = 10_000, backend: str = "eager") -> dict[str, Any]:
    """Compile ``n`` distinct functions one after another, call each twice
    (a compile and a cache hit), drop it. Figures: RSS after the first tenth,
    half and all of them (bytegraph's and torch's bounded caches of decoded
    bytecode and FakeTensor dispatch fill in the first few thousand); of a
    sample of functions, how many of their objects
    (the function, a closure value, a global, the input, the compiled wrapper,
    its FrameCache) are still alive, among those older than the latest
    ``metrics.KEEP_FREED`` (whose records, kept for the report, hold what
    their guards hold: globals) and among those; what bytegraph's registries
    still hold."""
    sample: list[tuple[int, weakref.ref]] = []
    warm = half = start = rss_mb()
    t0 = time.process_time()
    for i in range(n):
        fn, box, glob = _make_function(i)
        x = torch.randn(4)
        compiled = bytegraph.compile(fn, backend=backend)
        compiled(x)
        compiled(x)
        if i % max(1, n // 50) == 0:
            sample += [(i, weakref.ref(o)) for o in (fn, box, glob, x, compiled, compiled._bytegraph_cache)]
        del fn, box, glob, x, compiled
        if i + 1 == max(1, n // 10):
            warm = rss_mb()
        if i + 1 == max(1, n // 2):
            half = rss_mb()
    end = rss_mb()
    return {"functions": n, "rss_start_mb": round(start, 1), "rss_tenth_mb": round(warm, 1),
            "rss_half_mb": round(half, 1), "rss_end_mb": round(end, 1),
            "growth_second_half_mb": round(end - half, 1),
            "sampled_objects": len(sample),
            "alive": sum(r() is not None for i, r in sample if i < n - metrics.KEEP_FREED),
            "alive_of_kept_records": sum(r() is not None for i, r in sample if i >= n - metrics.KEEP_FREED),
            "caches": len(cache._CACHES), "frame_records": len(metrics.FRAMES),
            "cpu_s": round(time.process_time() - t0, 1)}


def recompile_storm(n: int = 10_000, dynamic: bool | None = False) -> dict[str, Any]:
    """Call one compiled function with a new shape every call, ``n`` calls.
    With ``dynamic=False`` every shape is a recompile until
    ``config.recompile_limit``, then the function runs natively with one
    warning; with automatic dynamic (None) the second shape compiles a dynamic
    entry that every later call hits."""
    def storm(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * 2 + x.sum()

    compiled = bytegraph.compile(storm, backend="eager", dynamic=dynamic)
    frame_cache = compiled._bytegraph_cache
    wrong = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(n):
            x = torch.randn(i % 20_000 + 1)
            wrong += not torch.allclose(compiled(x), storm(x))
            if i == min(n - 1, 2 * config_limit() + 100):
                warm = rss_mb()
    end = rss_mb()
    limit_warnings = [w for w in caught if "recompile_limit" in str(w.message)]
    stats = metrics.FRAMES.get(id(storm.__code__))
    return {"calls": n, "dynamic": dynamic, "entries": len(frame_cache.entries), "native": frame_cache.native,
            "limit_warnings": len(limit_warnings), "recompile_records": len(stats.recompile_reasons) if stats else 0,
            "wrong": wrong, "rss_warm_mb": round(warm, 1), "rss_end_mb": round(end, 1),
            "growth_after_warm_mb": round(end - warm, 1)}


def config_limit() -> int:
    return bytegraph.config.recompile_limit


def _breaking(x: torch.Tensor, k: float) -> torch.Tensor:
    y = torch.sin(x) * k
    print(file=_SINK)
    return y.cos() + x


_SINK = io.StringIO()


def threads(n_threads: int = 8, calls: int = 1000, backend: str = "eager") -> dict[str, Any]:
    """``n_threads`` threads, started together, each call one compiled function
    (with a graph break, so a resume function compiles too) and one compiled
    module ``calls`` times, on two shapes (so misses race too); every result is
    compared with eager's, computed in the same thread."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    fn, mod = bytegraph.compile(_breaking, backend=backend), bytegraph.compile(module, backend=backend)
    barrier = threading.Barrier(n_threads)
    errors: list[str] = []
    wrong = [0]

    def work(t: int) -> None:
        barrier.wait()
        try:
            for i in range(calls):
                x = torch.randn(3 + (i + t) % 2, 4)
                with torch.no_grad():
                    same = torch.allclose(fn(x, 2.0), _breaking(x, 2.0)) and torch.allclose(mod(x), module(x))
                wrong[0] += not same
        except Exception as e:  # noqa: BLE001 (reported: a crash under threads)
            errors.append(f"{type(e).__name__}: {e}")

    workers = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    fn_entries = len(fn._bytegraph_cache.entries)
    module_entries = len(mod._compiled_call._bytegraph_cache.entries)
    return {"threads": n_threads, "calls_each": calls, "wrong": wrong[0], "errors": errors[:3],
            "error_count": len(errors), "function_entries": fn_entries, "module_entries": module_entries,
            "native": fn._bytegraph_cache.native or mod._compiled_call._bytegraph_cache.native}


def training_loop(steps: int = 5000, backend: str = "eager") -> dict[str, Any]:
    """A compiled training step (forward, loss, backward, Adam) run ``steps``
    times: RSS and the number of live tensors after the first tenth and at the end."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    compiled = bytegraph.compile(model, backend=backend)
    data, target = torch.randn(64, 16), torch.randn(64, 1)

    def step() -> float:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(compiled(data), target)
        loss.backward()
        opt.step()
        return loss.item()

    def tensors() -> int:
        return sum(isinstance(o, torch.Tensor) for o in gc.get_objects())

    losses = []
    for i in range(steps):
        losses.append(step())
        if i + 1 == max(1, steps // 10):
            warm, warm_tensors = rss_mb(), tensors()
    end, end_tensors = rss_mb(), tensors()
    return {"steps": steps, "rss_warm_mb": round(warm, 1), "rss_end_mb": round(end, 1),
            "growth_after_warm_mb": round(end - warm, 1), "tensors_warm": warm_tensors, "tensors_end": end_tensors,
            "entries": len(compiled._compiled_call._bytegraph_cache.entries),
            "loss_first": round(losses[0], 4), "loss_last": round(losses[-1], 4)}


class _Squares(torch.utils.data.Dataset):
    """Items made by a compiled function in the DataLoader's worker processes."""

    def __init__(self, fn: Callable):
        self.fn = fn

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.fn(torch.full((2 + i % 3,), float(i)))  # three shapes: the workers compile too


def _square_plus(x: torch.Tensor) -> torch.Tensor:
    y = x * x
    print(file=_SINK)
    return y + 1


def fork_after_compiling(backend: str = "eager") -> dict[str, Any]:
    """Compile and call a function, then fork: DataLoader workers
    (``num_workers=2``, ``fork``) call it, and a plain ``os.fork`` child calls
    it on a new shape; their results are compared with eager's."""
    fn = bytegraph.compile(_square_plus, backend=backend)
    fn(torch.ones(2))
    loader = torch.utils.data.DataLoader(_Squares(fn), batch_size=None, num_workers=2,
                                         multiprocessing_context="fork")
    items = list(loader)
    loader_ok = all(torch.equal(item, _square_plus(torch.full((2 + i % 3,), float(i))))
                    for i, item in enumerate(items)) and len(items) == 8
    pid = os.fork()
    if pid == 0:  # the child: a cache hit and a new shape, then exit with the verdict
        ok = torch.equal(fn(torch.ones(2)), _square_plus(torch.ones(2))) and \
            torch.equal(fn(torch.ones(5)), _square_plus(torch.ones(5)))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    return {"loader_items": len(items), "loader_ok": loader_ok,
            "fork_child_exit": os.waitstatus_to_exitcode(status), "parent_still_ok": torch.equal(
                fn(torch.ones(3)), _square_plus(torch.ones(3)))}


SCENARIOS: dict[str, tuple[Callable[..., dict], Callable[[float], dict]]] = {
    "dropped_functions": (dropped_functions, lambda s: {"n": int(10_000 * s)}),
    "recompile_storm": (recompile_storm, lambda s: {"n": int(10_000 * s)}),
    "recompile_storm_automatic_dynamic": (lambda n: recompile_storm(n, dynamic=None),
                                          lambda s: {"n": int(10_000 * s)}),
    "threads": (threads, lambda s: {"calls": max(1, int(1000 * s))}),
    "training_loop": (training_loop, lambda s: {"steps": int(5000 * s)}),
    "fork_after_compiling": (fork_after_compiling, lambda s: {}),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="*", help=f"which to run (default: all): {', '.join(SCENARIOS)}")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every scenario's length")
    args = parser.parse_args(argv)
    for name in args.scenario or SCENARIOS:
        fn, size = SCENARIOS[name]
        t0, before = time.perf_counter(), rss_mb()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            figures = fn(**size(args.scale))
        bytegraph.reset()
        after = rss_mb()
        figures.update(rss_before_mb=round(before, 1), rss_after_mb=round(after, 1),
                       rss_growth_mb=round(after - before, 1))
        print(f"{name} ({time.perf_counter() - t0:.0f} s): " + ", ".join(f"{k}={v}" for k, v in figures.items()),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
