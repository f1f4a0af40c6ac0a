"""Render a :class:`~bytegraph.report.model.Report` as one self-contained HTML page.

With jinja2 (the ``report`` extra) the page is ``templates/report.html.j2``;
with pygments, code is highlighted. Without jinja2 a plain page is written: the
text report, and per frame its guards and decompiled code, in ``<pre>``
blocks. The page loads nothing: styles and the table-sorting script are inline.
"""
from __future__ import annotations

import html
import os
from typing import Any

from bytegraph.report.model import FrameView, Report

_PALETTE = ("#2e86c1", "#28b463", "#af7ac5", "#e67e22", "#16a085", "#c0392b", "#5d6d7e", "#d4ac0d")


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
    return env.get_template("report.html.j2").render(
        report=report, title=title, short=short_path, color=lambda n: _PALETTE[n % len(_PALETTE)],
        highlight=highlight, highlight_lines=highlight_lines, pygments_css=_markup(css),
        chart=_markup(_chart(report.frames)),
    )


def short_path(path: str) -> str:
    """A path as the report shows it: from ``site-packages/`` on, or relative to the working directory."""
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1]
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def _markup(text: str) -> Any:
    from markupsafe import Markup

    return Markup(text)


def _highlighter() -> tuple:
    """``(highlight(code) -> block, highlight_lines(lines) -> one inline piece per line, css)``;
    escaping only without pygments."""
    try:
        from pygments import highlight as pyg_highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return (lambda code: _markup(f"<pre>{html.escape(code)}</pre>"),
                lambda lines: [_markup(html.escape(text)) for text in lines], "")
    lexer, block, inline = PythonLexer(), HtmlFormatter(cssclass="hl"), HtmlFormatter(nowrap=True)

    def highlight_lines(lines: list[str]) -> list:
        # the lines are lexed together (a docstring spans lines); pygments closes its spans at each line end
        out = pyg_highlight("\n".join(lines) + "\n", lexer, inline).split("\n")
        return [_markup(piece) for piece in out[: len(lines)]]

    css = block.get_style_defs(".hl") + "\n" + inline.get_style_defs([".src", ".fx"])
    return (lambda code: _markup(pyg_highlight(code, lexer, block)), highlight_lines,
            css + "\n.hl .err, .src .err, .fx .err { border: none; }")


def _chart(frames: list[FrameView]) -> str:
    """Horizontal bars: trace + backend ms per frame, and its graph count (inline SVG)."""
    if not frames:
        return ""
    bar_h, label_w, width = 18, 260, 420
    most = max((f.trace_ms + f.backend_ms for f in frames), default=0.0) or 1.0
    rows = []
    for i, f in enumerate(frames):
        y = i * (bar_h + 4)
        trace = f.trace_ms / most * width
        backend = f.backend_ms / most * width
        name = html.escape(f.name if len(f.name) <= 38 else f.name[:35] + "...")
        rows.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{name}</text>'
            f'<rect x="{label_w}" y="{y}" width="{max(trace, 0):.1f}" height="{bar_h}" fill="#2e86c1"/>'
            f'<rect x="{label_w + max(trace, 0):.1f}" y="{y}" width="{max(backend, 0):.1f}" height="{bar_h}" '
            f'fill="#e67e22"/>'
            f'<text x="{label_w + max(trace, 0) + max(backend, 0) + 6:.1f}" y="{y + 13}">'
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
        parts.append(f"<h2>{html.escape(f.name)} ({html.escape(short_path(f.filename))}:{f.lineno})</h2>")
        for c in f.compiles:
            guards = "\n".join(f"{name}: {'; '.join(facts)}" for name, facts in c.guards)
            parts.append(f"<h3>compile {c.number}</h3>")
            if c.reason:
                parts.append(f"<p>recompiled because a guard failed: {html.escape(c.reason)}</p>")
            parts.append(f"<pre>{html.escape(guards)}</pre><pre>{html.escape(c.decompiled.source)}</pre>")
    body = "\n".join(parts)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>bytegraph compile report</title>'
            f"</head><body>\n{body}\n</body></html>\n")
