"""The ``bytegraph`` command.

``bytegraph run [--report PAGE.html] PROGRAM [ARGS...]`` (or ``python -m
bytegraph run ...``) runs a program with torch.compile served by bytegraph
(:mod:`bytegraph.dropin`). PROGRAM is what ``python`` takes: ``SCRIPT.py``, a
folder or zip file with a ``__main__.py``, ``-m MODULE`` (a package runs its
``__main__``) or ``-c CODE``; ``sys.argv`` and ``sys.path[0]`` are set as
``python`` sets them. When the program ends (also on an exception or
``sys.exit``) the text report of what was compiled goes to stderr (per frame:
graphs, ops, graph breaks, guards, recompiles, times; then graph breaks by
gb_type) and, with ``--report``, the HTML report to PAGE.html
(:mod:`bytegraph.report`), whose folder is checked before the program runs.

As with ``python``: a program that cannot be found is one line on stderr and
exit status 2 (a script or folder that cannot be opened) or 1 (a module, a
folder or package without ``__main__``); an exception the program raises
prints its traceback, with the program's frames only (none of bytegraph's or
runpy's), and exit status 1; ``sys.exit(code)`` exits with ``code``. A
command line ``bytegraph`` cannot parse is one line, status 2.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import os
import runpy
import sys
import traceback
import types
import zipfile
from typing import Sequence

import torch

from bytegraph.dropin import serving_torch_compile
from bytegraph.report import format_report, write_report
from bytegraph.runtime import metrics

USAGE = """usage: bytegraph run [--report PAGE.html] SCRIPT.py | FOLDER | ZIP | -m MODULE | -c CODE [ARGS...]
       bytegraph --version

Run a Python program as `python` would, with torch.compile served by bytegraph;
at the end, print a report of what was compiled to stderr and, with --report,
write the HTML report to PAGE.html."""


#: files whose frames a program's traceback leaves out: bytegraph's own and runpy's
_HIDDEN = (os.path.dirname(os.path.abspath(__file__)) + os.sep, os.path.abspath(runpy.__file__), "<frozen runpy>")


class UsageError(Exception):
    """A command line ``bytegraph`` cannot run (the message says why)."""


@dataclasses.dataclass
class Program:
    """What ``bytegraph run`` runs: exactly one of ``script`` (a file, folder or
    zip path), ``module`` (a dotted name) or ``code`` (``-c``), with its ``args``."""

    script: str | None = None
    module: str | None = None
    code: str | None = None
    args: list[str] = dataclasses.field(default_factory=list)
    report: str | None = None


def parse_run(argv: Sequence[str]) -> Program:
    """The program of ``bytegraph run``'s arguments: options up to the script,
    ``-m MODULE`` or ``-c CODE``; everything after it belongs to the program
    (as with ``python``).

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
        elif arg[:2] in ("-m", "-c"):
            value = arg[2:] or (args.pop(0) if args else "")
            if not value:
                raise UsageError(f"argument expected for the {arg[:2]} option")
            if arg[:2] == "-m":
                return Program(module=value, args=args, report=report)
            return Program(code=value, args=args, report=report)
        elif arg == "--":
            if not args:
                break
            return Program(script=args[0], args=args[1:], report=report)
        elif arg.startswith("-"):
            raise UsageError(f"unknown option {arg}")
        else:
            return Program(script=arg, args=args, report=report)
    raise UsageError("no script, -m module or -c code to run")


def check_program(program: Program) -> tuple[str, int] | None:
    """``(message, exit status)`` when ``program`` cannot be run (python's
    messages and statuses), or None. Sets ``sys.argv``/``sys.path`` as
    ``python`` does when it can be run."""
    if program.report is not None:
        problem = _unwritable(program.report)
        if problem is not None:
            return f"can't write the report to {program.report!r}: {problem}", 2
    if program.code is not None:
        sys.argv = ["-c", *program.args]
        sys.path.insert(0, "")
        return None
    if program.script is not None:
        path = program.script
        if os.path.isdir(path) or (os.path.isfile(path) and zipfile.is_zipfile(path)):
            if not _has_main(path):
                return f"can't find '__main__' module in {os.path.abspath(path)!r}", 1
        else:
            try:
                with open(path, "rb"):
                    pass
            except OSError as e:
                return f"can't open file {os.path.abspath(path)!r}: [Errno {e.errno}] {e.strerror}", 2
            sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # (runpy adds a folder or zip itself)
        sys.argv = [path, *program.args]
        return None
    sys.path.insert(0, os.getcwd())  # as `python -m` does
    name = program.module
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:  # a package runs its __main__
            main = importlib.util.find_spec(f"{name}.__main__")
            if main is None:
                return f"No module named {name}.__main__; {name!r} is a package and cannot be directly executed", 1
            spec = main
    except (ImportError, ValueError) as e:
        return str(e), 1
    if spec is None:
        return f"No module named {name}", 1
    sys.argv = [spec.origin or name, *program.args]
    return None


