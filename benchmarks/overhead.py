"""Trace time and per-call overhead of bytegraph vs torch.compile, same run.

For each workload, both frontends compile with backend ``eager`` (so the graph
runs the same code and the difference is the frontend). Printed per frontend:

- cold: seconds of the first call (tracing + guards + codegen), minus one
  eager call; each frontend first compiles a two-op function, so one-time
  start-up (torch loading its compiler modules) is charged to neither;
- overhead: median per-call time minus eager's median, in microseconds
  (guards, dispatch, argument loading).

Usage: ``python -m benchmarks.overhead [--repeat N]``.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

import torch
import torch.nn as nn

import bytegraph


def _median_call_us(fn: Callable, args: tuple, repeat: int) -> float:
    """Median wall time of one call, in microseconds (calls are batched per sample)."""
    inner = 50
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn(*args)
        samples.append((time.perf_counter() - start) / inner * 1e6)
    return statistics.median(samples)


def _cold_s(fn: Callable, args: tuple) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def elementwise() -> tuple[Callable, tuple]:
    def f(x, y):
        return (x * y + 1).relu()

    return f, (torch.randn(8, 8), torch.randn(8, 8))


def mlp_100_params() -> tuple[Callable, tuple]:
    layers = []
    for _ in range(50):
        layers += [nn.Linear(16, 16), nn.ReLU()]
    model = nn.Sequential(*layers).eval()
    return model, (torch.randn(4, 16),)


def transformer_encoder() -> tuple[Callable, tuple]:
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    return model, (torch.randn(4, 16, 64),)


WORKLOADS: dict[str, Callable[[], tuple[Callable, tuple]]] = {
    "2-tensor elementwise fn": elementwise,
    "MLP, 100 parameters": mlp_100_params,
    "TransformerEncoder (2 layers)": transformer_encoder,
}


def measure(name: str, build: Callable[[], tuple[Callable, tuple]], repeat: int) -> list[dict[str, Any]]:
    rows = []
    torch.manual_seed(0)
    fn, args = build()
    eager_us = _median_call_us(fn, args, repeat)
    eager_once = eager_us / 1e6
    frontends = {
        "bytegraph": lambda: bytegraph.compile(fn, backend="eager"),
        "torch.compile": lambda: torch.compile(fn, backend="eager"),
    }
    for frontend, make in frontends.items():
        compiled = make()
        cold = _cold_s(compiled, args) - eager_once
        per_call = _median_call_us(compiled, args, repeat)
        out, ref = compiled(*args), fn(*args)
        rows.append({
            "workload": name, "frontend": frontend, "eager_us": eager_us, "cold_s": cold,
            "overhead_us": per_call - eager_us, "max_abs_diff": (out - ref).abs().max().item(),
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="timing samples per measurement")
    ns = parser.parse_args()
    torch.set_num_threads(1)
    for start_up in (bytegraph.compile, torch.compile):
        start_up(lambda x: (x + 1).relu(), backend="eager")(torch.randn(4))
    rows = []
    for name, build in WORKLOADS.items():
        rows += measure(name, build, ns.repeat)
    print(f"torch {torch.__version__}, backend=eager, {ns.repeat} samples x 50 calls, 1 thread\n")
    print("| workload | frontend | eager call (µs) | cold first call (s) | overhead per call (µs) | max abs diff |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['workload']} | {r['frontend']} | {r['eager_us']:.1f} | {r['cold_s']:.3f} | "
              f"{r['overhead_us']:.1f} | {r['max_abs_diff']:.1e} |")


if __name__ == "__main__":
    main()
