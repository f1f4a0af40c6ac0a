"""Shrink a failing program: drop statements from its blocks (greedily, last
first, to a fixed point) while the compiled run still differs from eager in
the same way (or, for a hidden rerun, still reruns a frame with no difference)."""
from __future__ import annotations

import time

from tools.fuzz.differential import signature
from tools.fuzz.program import Block, Part, render


def _without(parts: list[Part], block: int, stmt: int) -> list[Part]:
    old = parts[block]
    assert isinstance(old, Block)
    new = Block(old.indent, old.stmts[:stmt] + old.stmts[stmt + 1:], old.keep)
    return parts[:block] + [new] + parts[block + 1:]


def minimize(parts: list[Part], backend: str, diff: str | None, budget_s: float = 300.0,
             reruns: bool = False) -> list[Part]:
    """The smallest program found whose compiled run still fails with ``diff``
    (and still has hidden reruns, when ``reruns``; each block's last ``keep``
    statements stay); stops early, keeping the smallest so far, after
    ``budget_s`` seconds."""

    def fails(candidate: list[Part]) -> bool:
        try:
            found, hidden = signature(render(candidate), backend)
        except SyntaxError:
            return False
        return found == diff and bool(hidden) == reruns

    deadline = time.monotonic() + budget_s
    changed = True
    while changed and time.monotonic() < deadline:
        changed = False
        for b in range(len(parts) - 1, -1, -1):
            part = parts[b]
            if not isinstance(part, Block):
                continue
            for i in range(len(part.stmts) - part.keep - 1, -1, -1):
                if time.monotonic() > deadline:
                    return parts
                candidate = _without(parts, b, i)
                if fails(candidate):
                    parts, part, changed = candidate, candidate[b], True
    return parts
