"""Shrink a failing program: drop statements (then lines inside them) while the
compiled run still differs from eager in the same way."""
from __future__ import annotations

from tools.fuzz.differential import compare
from tools.fuzz.programs import render


def minimize(body: list[list[str]], seed: int, backend: str, diff: str) -> list[list[str]]:
    """The smallest body found (greedy, one statement at a time, to a fixed point)
    whose program still fails with ``diff``; the return statement is kept."""

    def fails(candidate: list[list[str]]) -> bool:
        try:
            return compare(render(candidate), seed, backend) == diff
        except SyntaxError:
            return False

    changed = True
    while changed:
        changed = False
        for i in range(len(body) - 2, -1, -1):  # (the last statement is the return)
            candidate = body[:i] + body[i + 1:]
            if fails(candidate):
                body, changed = candidate, True
    return body
