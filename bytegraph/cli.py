"""The ``bytegraph`` command.

``bytegraph run [--report PAGE.html] SCRIPT.py [ARGS...]`` (or ``python -m
bytegraph run ...``) runs a script with ``torch.compile`` served by bytegraph;
``bytegraph run [--report PAGE.html] -m PACKAGE.MODULE [ARGS...]`` runs a
module as ``python -m`` does. When the program ends (also on an exception or
``sys.exit``) the text report of what was compiled goes to stderr (per frame:
graphs, ops, graph breaks, guards, recompiles, times; then graph breaks by
gb_type) and, with ``--report``, the HTML report to PAGE.html
(:mod:`bytegraph.report`). A script that cannot be opened or a module that
cannot be found is an error, as with ``python``: a message and exit status 2
(script) or 1 (module), and no report.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import runpy
import sys
from typing import Any, Callable, Iterator, Sequence

import torch

from bytegraph.api import compile as bytegraph_compile
from bytegraph.report import format_report, write_report


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


USAGE = """usage: bytegraph run [--report PAGE.html] SCRIPT.py [ARGS...]
       bytegraph run [--report PAGE.html] -m PACKAGE.MODULE [ARGS...]

Run a Python program with torch.compile served by bytegraph; at the end, print
a report of what was compiled to stderr and, with --report, write the HTML
report to PAGE.html."""


class UsageError(Exception):
    """A command line ``bytegraph`` cannot run (the message says why)."""


def parse_run(argv: Sequence[str]) -> tuple[str | None, str | None, str | None, list[str]]:
    """``(report path, script, module, program arguments)`` of ``bytegraph run``'s
    arguments: options up to the script or ``-m MODULE``, everything after it
    belongs to the program (as with ``python``).

    Raises:
        UsageError: for an unknown option, a missing value, or no program.
    """
    report = None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--report" or arg.startswith("--report="):
            value = arg.partition("=")[2] if "=" in arg else (args.pop(0) if args else "")
            if not value:
                raise UsageError("--report needs a file name")
            report = value
        elif arg == "-m" or (arg.startswith("-m") and len(arg) > 2):
            module = arg[2:] or (args.pop(0) if args else "")
            if not module:
                raise UsageError("-m needs a module name")
            return report, None, module, args
        elif arg == "--":
            if not args:
                break
            return report, args[0], None, args[1:]
        elif arg.startswith("-"):
            raise UsageError(f"unknown option {arg}")
        else:
            return report, arg, None, args
    raise UsageError("no script or -m module to run")


def run_program(script: str | None, module: str | None, args: Sequence[str], report: str | None = None) -> int:
    """Run ``script`` (a path) or ``module`` (a dotted name) as ``__main__`` with
    ``torch.compile`` served by bytegraph, as ``python`` would (``sys.argv``,
    ``sys.path[0]``); then report, even when the program raises or exits.

    Returns:
        The exit status: the program's ``sys.exit`` code, 0 when it ends, 2
        when the script cannot be opened, 1 when the module cannot be found
        (nothing is run or reported then).

    Raises:
        Whatever the program raises (after reporting), as ``python`` would show it.
    """
    if script is not None:
        try:
            with open(script, "rb"):
                pass
        except OSError as e:
            print(f"bytegraph: can't open file {script!r}: [Errno {e.errno}] {e.strerror}", file=sys.stderr)
            return 2
        sys.argv = [script, *args]
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python path` does: siblings import
    else:
        sys.path.insert(0, os.getcwd())  # as `python -m` does
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError) as e:
            spec, why = None, str(e)
        else:
            why = f"No module named {module}"
        if spec is None:
            print(f"bytegraph: {why}", file=sys.stderr)
            return 1
        if spec.submodule_search_locations is not None:  # a package runs its __main__
            spec = importlib.util.find_spec(f"{module}.__main__") or spec
        sys.argv = [spec.origin or module, *args]
    status = 0
    try:
        with serving_torch_compile():
            if script is not None:
                runpy.run_path(script, run_name="__main__")
            else:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)  # sys.exit("message"): Python prints the message
    finally:
        sys.stdout.flush()
        print("\n" + format_report(), file=sys.stderr, flush=True)
        if report is not None:
            print(f"bytegraph: wrote the compile report to {write_report(report)}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """``bytegraph COMMAND ...``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] != "run":
        print(f"{USAGE}\nbytegraph: unknown command {argv[0]!r}", file=sys.stderr)
        return 2
    if argv[1:2] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    try:
        report, script, module, args = parse_run(argv[1:])
    except UsageError as e:
        print(f"{USAGE}\nbytegraph run: {e}", file=sys.stderr)
        return 2
    return run_program(script, module, args, report)
