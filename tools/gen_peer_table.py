"""Write the peer-suite pages of docs/ from peer-suite runs (see ../shared/peer-suite/README.md).

Usage::

    python tools/gen_peer_table.py RUN.json BASELINE.json [--out docs/peer_suite.md]
    python tools/gen_peer_table.py --suite cpython RUN.json[,RUN2.json] BASELINE.json[,BASELINE2.json]

The second form writes ``docs/peer_suite_cpython.md`` for the CPython semantics
suite (tools/peer/README.md): per file, the tests, torch.compile's and
bytegraph's passes and the tests both pass, then every test torch.compile
passes and bytegraph fails, grouped by kind (:func:`detailed_kind`). Runs given
as a comma-separated list are merged (one run_peer.py run per part of the suite).

``RUN.json`` is what ``run_peer.py --json`` wrote for bytegraph, ``BASELINE.json``
the per-test outcomes of torch.compile (``torch_compile_baseline.json``). The
page gives the peer score (tests passing under torch.compile that also pass
under bytegraph) and, for every test that passes under torch.compile but not
under bytegraph, its kind (the graph break type, or the failed assertion) and
first error line. A kind is marked out of reach when the test can only pass
with TorchDynamo itself (:data:`OUT_OF_REACH`) or bytegraph declines it on
purpose (:data:`DELIBERATE`), by message pattern or, where the message is a
generic count assertion, by test name (:data:`BY_TEST`).
"""
from __future__ import annotations

import argparse
import collections
import json
import re
from pathlib import Path

#: message patterns of failures no other frontend can fix: reason shown in the table
OUT_OF_REACH = {
    r"Dynamo detected a call": "expects TorchDynamo's own warning text",
    r"^bytegraph\.breaks\.Unsupported": "the harness translates bytegraph's Unsupported only for functions, "
                                        "not for compiled nn.Modules",
    r"Tensor.__float__": "reads TorchDynamo's capture_scalar_outputs config and its TorchRuntimeError",
}

#: message patterns of graph breaks bytegraph keeps on purpose (eager's answer is not certain otherwise)
DELIBERATE = {
    r"lru_cache call": "an lru_cache call whose wrapped function changes objects that existed before it, or "
                       "whose cache has no room, runs natively: eager makes those changes (and evictions) only "
                       "on a miss",
    r"max\(TensorVariable|max\(MapVariable": "min/max over tensors returns the winning operand (a tensor or an "
                                             "int): which one depends on data",
}


_PEP523 = ("expects a third graph that torch.compile makes from the callee that natively run code calls "
           "(a PEP 523 frame hook; bytegraph has none)")

#: tests whose failure message is generic (a count assertion): reach and reason by test name
BY_TEST = {
    "test_pydantic_dataclass_construction": ("out of reach", "reads TorchDynamo's graph-break counters and expects "
                                             "its skip rule for pydantic's constructor"),
    "test_lru_cache_warning_issued_during_tracing": ("out of reach", "expects TorchDynamo's own warning text"),
    "test_map_with_graph_break": ("out of reach", _PEP523),
    "test_filter_with_graph_break": ("out of reach", _PEP523),
    "test_cast_tensor_single_elem": ("out of reach", "expects TorchDynamo's TorchRuntimeError class under fullgraph"),
    "test_numpy_size": ("deliberate", "a.size is answered at trace time and the graph would be empty; "
                                      "torch.compile keeps a dead conversion node and counts one graph"),
    "test_listlike_of_tensors_contains_constant": ("deliberate", "1 in [x] compares x == 1, which needs the "
                                                   "tensor's bool; torch.compile answers without it and differs "
                                                   "from eager for x = tensor([1.])"),
}


def _first_line(message: str) -> str:
    return (message or "").strip().splitlines()[0] if message else ""


def kind_of(message: str) -> str:
    """The graph break type in ``message``, or the kind of failed assertion."""
    found = re.search(r"Graph break \[([^\]]+)\]", message or "")
    if found:
        return found.group(1)
    head = _first_line(message)
    return head.split(":", 1)[0] if ":" in head else head[:40]


def detailed_kind(message: str) -> str:
    """``kind_of`` plus what the break or error was about, with the parts that differ
    between tests of one kind (local class names, numbers, quoted values, the
    contents of a variable's repr) normalised away."""
    found = re.search(r"Graph break \[([^\]]+)\]: (.*?)(?: Explanation:|$)", message or "")
    detail = found.group(2) if found else _first_line(message).split(":", 1)[-1]
    # a variable's repr keeps only a type name (UserDefinedObjectVariable(deque)), never values
    detail = re.sub(r"(\w+Variable)\(([^)]*)\)?",
                    lambda m: m.group(0) if re.fullmatch(r"(UserDefined\w*|Opaque\w*)\([\w.]+\)", m.group(0))
                    else m.group(1) + "(...)", detail)
    detail = re.sub(r"\S*<locals>\.", "<local>.", detail)
    detail = re.sub(r"'(?!\w{1,40}')[^']*'|\"(?!\w{1,40}\")[^\"]*\"", "'…'", detail)  # identifiers kept
    detail = re.sub(r"0x[0-9a-f]+", "0x…", detail)
    detail = re.sub(r"\b\d+\b", "N", detail).strip()
    return f"{kind_of(message)}: {detail[:110]}" if detail else kind_of(message)


def reach_of(message: str, test: str = "") -> str:
    if test in BY_TEST:
        return "{}: {}".format(*BY_TEST[test])
    for table, label in ((OUT_OF_REACH, "out of reach"), (DELIBERATE, "deliberate")):
        for pattern, reason in table.items():
            if re.search(pattern, message or ""):
                return f"{label}: {reason}"
    return ""


