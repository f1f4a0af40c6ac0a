"""Per-block compiled transformer: backend calls and compile time, bytegraph vs torch.compile.

``python -m benchmarks.per_block [--blocks 8,32] [--backend inductor] [--repeat N]``

The pattern of FSDP2 training scripts and of ``for layer in model.layers:
layer.compile()``: a stack of identical transformer blocks (pre-norm attention
and MLP, d=64, 4 heads), each block compiled on its own, then one training
step (forward, loss, backward) of the whole stack. Each run is a fresh process
with an empty ``TORCHINDUCTOR_CACHE_DIR``. Printed per block count and
frontend: backend calls (graphs handed to the backend: the first block's input
does not require grad and the others' do, so a frontend that compiles once per
code object calls it twice), the first step's wall and CPU seconds (the
process's own CPU: inductor's compile workers are not counted) minus one
eager step, and whether the loss and gradients match eager. Medians over
``--repeat`` alternated runs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
FRONTENDS = ("bytegraph", "torch.compile")


def make_stack(blocks: int):
    """``blocks`` identical pre-norm transformer blocks and an input (seeded)."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, d: int = 64, heads: int = 4):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
            attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))

    torch.manual_seed(0)
    return nn.ModuleList(Block() for _ in range(blocks)), torch.randn(2, 16, 64)


class CountingBackend:
    """Counts the graphs handed to ``inner``; attribute reads go to ``inner``
    (torch.compile asks inductor's wrapper for its config)."""

    def __init__(self, inner: Callable):
        self.inner = inner
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        self.calls += 1
        return self.inner(gm, example_inputs)


def child(blocks: int, frontend: str, backend: str) -> dict[str, Any]:
    import copy

    import torch

    torch.set_num_threads(1)
    stack, x = make_stack(blocks)
    eager = copy.deepcopy(stack)

    def step(layers: Any, model: Any) -> tuple[Any, list]:
        model.zero_grad(set_to_none=True)
        y = x
        for layer in layers:
            y = layer(y)
        loss = y.square().mean()
        loss.backward()
        return loss.detach(), [p.grad for p in model.parameters()]

    expected = step(eager, eager)
    start = time.perf_counter()
    step(eager, eager)
    eager_s = time.perf_counter() - start
    if frontend == "bytegraph":
        import bytegraph
        from bytegraph.backends.registry import lookup_backend

        counter = CountingBackend(lookup_backend(backend))
        compile_fn = lambda m: bytegraph.compile(m, backend=counter)  # noqa: E731
    else:
        inner = torch._TorchCompileInductorWrapper(None, None, None) if backend == "inductor" else backend
        if not callable(inner):
            from torch._dynamo.backends.registry import lookup_backend as torch_lookup

            inner = torch_lookup(inner)
        counter = CountingBackend(inner)
        compile_fn = lambda m: torch.compile(m, backend=counter)  # noqa: E731
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    compiled = [compile_fn(layer) for layer in stack]
    out = step(compiled, stack)
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    again = step(compiled, stack)
    close = all(torch.allclose(a, b, atol=1e-4, rtol=1e-4) for a, b in zip([out[0], *out[1]], [expected[0], *expected[1]]))
    close = close and all(torch.allclose(a, b, atol=1e-4, rtol=1e-4)
                          for a, b in zip([again[0], *again[1]], [expected[0], *expected[1]]))
    return {"blocks": blocks, "frontend": frontend, "backend_calls": counter.calls, "wall_s": wall - eager_s,
            "cpu_s": cpu - eager_s, "correct": bool(close)}


def run_child(blocks: int, frontend: str, backend: str, timeout: float) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory(prefix="bench-per-block-") as cache:
        env["TORCHINDUCTOR_CACHE_DIR"] = cache
        cmd = [sys.executable, "-m", "benchmarks.per_block", "--child", str(blocks), frontend, "--backend", backend]
        try:
            proc = subprocess.run(cmd, cwd=cache, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"blocks": blocks, "frontend": frontend, "error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"blocks": blocks, "frontend": frontend, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.per_block", description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", default="8,32", help="comma-separated block counts (default: 8,32)")
    parser.add_argument("--backend", default="inductor", help="backend name for both frontends (default: inductor)")
    parser.add_argument("--repeat", type=int, default=1, help="alternated runs per cell (default: 1)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run (default: 1800)")
    parser.add_argument("--child", nargs=2, metavar=("BLOCKS", "FRONTEND"), help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    if ns.child:
        print(json.dumps(child(int(ns.child[0]), ns.child[1], ns.backend)))
        return 0
    try:
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    print(f"per-block compiled transformer, backend {ns.backend}, one training step; medians of {ns.repeat} "
          f"alternated fresh-process runs; load average {load} on {os.cpu_count()} cores\n", flush=True)
    rows: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for blocks in (int(b) for b in ns.blocks.split(",") if b):
        for round_ in range(ns.repeat):
            order = FRONTENDS if round_ % 2 == 0 else FRONTENDS[::-1]
            for frontend in order:
                rows.setdefault((blocks, frontend), []).append(run_child(blocks, frontend, ns.backend, ns.timeout))
    print("| blocks | frontend | backend calls | compile wall s | compile CPU s | correct |")
    print("|---:|---|---:|---:|---:|---|")
    for (blocks, frontend), runs in rows.items():
        good = [r for r in runs if "error" not in r]
        if not good:
            print(f"| {blocks} | {frontend} | error: {runs[0]['error']} | | | |")
            continue
        med = lambda key: statistics.median(r[key] for r in good)  # noqa: E731
        print(f"| {blocks} | {frontend} | {good[0]['backend_calls']} | {med('wall_s'):.2f} | {med('cpu_s'):.2f} | "
              f"{all(r['correct'] for r in good)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
