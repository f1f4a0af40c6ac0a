"""Render a :class:`~bytegraph.report.model.Report` as one self-contained HTML page.

With jinja2 (the ``report`` extra) the page is ``templates/report.html.j2``;
with pygments, code is highlighted. Without jinja2 a plain page is written: the
text report, and per frame its guards and decompiled code, in ``<pre>``
blocks. The page loads nothing: styles and scripts are inline.

What a reader rarely opens is not laid out in the page but packed: each
compile's generated code (the decompiled transformed frame, its ``dis``
listing and the guard function) and each guard group but the inputs' are
gzip-compressed HTML in a ``<script type="text/plain">`` block, which the
page's script decodes (``DecompressionStream``) when its ``<details>`` is first
opened. The generated code also stays hidden until "show generated details"
is ticked: the user's view holds nothing of bytegraph's own.
"""
from __future__ import annotations

import base64
import gzip
import html
import itertools
import os
from typing import Any, Callable

from bytegraph.report.frames import user_frame_label
from bytegraph.report.model import FrameView, Report

#: graph colours (``.c0`` ... in the page's style)
PALETTE = ("#2471a3", "#1e8449", "#8e44ad", "#ca6f1e", "#138d75", "#b03a2e", "#566573", "#9a7d0a")


def render(report: Report, title: str, text_report: str) -> str:
    """The page for ``report``; ``text_report`` is the plain fallback's body."""
    try:
        import jinja2
    except ImportError:
        return _plain(report, title, text_report)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(os.path.join(os.path.dirname(__file__), "templates")),
        autoescape=True, trim_blocks=True, lstrip_blocks=True,
    )
    highlight, highlight_lines, css = _highlighter()
    blobs = Blobs()
    return env.get_template("report.html.j2").render(
        report=report, title=title, short=short_path, palette=PALETTE,
        highlight=highlight, highlight_lines=highlight_lines, pygments_css=_markup(css),
        chart=_markup(_chart(report.frames)), blobs=blobs, escape=html.escape, markup=_markup,
        heat=_heat(report), frame_name=user_frame_label,
    )


class Blobs:
    """The packed parts of the page: ``add(html) -> id`` while rendering,
    ``scripts()`` at its end (one ``<script type="text/plain">`` each)."""

    def __init__(self) -> None:
        self._items: list[tuple[str, str]] = []
        self._ids = itertools.count()

    def add(self, content: str) -> str:
        blob_id = f"blob{next(self._ids)}"
        packed = base64.b64encode(gzip.compress(str(content).encode("utf-8"), compresslevel=9, mtime=0))
        self._items.append((blob_id, packed.decode("ascii")))
        return blob_id

    def scripts(self) -> Any:
        return _markup("\n".join(f'<script type="text/plain" id="{i}">{data}</script>' for i, data in self._items))


def short_path(path: str) -> str:
    """A path as the report shows it: from ``site-packages/`` on, or relative to the working directory."""
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1]
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def _heat(report: Report) -> Callable[[int], str]:
    """``heat(ops)``: the class of a source line's op count, by its share of the busiest line's."""
    most = max((line.ops for f in report.files for fn in f.functions for line in fn.lines), default=0) or 1
    return lambda ops: f"h{min(4, (ops * 5 - 1) // most)}" if ops else ""


def _markup(text: str) -> Any:
    from markupsafe import Markup

    return Markup(text)


#: the token kinds the page colours (pygments' short class names); the rest is plain text
_TOKEN_CLASSES = (("Comment", "c"), ("String", "s"), ("Number", "m"), ("Keyword.Constant", "kc"),
                  ("Keyword", "k"), ("Operator.Word", "ow"), ("Name.Builtin", "nb"), ("Name.Function", "nf"),
                  ("Name.Class", "nf"), ("Name.Decorator", "nd"))
_CSS = """.c { color: #7f8c8d; font-style: italic; } .s { color: #b03a2e; } .m { color: #1e8449; }
.k, .kc, .ow { color: #7d3c98; font-weight: 600; } .nb { color: #1f618d; } .nf { color: #2471a3; font-weight: 600; }
.nd { color: #af601a; }"""