def build(run: dict, baseline: dict) -> str:
    base_tests = baseline["tests"]
    tests = run["tests"]
    peers = [name for name, r in base_tests.items() if r["outcome"] == "passed"]
    passing = [name for name in peers if tests.get(name, {}).get("outcome") == "passed"]
    failing = [name for name in peers if name not in passing]
    groups: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    for name in failing:
        message = tests.get(name, {}).get("message", "")
        groups[(kind_of(message), reach_of(message, name.split("::")[-1]))].append(name)
    lines = [
        "# Peer suite: PyTorch's function tests under bytegraph",
        "",
        "Generated by `python tools/gen_peer_table.py RUN.json BASELINE.json` from a run of",
        "`../shared/peer-suite/run_peer.py`; do not edit. The second peer suite, CPython's own semantics",
        "tests, is in [peer_suite_cpython.md](peer_suite_cpython.md).",
        "",
        f"**Peer score: {len(passing)} / {len(peers)}** tests that pass under torch.compile "
        f"{run.get('torch', '')} also pass under bytegraph "
        f"({100 * len(passing) / max(len(peers), 1):.1f}%).",
        "",
        f"The {len(failing)} others, by kind (largest first):",
        "",
        "| kind | tests | reach | tests (first error) |",
        "|---|---|---|---|",
    ]
    for (kind, reach), names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        first = tests.get(names[0], {}).get("message", "")
        shown = ", ".join(f"`{n.split('::')[-1]}`" for n in names)
        error = re.sub(r"^(torch\._dynamo\.exc\.Unsupported: Unsupported: |bytegraph\.breaks\.Unsupported: )", "",
                       _first_line(first)).replace("|", "\\|")[:140]
        lines.append(f"| {kind} | {len(names)} | {reach or '-'} | {shown}<br>{error} |")
    return "\n".join(lines) + "\n"


def _file_of(test: str) -> str:
    return test.split("::")[0]


def build_cpython(run: dict, baseline: dict) -> str:
    """The CPython-suite page: per-file pass counts of both frontends, then the
    tests only torch.compile passes, by kind (largest first)."""
    base, tests = baseline["tests"], run["tests"]
    passed = lambda records, name: records.get(name, {}).get("outcome") == "passed"  # noqa: E731
    files = sorted({_file_of(name) for name in base} | {_file_of(name) for name in tests})
    lines = [
        "# Peer suite 2: CPython's semantics tests under bytegraph",
        "",
        "Generated by `python tools/gen_peer_table.py --suite cpython RUN.json BASELINE.json` from runs of",
        "`../shared/peer-suite/run_peer.py` on the files of `tools/peer/cpython_manifest.json`",
        f"(PyTorch's ports of CPython's `Lib/test`, run on Python 3.11 with torch {run.get('torch', '')});",
        "do not edit. Every test body is compiled whole (`fullgraph=True`, backend `eager_noexcept`).",
        "",
        "| file | tests | torch.compile passes | bytegraph passes | both pass |",
        "|---|---|---|---|---|",
    ]
    totals = [0, 0, 0, 0]
    for name in files:
        names = sorted({t for t in (*base, *tests) if _file_of(t) == name})
        row = [len(names), sum(passed(base, t) for t in names), sum(passed(tests, t) for t in names),
               sum(passed(base, t) and passed(tests, t) for t in names)]
        totals = [a + b for a, b in zip(totals, row)]
        lines.append(f"| {name} | " + " | ".join(map(str, row)) + " |")
    lines.append("| **total** | " + " | ".join(f"**{v}**" for v in totals) + " |")
    failing = [t for t in base if passed(base, t) and not passed(tests, t)]
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for name in failing:
        groups[detailed_kind(tests.get(name, {}).get("message", "") or "not run")].append(name)
    lines += [
        "",
        f"## The {len(failing)} tests torch.compile passes and bytegraph fails, by kind",
        "",
        "| kind | tests | files | first test (first error line) |",
        "|---|---|---|---|",
    ]
    for kind, names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        first = names[0]
        error = re.sub(r"^(torch\._dynamo\.exc\.Unsupported: Unsupported: |bytegraph\.breaks\.Unsupported: )", "",
                       _first_line(tests.get(first, {}).get("message", "")))
        where = ", ".join(sorted({_file_of(n).removesuffix(".py") for n in names}))
        cell = f"`{first.split('::', 1)[-1]}`<br>{error[:140]}".replace("|", "\\|")
        lines.append(f"| {kind.replace('|', chr(92) + '|')} | {len(names)} | {where} | {cell} |")
    return "\n".join(lines) + "\n"


def _merged(paths: str) -> dict:
    """One run from the comma-separated run_peer.py json files (their tests united)."""
    runs = [json.loads(Path(p).read_text()) for p in paths.split(",")]
    return {**runs[0], "tests": {name: rec for one in runs for name, rec in one["tests"].items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run")
    parser.add_argument("baseline")
    parser.add_argument("--suite", choices=("functions", "cpython"), default="functions")
    parser.add_argument("--out")
    args = parser.parse_args()
    docs = Path(__file__).resolve().parents[1] / "docs"
    if args.suite == "cpython":
        text = build_cpython(_merged(args.run), _merged(args.baseline))
    else:
        text = build(_merged(args.run), _merged(args.baseline))
    out = Path(args.out or docs / ("peer_suite_cpython.md" if args.suite == "cpython" else "peer_suite.md"))
    out.write_text(text)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
