"""The compile report: one self-contained HTML page of everything compiled.

``bytegraph.write_report(path)`` writes it for what was compiled so far in
this process; ``bytegraph run --report PATH`` writes it when the script ends
(also on an exception or ``sys.exit``); so does setting the environment
variable ``BYTEGRAPH_REPORT=PATH`` before ``import bytegraph``, for runs whose
command line you cannot change. The page holds, in the user's terms
(:mod:`bytegraph.report.frames`): each graph break once with its explanation
and hints; the source of every function that fed a graph or broke one, each
line with its ops and graphs (:mod:`bytegraph.report.source`); each recompile
reason once; per compiled frame its guards summarised by what they protect,
each graph's inputs and FX code linked to the user's lines; and, behind "show
generated details", the transformed frame and resume functions decompiled
beside their ``dis`` listing and the guard function (see
:mod:`bytegraph.report.model`).
"""
from __future__ import annotations

import atexit
import os
import sys

from bytegraph.report import html, model
from bytegraph.report.text import format_report

__all__ = ["write_report", "format_report"]


def write_report(path: str | os.PathLike, title: str | None = None) -> str:
    """Write the HTML report of every frame compiled so far to ``path``.

    Args:
        path: the file to write (overwritten), e.g. ``"report.html"``.
        title: a line under the heading; default: the running program's command line.

    Returns:
        The absolute path written.

    Raises:
        TypeError: when ``path`` is not a str or path-like.
        OSError: when the file cannot be written.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"bytegraph.write_report: path must be a str or os.PathLike, got {type(path).__name__}")
    title = " ".join(sys.argv) if title is None else title
    page = html.render(model.build(), title, format_report())
    path = os.path.abspath(os.fspath(path))
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path


def _write_at_exit(path: str) -> None:
    written = write_report(path)
    print(f"bytegraph: wrote the compile report to {written}", file=sys.stderr)


def _from_env() -> None:
    path = os.environ.get("BYTEGRAPH_REPORT")
    if path:
        atexit.register(_write_at_exit, path)


_from_env()
