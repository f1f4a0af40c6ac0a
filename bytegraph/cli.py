"""The ``bytegraph`` command.

``bytegraph run SCRIPT.py [ARGS...]`` (or ``python -m bytegraph run ...``) runs a
script with ``torch.compile`` served by bytegraph, then prints a report of what
was compiled: per frame, graphs, ops, graph breaks with reasons, guards,
recompiles and trace time; then graph breaks grouped by gb_type with counts
and user locations.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import os
import runpy
import sys
from typing import Any, Callable, Iterator, Sequence

import torch

from bytegraph.api import compile as bytegraph_compile
from bytegraph.runtime import metrics


def _torch_compile_shim(
    model: Callable | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: Any = "inductor",
    mode: str | None = None,
    options: dict | None = None,
    disable: bool = False,
) -> Any:
    """``torch.compile``'s signature, served by :func:`bytegraph.compile`."""
    return bytegraph_compile(
        model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options, disable=disable
    )


@contextlib.contextmanager
def serving_torch_compile() -> Iterator[None]:
    """Within the block, ``torch.compile`` is bytegraph's compile."""
    original = torch.compile
    torch.compile = _torch_compile_shim
    try:
        yield
    finally:
        torch.compile = original


def format_report(frames: dict | None = None) -> str:
    """The report of every frame compiled so far (from :data:`metrics.FRAMES`)."""
    frames = metrics.FRAMES if frames is None else frames
    stats = list(frames.values())
    n_graphs = sum(len(s.graphs) for s in stats)
    breaks = metrics.distinct_breaks(stats)
    n_breaks = len(breaks)
    n_recompiles = sum(len(s.recompile_reasons) for s in stats)
    lines = [
        f"bytegraph report: {len(stats)} frame(s), {n_graphs} graph(s), {n_breaks} graph break(s), "
        f"{n_recompiles} recompile(s)"
    ]
    if not stats:
        lines.append("  (nothing was compiled)")
        return "\n".join(lines)
    header = ("frame", "graphs", "ops", "breaks", "guards", "recompiles", "trace ms", "backend ms")
    rows = [header]
    for s in stats:
        backend = sum(g.compile_seconds for g in s.graphs)
        where = f"{s.name} ({_short(s.filename)}:{s.lineno})"
        rows.append((
            where + (" [native]" if s.ran_natively else ""),
            str(len(s.graphs)),
            str(sum(g.op_count for g in s.graphs)),
            str(len(s.breaks)),
            str(len(s.compiles[-1].guards) if s.compiles else 0),
            str(len(s.recompile_reasons)),
            f"{(s.trace_seconds - backend) * 1000:.1f}",
            f"{backend * 1000:.1f}",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  " + "  ".join(cells))
    by_type: dict[str, list[str]] = collections.defaultdict(list)
    for _, b in breaks:
        frame = b.user_stack[-1] if b.user_stack else None
        by_type[b.gb_type].append(f"{_short(frame.filename)}:{frame.lineno}" if frame else "<unknown>")
    if by_type:
        lines.append("graph breaks by type:")
        for gb_type, places in sorted(by_type.items(), key=lambda kv: -len(kv[1])):
            counts = collections.Counter(places)
            where = ", ".join(f"{p} (x{n})" if n > 1 else p for p, n in counts.items())
            lines.append(f"  {gb_type} ({len(places)}): {where}")
        lines.append("reasons:")
        lines += [f"  [{s.name}] {b.reason}" for s, b in breaks]
    recompiles = [(s.name, r) for s in stats for r in s.recompile_reasons]
    if recompiles:
        lines.append("recompiles:")
        lines += [f"  [{name}] {reason}" for name, reason in recompiles]
    return "\n".join(lines)


def _short(path: str) -> str:
    for marker in ("site-packages/",):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def run_script(path: str, args: Sequence[str]) -> int:
    """Run ``path`` as ``__main__`` with ``torch.compile`` served by bytegraph;
    print the report even when the script fails. Returns the exit status."""
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # as `python path` does: siblings import
    status = 0
    try:
        with serving_torch_compile():
            runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)  # sys.exit("message"): Python prints the message
    finally:
        print("\n" + format_report(), flush=True)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bytegraph", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a script with torch.compile served by bytegraph, then report")
    run.add_argument("script", help="path of the Python script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    ns = parser.parse_args(argv)
    return run_script(ns.script, ns.args)

