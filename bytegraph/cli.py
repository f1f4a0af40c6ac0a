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

