"""The end-of-run text report of ``bytegraph run``, in the HTML page's terms
(:mod:`bytegraph.report.frames`): the seconds spent importing (at start-up,
and torch's compiler stacks on first use); per compiled frame, graphs, ops,
graph breaks, guards, recompiles and its conversion time split into trace,
backend and import; each graph break once, with the compiles that met it,
its explanation and hints; each recompile reason once with a count; and the
guards of each frame's latest compile summarised by what they protect, the
input guards in words."""
from __future__ import annotations

from bytegraph import imports
from bytegraph.guards.summary import INPUTS, GuardGroup, summarise
from bytegraph.report.frames import BreakSummary, FrameGroup, break_summaries, frame_groups, value_names
from bytegraph.report.html import short_path as _short
from bytegraph.runtime import metrics


def _graphs_cell(graphs: list) -> str:
    """A frame's graph count, with what the DDP bucket split made of them: ``1 (split: 5)``."""
    split = sum(g.subgraphs for g in graphs)
    return f"{len(graphs)} (split: {split})" if split != len(graphs) else str(len(graphs))


def format_report(frames: dict | None = None) -> str:
    """The text report of every frame compiled so far (from :data:`metrics.FRAMES`)."""
    groups = frame_groups((metrics.FRAMES if frames is None else frames).values())
    graphs = [g for group in groups for s in group.members for g in s.graphs]
    n_split = sum(g.subgraphs for g in graphs)  # the DDP bucket split compiles more
    breaks = break_summaries(groups)
    n_recompiles = sum(n for group in groups for _, n in group.recompile_reasons())
    lines = [
        f"bytegraph report: {len(groups)} frame(s), {len(graphs)} graph(s)"
        + (f" compiled as {n_split} after the DDP bucket split" if n_split != len(graphs) else "")
        + f", {len(breaks)} graph break(s), {n_recompiles} recompile(s)"
        + (f"; and {metrics.FREED['frames']} older frame(s) compiled and since freed, not shown "
           f"({metrics.FREED['graphs']} graph(s), {metrics.FREED['breaks']} break(s), "
           f"{metrics.FREED['recompiles']} recompile(s))" if metrics.FREED["frames"] and frames in (None, metrics.FRAMES) else "")
    ]
    lines.append(format_imports())
    if not groups:
        lines.append("  (nothing was compiled)")
        return "\n".join(lines)
    lines += _frame_table(groups, breaks)
    if breaks:
        lines.append("graph breaks (each once, with the compiles that met it):")
        lines += format_breaks(breaks, "  ")
    recompiles = [(group.label, reason, n) for group in groups for reason, n in group.recompile_reasons()]
    if recompiles:
        lines.append("recompiles (the guard that failed):")
        lines += [f"  [{label}] {reason}" + (f" (x{n})" if n > 1 else "") for label, reason, n in recompiles]
    reruns = [(group.label, sum(s.graph_reruns for s in group.members)) for group in groups]
    if any(n for _, n in reruns):
        lines.append("graphs that raised (each such call then ran its frame natively, as eager does):")
        lines += [f"  [{label}] {n} call(s)" for label, n in reruns if n]
    lines.append("guards (each frame's latest compile, by what they protect):")
    for group in groups:
        latest = group.main.compiles[-1] if group.main.compiles else None
        if latest is not None:
            summary = summarise(latest.guards, value_names(group.main), latest.guard_code, latest.guard_seconds)
            lines += format_guard_groups(group.label, len(latest.guards), latest.guard_seconds, summary, "  ")
    return "\n".join(lines)


def _frame_table(groups: list[FrameGroup], breaks: list[BreakSummary]) -> list[str]:
    header = ("frame", "graphs", "ops", "breaks", "guards", "recompiles", "trace ms", "backend ms", "import ms")
    rows = [header]
    for group in groups:
        members = group.members
        graphs = [g for s in members for g in s.graphs]
        backend = sum(g.compile_seconds - g.import_seconds for g in graphs)
        imported = sum(s.import_seconds for s in members)
        trace = sum(s.trace_seconds for s in members) - backend - imported
        latest = group.main.compiles[-1] if group.main.compiles else None
        rows.append((
            f"{group.label} ({_short(group.filename)}:{group.lineno})" + (" [native]" if group.ran_natively else ""),
            _graphs_cell(graphs),
            str(sum(g.op_count for g in graphs)),
            str(sum(group.label in b.frames for b in breaks)),
            str(len(latest.guards) if latest else 0),
            str(sum(n for _, n in group.recompile_reasons())),
            f"{trace * 1000:.1f}",
            f"{backend * 1000:.1f}",
            f"{imported * 1000:.1f}",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return ["  " + "  ".join([row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])])
            for row in rows]


def format_breaks(breaks: list[BreakSummary], indent: str) -> list[str]:
    """Each graph break once: where, what, how many compiles met it, why and what to do."""
    lines = []
    for n, summary in enumerate(breaks, 1):
        b, where = summary.record, summary.where
        place = f"{_short(where[0])}:{where[1]}" if where else "<unknown>"
        met = f"{summary.count} compile{'s' if summary.count != 1 else ''} of {', '.join(summary.frames)}"
        lines.append(f"{indent}{n}. [{b.gb_type}] {b.context} at {place} ({met})")
        if b.explanation:
            lines.append(f"{indent}     {b.explanation}")
        lines += [f"{indent}     Hint: {hint}" for hint in b.hints]
    return lines


def format_guard_groups(label: str, count: int, seconds: float | None, groups: list[GuardGroup],
                        indent: str) -> list[str]:
    """One frame's guards: their count and per-call cost, each group's, and the input guards in words."""
    cost = f", {seconds * 1e6:.1f} us a call" if seconds is not None else ""
    parts = [f"{g.name} {len(g.guards)}" + (f" ({g.seconds * 1e6:.1f} us)" if g.seconds is not None else "")
             for g in groups]
    lines = [f"{indent}{label}: {count} guard(s){cost}: " + ", ".join(parts)]
    for g in groups:
        if g.name == INPUTS:
            lines += [f"{indent}    {what}: {facts}" for what, facts in g.lines]
    return lines


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