def _highlighter() -> tuple:
    """``(highlight(code) -> block, highlight_lines(lines) -> one inline piece per line, css)``:
    Python coloured by pygments' lexer, only the token kinds of :data:`_TOKEN_CLASSES`
    marked (a page of a real model's code stays small); escaping only without pygments."""
    try:
        import pygments  # noqa: F401  (first: a blocked pygments fails the import of its cached submodules too)
        from pygments.lexers import PythonLexer
        from pygments.token import string_to_tokentype
    except ImportError:
        return (lambda code: _markup(f"<pre>{html.escape(code)}</pre>"),
                lambda lines: [_markup(html.escape(text)) for text in lines], "")
    lexer = PythonLexer(stripnl=False, ensurenl=False)
    kinds = [(string_to_tokentype(name), cls) for name, cls in _TOKEN_CLASSES]

    def css_class(token: Any) -> str | None:
        return next((cls for kind, cls in kinds if token in kind), None)

    def highlight_lines(lines: list[str]) -> list:
        # the lines are lexed together (a docstring spans lines); a marked token is closed at each line end
        out, current = [], []
        for token, text in lexer.get_tokens("\n".join(lines)):
            cls = css_class(token)
            for i, piece in enumerate(text.split("\n")):
                if i:
                    out.append("".join(current))
                    current = []
                if piece:
                    escaped = html.escape(piece, quote=False)
                    current.append(f'<span class="{cls}">{escaped}</span>' if cls else escaped)
        out.append("".join(current))
        out += [""] * (len(lines) - len(out))
        return [_markup(piece) for piece in out[: len(lines)]]

    def highlight(code: str) -> Any:
        return _markup("<pre>" + "\n".join(highlight_lines(code.rstrip("\n").split("\n"))) + "</pre>")

    return highlight, highlight_lines, _CSS


def _chart(frames: list[FrameView]) -> str:
    """Horizontal bars: trace + backend ms per frame, and its graph count (inline SVG)."""
    if not frames:
        return ""
    bar_h, label_w, width = 16, 300, 380
    most = max((f.trace_ms + f.backend_ms for f in frames), default=0.0) or 1.0
    rows = []
    for i, f in enumerate(frames):
        y = i * (bar_h + 4)
        trace = max(f.trace_ms, 0) / most * width
        backend = max(f.backend_ms, 0) / most * width
        name = html.escape(f.label if len(f.label) <= 44 else f.label[:41] + "...")
        rows.append(
            f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{name}</text>'
            f'<rect x="{label_w}" y="{y}" width="{trace:.1f}" height="{bar_h}" fill="#2e86c1"/>'
            f'<rect x="{label_w + trace:.1f}" y="{y}" width="{backend:.1f}" height="{bar_h}" fill="#e67e22"/>'
            f'<text x="{label_w + trace + backend + 6:.1f}" y="{y + 12}">'
            f'{f.trace_ms + f.backend_ms:.1f} ms, {len(f.graphs)} graph(s)</text>'
        )
    height = len(frames) * (bar_h + 4) + 24
    legend_y = height - 8
    legend = (f'<rect x="{label_w}" y="{legend_y - 10}" width="10" height="10" fill="#2e86c1"/>'
              f'<text x="{label_w + 14}" y="{legend_y}">tracing</text>'
              f'<rect x="{label_w + 80}" y="{legend_y - 10}" width="10" height="10" fill="#e67e22"/>'
              f'<text x="{label_w + 94}" y="{legend_y}">backend</text>')
    return (f'<svg class="chart" width="{label_w + width + 200}" height="{height}" '
            f'xmlns="http://www.w3.org/2000/svg">{"".join(rows)}{legend}</svg>')


def _plain(report: Report, title: str, text_report: str) -> str:
    """The page without jinja2: the text report, then each frame's guards and code."""
    parts = [f"<h1>bytegraph compile report</h1><p>{html.escape(title)}</p>",
             "<p>(install bytegraph[report] for the full page)</p>", f"<pre>{html.escape(text_report)}</pre>"]
    for f in report.frames:
        parts.append(f"<h2>{html.escape(f.label)} ({html.escape(short_path(f.filename))}:{f.lineno})</h2>")
        for c in f.compiles:
            guards = "\n".join(f"[{g.name}] {what}: {facts}" for g in c.guard_groups for what, facts in g.lines)
            parts.append(f"<h3>{html.escape(c.label)}: compile {c.number}</h3>")
            if c.reason:
                parts.append(f"<p>recompiled because a guard failed: {html.escape(c.reason)}</p>")
            parts.append(f"<pre>{html.escape(guards)}</pre><pre>{html.escape(c.decompiled.source)}</pre>")
    body = "\n".join(parts)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>bytegraph compile report</title>'
            f"</head><body>\n{body}\n</body></html>\n")
