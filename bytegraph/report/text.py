"""The end-of-run text report of ``bytegraph run``: the seconds spent
importing (at start-up, and torch's compiler stacks on first use); per frame,
graphs, ops, graph breaks, guards, recompiles and its conversion time split
into trace, backend and import; then graph breaks grouped by gb_type with
counts and user locations, and the recompile reasons."""
from __future__ import annotations

import collections

from bytegraph import imports
from bytegraph.report.html import short_path as _short
from bytegraph.runtime import metrics


def _graphs_cell(graphs: list) -> str:
    """A frame's graph count, with what the DDP bucket split made of them: ``1 (split: 5)``."""
    split = sum(g.subgraphs for g in graphs)
    return f"{len(graphs)} (split: {split})" if split != len(graphs) else str(len(graphs))


def format_report(frames: dict | None = None) -> str:
    """The text report of every frame compiled so far (from :data:`metrics.FRAMES`)."""
    frames = metrics.FRAMES if frames is None else frames
    stats = list(frames.values())
    n_graphs = sum(len(s.graphs) for s in stats)
    n_split = sum(g.subgraphs for s in stats for g in s.graphs)  # the DDP bucket split compiles more
    breaks = metrics.distinct_breaks(stats)
    n_breaks = len(breaks)
    n_recompiles = sum(len(s.recompile_reasons) for s in stats)
    lines = [
        f"bytegraph report: {len(stats)} frame(s), {n_graphs} graph(s)"
        + (f" compiled as {n_split} after the DDP bucket split" if n_split != n_graphs else "")
        + f", {n_breaks} graph break(s), {n_recompiles} recompile(s)"
    ]
    lines.append(format_imports())
    if not stats:
        lines.append("  (nothing was compiled)")
        return "\n".join(lines)
    header = ("frame", "graphs", "ops", "breaks", "guards", "recompiles", "trace ms", "backend ms", "import ms")
    rows = [header]
    for s in stats:
        backend = sum(g.compile_seconds - g.import_seconds for g in s.graphs)
        where = f"{s.name} ({_short(s.filename)}:{s.lineno})"
        rows.append((
            where + (" [native]" if s.ran_natively else ""),
            _graphs_cell(s.graphs),
            str(sum(g.op_count for g in s.graphs)),
            str(len(s.breaks)),
            str(len(s.compiles[-1].guards) if s.compiles else 0),
            str(len(s.recompile_reasons)),
            f"{(s.trace_seconds - backend - s.import_seconds) * 1000:.1f}",
            f"{backend * 1000:.1f}",
            f"{s.import_seconds * 1000:.1f}",
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



def format_imports() -> str:
    """One line: seconds spent importing, at start-up and on first use
    (:mod:`bytegraph.imports`), e.g. ``imports: 4.10 s (start-up: torch 1.20 s,
    bytegraph 0.40 s; first use: FakeTensorMode's config modules 1.50 s,
    inductor 1.00 s)``."""
    def part(label: str, names: list[str]) -> str:
        return f"{label}: " + ", ".join(f"{n} {imports.SECONDS[n]:.2f} s" for n in names) if names else ""

    startup = [n for n in imports.SECONDS if n in imports.AT_STARTUP]
    later = [n for n in imports.SECONDS if n not in imports.AT_STARTUP]
    parts = "; ".join(p for p in (part("start-up", startup), part("first use", later)) if p)
    return f"imports: {imports.total():.2f} s" + (f" ({parts})" if parts else "")
