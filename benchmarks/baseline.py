"""torch.compile's graph counts per zoo model, recorded from real runs.

The slow test tier (``tests/test_corpus.py``) asserts that bytegraph makes no
more graphs than torch.compile on each model. Running torch.compile there
would double the tier's time and tie it to torch's frontend; instead
``python -m benchmarks.compare --baseline FILE`` (``make bench``, or ``make
bench-baseline`` for the torch.compile half alone) writes what torch.compile
did in its own fresh process per model: graphs and graph breaks on the first
call, frames it gave up on and ran natively ("skipped"), status, and the
torch version and command of the run. The test reads
the file and refuses one recorded with another torch version.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DEFAULT = Path(__file__).resolve().parent / "models" / "torch_compile_baseline.json"


def record(path: Path, results: list[dict], meta: dict) -> int:
    """Merge the torch.compile results of a run into ``path``; returns how
    many models were recorded. Models the run did not include keep their
    entries only when the torch version is unchanged."""
    env = meta.get("env", {})
    data = load(path) if path.exists() else {}
    if data.get("torch") != env.get("torch") or data.get("backend") != meta["backend"]:
        data = {}
    models = data.get("models", {})
    recorded = 0
    for r in results:
        if r.get("frontend") != "torch.compile":
            continue
        models[r["model"]] = {"status": r.get("status"), "graphs": r.get("graphs"), "breaks": r.get("breaks"),
                              "skipped_frames": len(r.get("first_native_frames") or [])}
        recorded += 1
    data.update(torch=env.get("torch"), backend=meta["backend"], date=meta["date"], command=meta["command"],
                regenerate="make bench-baseline", models=dict(sorted(models.items())))
    path.write_text(json.dumps(data, indent=1) + "\n")
    return recorded


def load(path: Path = DEFAULT) -> dict[str, Any]:
    """The recorded baseline: ``{"torch": version, "backend": ..., "models":
    {name: {"status", "graphs", "breaks", "skipped_frames"}}, ...}``."""
    return json.loads(path.read_text())
