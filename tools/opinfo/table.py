"""The tables of an OpInfo sweep: a summary for the terminal and ``docs/opinfo.md``.

A result is one JSON record of ``worker.run_case``; a *row* here is one case (OpInfo and
variant) with its outcome on each backend.
"""
from __future__ import annotations

import collections
import pathlib
import re

from tools.opinfo.cases import VARIANTS
from tools.opinfo.frontends import BACKENDS
from tools.opinfo.worker import OUTCOMES, SUCCESS

LABELS = {"captured": "captured whole, equal to eager", "raises": "raises the exception eager raises",
          "wrong": "compiled whole, **differs from eager**",
          "break": "graph break", "error": "other error", "timeout": "timeout", "crash": "crash"}
PROBE = "<opinfo probe>"  # the compiled function itself (frontends.make_probe)
FRONTEND_NAMES = {"bytegraph": "bytegraph", "torch": "torch.compile"}


def short_where(where: str) -> str:
    """``.../site-packages/torch/nn/functional.py:2490 in f`` -> ``torch/nn/functional.py:2490 in f``."""
    return re.sub(r"^.*?/site-packages/", "", where or "")


def kind(result: dict) -> str:
    """The kind a result that is not ``captured`` is grouped under."""
    outcome = result["outcome"]
    if outcome == "break":
        return f"graph break `{result.get('gb_type')}`"
    if outcome == "error":
        return f"error `{result.get('reason', '').split(':')[0]}`"
    if outcome == "wrong":
        return f"wrong: {' '.join(result.get('reason', '').split()[:2]).rstrip(':')}"
    return outcome


def counts(results: list[dict], variant: str, float32_only: bool = False) -> dict[str, collections.Counter]:
    """backend -> outcome -> number of cases of ``variant`` (skipped cases apart)."""
    by_backend: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    skipped = collections.Counter()
    for r in results:
        if r["variant"] != variant or (float32_only and r.get("dtype", "float32") != "float32"):
            continue
        if r["outcome"] == "skipped":
            skipped[r["reason"].split(":")[0]] += 1
        else:
            by_backend[r["backend"]][r["outcome"]] += 1
    return {**by_backend, "skipped": skipped}


def summary(doc: dict) -> str:
    """The counts of one sweep, a few lines for the terminal."""
    lines = [f"{FRONTEND_NAMES[doc['frontend']]} (torch {doc['torch']}), {doc['ops']} OpInfos:"]
    for variant in VARIANTS:
        table = counts(doc["results"], variant)
        for backend in doc["backends"]:
            c = table.get(backend, collections.Counter())
            lines.append(f"  {variant:8s} {backend:10s} of {sum(c.values())}: "
                         + ", ".join(f"{o} {c[o]}" for o in OUTCOMES if c[o]))
        if table["skipped"]:
            lines.append(f"  {variant:8s} not run: " + ", ".join(f"{k} {v}" for k, v in table["skipped"].items()))
    return "\n".join(lines)


def _cell(text: str) -> str:
    """``text`` as one Markdown table cell: one line, at most 160 characters, no ``|`` or tags."""
    text = text.replace("\n", " ")[:160]
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _rows(doc: dict) -> dict[tuple[str, str], dict[str, dict]]:
    """(op, variant) -> backend -> result, for the cases that ran."""
    rows: dict[tuple[str, str], dict[str, dict]] = collections.defaultdict(dict)
    for r in doc["results"]:
        if r["outcome"] != "skipped":
            rows[(r["op"], r["variant"])][r["backend"]] = r
    return rows


def _count_table(docs: dict[str, dict], variant: str, float32_only: bool) -> list[str]:
    columns = [(f, b) for f in ("bytegraph", "torch") if f in docs for b in docs[f]["backends"]]
    tables = {f: counts(docs[f]["results"], variant, float32_only) for f in docs}
    head = "| outcome | " + " | ".join(f"{FRONTEND_NAMES[f]} {b}" for f, b in columns) + " |"
    lines = [head, "|---" * (len(columns) + 1) + "|"]
    for outcome in OUTCOMES:
        cells = [str(tables[f].get(b, {}).get(outcome, 0)) for f, b in columns]
        if any(c != "0" for c in cells):
            lines.append(f"| {LABELS[outcome]} | " + " | ".join(cells) + " |")
    totals = [str(sum(tables[f].get(b, collections.Counter()).values())) for f, b in columns]
    lines.append("| cases run | " + " | ".join(totals) + " |")
    return lines


