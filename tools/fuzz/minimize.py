"""Shrink a failing program: drop statements from its blocks (greedily, last
first, to a fixed point) while the compiled run still differs from eager in
the same way."""
from __future__ import annotations

import time

from tools.fuzz.differential import compare
from tools.fuzz.program import Block, Part, render


def _without(parts: list[Part], block: int, stmt: int) -> list[Part]:
    old = parts[block]
    assert isinstance(old, Block)
    new = Block(old.indent, old.stmts[:stmt] + old.stmts[stmt + 1:], old.keep)
    return parts[:block] + [new] + parts[block + 1:]


def minimize(parts: list[Part], backend: str, diff: str, budget_s: float = 300.0) -> list[Part]:
    """The smallest program found whose compiled run still fails with ``diff``
    (each block's last ``keep`` statements stay); stops early, keeping the
    smallest so far, after ``budget_s`` seconds."""

    def fails(candidate: list[Part]) -> bool:
        try:
            return compare(render(candidate), backend) == diff
        except SyntaxError:
            return False

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