def _unwritable(path: str) -> str | None:
    """Why a file cannot be written at ``path`` (None: it can)."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return "it is a folder"
    if not os.path.isdir(folder):
        return f"no folder {folder!r}"
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        return "permission denied"
    return None


def _has_main(path: str) -> bool:
    if os.path.isdir(path):
        return any(os.path.isfile(os.path.join(path, f"__main__{ext}")) for ext in (".py", ".pyc"))
    with zipfile.ZipFile(path) as archive:
        return bool({"__main__.py", "__main__.pyc"} & set(archive.namelist()))


def run_program(program: Program) -> int:
    """Run ``program`` as ``__main__`` with torch.compile served by bytegraph,
    as ``python`` would; then report, even when the program raises or exits.

    Returns:
        The exit status (see the module docstring).
    """
    problem = check_program(program)
    if problem is not None:
        print(f"bytegraph: {problem[0]}", file=sys.stderr)
        return problem[1]
    status = 0
    with metrics.retaining():  # the report covers frames compiled in functions that have returned
        try:
            with serving_torch_compile():
                if program.code is not None:
                    _run_code(program.code)
                elif program.script is not None:
                    runpy.run_path(program.script, run_name="__main__")
                else:
                    runpy.run_module(program.module, run_name="__main__", alter_sys=True)
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if e.code is not None and not isinstance(e.code, int):
                print(e.code, file=sys.stderr)  # sys.exit("message"): Python prints the message
        except BaseException as e:  # the program's own exception: its traceback, as python prints it
            sys.stderr.write(user_traceback(e))
            status = 130 if isinstance(e, KeyboardInterrupt) else 1
        finally:
            sys.stdout.flush()
            print("\n" + format_report(), file=sys.stderr, flush=True)
            if program.report is not None:
                try:
                    print(f"bytegraph: wrote the compile report to {write_report(program.report)}", file=sys.stderr)
                except OSError as e:
                    print(f"bytegraph: can't write the report to {program.report!r}: {e}", file=sys.stderr)
                    status = status or 1
    return status


def _run_code(code: str) -> None:
    """Run ``-c`` code in a fresh ``__main__`` module, as ``python -c`` does."""
    module = types.ModuleType("__main__")
    module.__builtins__ = __builtins__  # type: ignore[attr-defined]
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = module
    try:
        exec(compile(code, "<string>", "exec"), module.__dict__)
    finally:
        sys.modules["__main__"] = saved


def user_traceback(error: BaseException) -> str:
    """``error``'s traceback as python prints it, without the frames of
    bytegraph and runpy (what runs the program, and what serves torch.compile
    inside it), in chained exceptions too."""
    report = traceback.TracebackException.from_exception(error)
    seen: set[int] = set()
    pending = [report]
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        item.stack = traceback.StackSummary.from_list(
            [frame for frame in item.stack if not frame.filename.startswith(_HIDDEN)])
        pending += [chained for chained in (item.__cause__, item.__context__) if chained is not None]
    return "".join(report.format())


def main(argv: Sequence[str] | None = None) -> int:
    """``bytegraph COMMAND ...``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["--version"], ["-V"]):
        print(f"bytegraph {importlib.metadata.version('bytegraph')} (torch {torch.__version__})")
        return 0
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] != "run":
        print(f"bytegraph: unknown command {argv[0]!r} (see bytegraph --help)", file=sys.stderr)
        return 2
    if argv[1:2] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    try:
        program = parse_run(argv[1:])
    except UsageError as e:
        print(f"bytegraph run: {e} (see bytegraph --help)", file=sys.stderr)
        return 2
    return run_program(program)