def _failure_rows(rows: dict, other: dict | None) -> dict[str, list[tuple[bool, str]]]:
    """kind -> (the other frontend did what eager does, table row) for the cases one frontend did
    not capture: one row per case and distinct failure, naming the backends it shows on."""
    groups: dict[str, list[tuple[bool, str]]] = collections.defaultdict(list)
    for (op, variant), by_backend in rows.items():
        failed: dict[tuple, list[str]] = collections.defaultdict(list)
        for backend in sorted(by_backend, key=lambda b: (BACKENDS + (b,)).index(b)):
            r = by_backend[backend]
            if r["outcome"] not in SUCCESS:
                where = short_where(r.get("where", ""))
                failed[(kind(r), r.get("reason", ""), "" if where.startswith(PROBE) else where)].append(backend)
        for (k, reason, where), backends in failed.items():
            theirs, ok = "", False
            if other is not None:
                results = [other.get((op, variant), {}).get(b) for b in backends]
                ok = all(t is not None and t["outcome"] in SUCCESS for t in results)
                theirs = ", ".join(sorted({"—" if t is None else (t["outcome"] if t["outcome"] in SUCCESS else kind(t))
                                           for t in results}))
            reason = _cell(reason)
            cells = [f"`{op}`" + (" (in place)" if variant == "inplace" else ""), ", ".join(backends),
                     reason, f"`{where}`" if where else ""]
            groups[k].append((ok, "| " + " | ".join(cells + ([theirs] if other is not None else [])) + " |"))
    return groups


def _failure_sections(docs: dict[str, dict], frontend: str, level: str) -> list[str]:
    other_name = "torch" if frontend == "bytegraph" else "bytegraph"
    other = _rows(docs[other_name]) if other_name in docs else None
    groups = _failure_rows(_rows(docs[frontend]), other)
    order = sorted(groups, key=lambda k: (not k.startswith("wrong"), -len(groups[k]), k))
    them = FRONTEND_NAMES[other_name]
    lines = ["", f"| kind | cases | of which {them} does what eager does |" if other else "| kind | cases |",
             "|---|---|---|" if other else "|---|---|"]
    for k in order:
        lines.append(f"| {k} | {len(groups[k])} |" + (f" {sum(ok for ok, _ in groups[k])} |" if other else ""))
    for k in order:
        lines += ["", f"{level} {k} ({len(groups[k])})", ""]
        head = ["case", "backends", "reason", "where"] + ([them] if other else [])
        lines += ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        lines += [row for _, row in sorted(groups[k], key=lambda g: not g[0])]  # the other's captures first
    return lines


def render(docs: dict[str, dict]) -> str:
    """``docs/opinfo.md`` for the sweeps in ``docs`` (frontend -> JSON document)."""
    any_doc = next(iter(docs.values()))
    lines = [
        "# OpInfo sweep",
        "",
        "Generated by `make opinfo` (`python -m tools.opinfo --frontend bytegraph|torch`, then `--docs`) from "
        "`tools/opinfo/results/*.json`; do not edit.",
        "",
        f"Every OpInfo of `op_db` in torch {any_doc['torch']} ({any_doc['ops']}), called as `op.op(*args, **kwargs)` "
        "and, where it has one, as its in-place variant, inside a function compiled with `fullgraph=True`, on the "
        "first CPU sample eager runs (float32, else the first supported dtype of `tools/opinfo/cases.py`). "
        "*Captured* means compiled whole and equal to eager: values (NaN equal to NaN; bit-exact on backend eager, "
        "within `torch.testing.assert_close`'s tolerances on aot_eager), type, dtype, shape, requires_grad, the "
        "inputs after the call, and which outputs are (or view) which inputs. A random op (its result changes "
        "with the seed, or with nothing, as `torch.empty`'s) is compared on everything but its values. "
        "bytegraph and torch.compile run in separate processes.",
        "",
    ]
    for frontend, doc in docs.items():
        lines.append(f"- {FRONTEND_NAMES[frontend]}: {doc['wall_seconds']} s wall, {doc['cpu_seconds']} s CPU "
                     f"({doc['jobs']} worker at a time, load average {doc['load_average'][0]}), Python {doc['python']}"
                     + (f"; {doc['note']}." if doc.get("note") else "."))
    sections = [("`op.op`, float32 OpInfos (the issue's 677)", "op", True), ("`op.op`, every OpInfo", "op", False),
                ("in-place variants", "inplace", False)]
    lines += ["", "## Counts"]
    for title, variant, f32 in sections:
        lines += ["", f"### {title}", "", *_count_table(docs, variant, f32)]
    skipped = counts(any_doc["results"], "op")["skipped"]
    if skipped:
        lines += ["", "Not run (`op.op`): " + ", ".join(f"{k} ({v})" for k, v in skipped.items()) + "."]
    for frontend in docs:
        lines += ["", f"## Not captured by {FRONTEND_NAMES[frontend]}, by kind"]
        lines += _failure_sections(docs, frontend, "###")
    return "\n".join(lines) + "\n"


def write_docs(results_dir: pathlib.Path, path: pathlib.Path) -> pathlib.Path:
    """Render the sweeps found in ``results_dir`` (``bytegraph.json``, ``torch.json``) to ``path``."""
    import json

    docs = {f: json.loads((results_dir / f"{f}.json").read_text()) for f in ("bytegraph", "torch")
            if (results_dir / f"{f}.json").exists()}
    if not docs:
        raise FileNotFoundError(f"no sweep results in {results_dir}")
    path.write_text(render(docs))
    return path
