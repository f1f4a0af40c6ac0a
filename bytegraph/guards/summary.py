"""Guards summarised by what they protect.

A cache entry of a real model holds hundreds of guards, most of them checks
that library globals are still the objects the trace saw. A user asks first
about the few that decide recompiles: the call's inputs (types, shapes,
dtypes, dynamic sizes). :func:`summarise` sorts an entry's guards into
:data:`GROUPS`, in this order:

- ``inputs``: the call's arguments (and tensors captured in closures), their
  shapes, dtypes, dynamic sizes and the ShapeEnv's facts about them, in full;
- ``parameters and buffers``: tensors held by modules;
- ``module structure``: modules' identity, type, submodules, hooks and the
  attributes the trace read (``self.training``, ``config.n_layer``);
- ``globals and builtins``: module globals, closures' other values, class
  attributes and builtins: identity checks are one line per module
  (``transformers.masking_utils: 12 objects unchanged: Cache, ...``);
- ``global torch state``: grad mode, default dtype, autocast...

Each group has its guard count and an estimate of its per-call cost: the
guard function's measured time split by the operations each group's checks
run (counted in the generated source).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Mapping, Sequence

from bytegraph.guards.describe import GuardWords
from bytegraph.guards.guards import Guard, NotShadowed
from bytegraph.guards.source import (
    AttrSource,
    ClosureSource,
    ConstSource,
    GetItemSource,
    GlobalSource,
    Source,
)
from bytegraph.guards.words import GLOBALS, GROUPS, INPUTS, PARAMETERS, STRUCTURE

#: names listed on one collapsed line before "and N more"
_LISTED = 10


@dataclasses.dataclass
class GuardGroup:
    """The guards of one entry that protect one kind of thing.

    Attributes:
        name: one of :data:`GROUPS`.
        guards: its guards, in check order.
        lines: ``(what, facts)`` rows in words; identity checks of one
            module's globals are one row.
        seconds: estimated per-call cost of its checks (None when the guard
            function was not timed).
    """

    name: str
    guards: list[Guard]
    lines: list[tuple[str, str]]
    seconds: float | None = None


def summarise(guards: Sequence[Guard], names: Mapping[Source, str] | None = None, guard_code: str = "",
              guard_seconds: float | None = None) -> list[GuardGroup]:
    """``guards`` (one cache entry's, in check order) grouped by what they
    protect, non-empty groups in :data:`GROUPS` order. ``names`` names sources
    as :class:`GuardWords` does; ``guard_code`` (the generated function) and
    ``guard_seconds`` (its measured per-call time) give each group's cost."""
    words = GuardWords(guards, names)
    modules = _module_sources(guards)
    by_group: dict[str, list[Guard]] = {name: [] for name in GROUPS}
    for guard in guards:
        by_group[protects(guard, modules)].append(guard)
    weights = _weights(guards, guard_code)
    total = sum(weights.values()) or 1
    out = []
    for name, members in by_group.items():
        if not members:
            continue
        lines = _collapsed(words, members) if name == GLOBALS else [
            (what, "; ".join(facts)) for what, facts in words.grouped(members)]
        seconds = None
        if guard_seconds is not None and weights:
            seconds = guard_seconds * sum(weights.get(id(g), 0) for g in members) / total
        out.append(GuardGroup(name, members, lines, seconds))
    return out


def protects(guard: Guard, modules: set[Source]) -> str:
    """The group of ``guard``: its kind's own (:attr:`Guard.group`), or by the
    path of its source; ``modules`` are the sources known to hold modules."""
    if guard.group is not None:
        return guard.group
    if guard.source is None:
        return INPUTS
    path = _path(guard.source)
    root = path[0]
    if any(s in modules for s in path):
        held = any(isinstance(s, AttrSource) and s.attr in ("_parameters", "_buffers") for s in path)
        return PARAMETERS if held or guard.checks_tensor else STRUCTURE
    if isinstance(root, (GlobalSource, ConstSource)) or (
            isinstance(root, ClosureSource) and not guard.checks_tensor):
        return GLOBALS
    return INPUTS


def _path(source: Source) -> list[Source]:
    """``source`` and the sources it is read through, root first."""
    path = [source]
    while path[-1].base is not None:
        path.append(path[-1].base)
    return path[::-1]


def _module_sources(guards: Sequence[Guard]) -> set[Source]:
    """Sources the guards show to hold an ``nn.Module``: identity or type
    checks of a module, hook checks, and what is read from ``_modules``."""
    modules: set[Source] = set()
    for guard in guards:
        source = guard.source
        if source is None:
            continue
        held = guard.module_source()
        if held is not None:
            modules.add(held)
        for s in _path(source):
            if isinstance(s, GetItemSource) and isinstance(s.base_source, AttrSource) and (
                    s.base_source.attr == "_modules"):
                modules.add(s)
    return modules


def _collapsed(words: GuardWords, guards: list[Guard]) -> list[tuple[str, str]]:
    """Rows of the globals group: per module, the objects checked by identity
    on one row and the other facts on another; the builtins on one row."""
    same: dict[str, list[str]] = {}
    other: dict[str, list[str]] = {}
    builtins: list[str] = []
    for guard in guards:
        if isinstance(guard, NotShadowed):
            if guard.builtin_name not in builtins:
                builtins.append(guard.builtin_name)
            continue
        module, short = _module_and_name(words, guard.source)
        if guard.unchanged_object:
            if short not in same.setdefault(module, []):
                same[module].append(short)
        else:
            _, fact = words.describe(guard)
            other.setdefault(module, []).append(f"{short} {fact}")
    rows = []
    for module in dict.fromkeys([*same, *other]):
        facts = []
        if module in same:
            facts.append(f"{_count(same[module], 'object')} unchanged: {_listed(same[module])}")
        if module in other:
            facts.append(_listed(other[module], sep="; "))
        rows.append((module, "; ".join(facts)))
    if builtins:
        rows.append(("builtins", f"{_count(builtins, 'name')} still the builtins (no module global shadows them): "
                                 f"{_listed(builtins)}"))
    return rows


def _module_and_name(words: GuardWords, source: Source) -> tuple[str, str]:
    """The module a global or class attribute lives in, and its name there."""
    root = _path(source)[0]
    full = words.name(source)
    if isinstance(root, GlobalSource):
        module = root.f_globals.get("__name__", "?")
        return module, full.removeprefix(f"{module}.")
    if isinstance(root, ConstSource):
        return getattr(root.value, "__module__", None) or "other objects", full
    return "closures", full


def _count(items: list, noun: str) -> str:
    return f"{len(items)} {noun}{'s' if len(items) != 1 else ''}"


def _listed(items: list[str], sep: str = ", ") -> str:
    shown = sep.join(items[:_LISTED])
    return shown + (f"{sep}and {len(items) - _LISTED} more" if len(items) > _LISTED else "")


_CHECK = re.compile(r"^\s*if not \((.*)\): return False$")
#: what costs time in a check: attribute reads, calls and subscripts, comparisons
_OPERATION = re.compile(r"\.[A-Za-z_]|[(\[]|==|!=|<=|>=|[<>]|\bis\b|\bin\b")


def _weights(guards: Sequence[Guard], guard_code: str) -> dict[int, int]:
    """``id(guard) -> operations its check runs`` (:data:`_OPERATION` in its
    ``if not (...)`` line of the guard function and in the temporaries computed
    just before it). Empty when the source does not line up with ``guards``."""
    body = guard_code.split("def ", 2)[2] if guard_code.count("def ") >= 2 else ""
    body = body.split("\n    def ", 1)[0]  # the guard function itself, not its first_failure twin
    weights: dict[int, int] = {}
    pending = 0
    checks = iter(guards)
    for line in body.splitlines()[2:]:
        match = _CHECK.match(line)
        if match is None:
            if line.strip().startswith("except"):
                break
            pending += len(_OPERATION.findall(line))
            continue
        guard = next(checks, None)
        if guard is None:
            return {}
        weights[id(guard)] = 1 + len(_OPERATION.findall(match.group(1))) + pending
        pending = 0
    return weights if next(checks, None) is None else {}
