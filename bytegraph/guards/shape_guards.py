"""Guards from the ShapeEnv: facts about symbolic sizes and scalars.

When a trace uses symbolic sizes (dynamic shapes), torch's ShapeEnv records
every assumption the trace made about them (``s0 >= 2``, ``s0 == s1``...).
:func:`shape_env_guards` asks it for those assumptions as Python expressions
over our sources and wraps each in a :class:`ShapeGuard`, rendered into the
cache entry's guard function like any other guard.

ShapeEnv names inputs through ``torch._guards.Source`` objects;
:class:`ShapeSource` adapts ours.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any, ClassVar, Sequence

import torch
import torch._guards

from bytegraph.guards.guards import Guard, Names
from bytegraph.guards.source import GLOBAL_STATE, Source
from bytegraph.guards.tensor_guards import TensorMatch
from bytegraph.guards.words import INPUTS, Words

_TOKEN = re.compile(r"___SRC(\d+)___")
_SHAPE_REF = re.compile(r"___SRC(\d+)___(?:\.(size|stride)\(\)\[(\d+)\]|\.storage_offset\(\))?")
_LOWER_BOUND = re.compile(r"(-?\d+) <= ([\w.]+)")


@dataclasses.dataclass(frozen=True)
class ShapeSource(torch._guards.Source):
    """One of our sources, as the ShapeEnv sees it (for naming symbols and guards)."""

    source: Source

    @functools.cached_property
    def name(self) -> str:
        return self.source.name()

    @functools.cached_property
    def guard_source(self) -> torch._guards.GuardSource:
        return torch._guards.GuardSource.LOCAL

    @property
    def _name_template(self) -> str:
        return self.source.name()


@dataclasses.dataclass(frozen=True, eq=False)
class ShapeGuard(Guard):
    """A ShapeEnv guard: ``template`` with ``___SRC<k>___`` standing for the
    expression of ``sources[k]``."""

    template: str = "True"
    sources: tuple = ()
    order: ClassVar[int] = 4
    group: ClassVar[str | None] = INPUTS

    def key(self) -> tuple:
        return ("ShapeGuard", self.template, self.sources)

    def describe(self, words: Words) -> tuple[str, str]:
        """Named by its first source, with sizes as symbols: ``s0 >= 2``, ``x.stride(0) == s1``."""

        def ref(m: re.Match) -> str:
            source = self.sources[int(m.group(1))]
            kind, dim = m.group(2), m.group(3)
            if kind == "size":
                return words.symbol(source, int(dim)) or f"{words.name(source)}.size({dim})"
            if kind == "stride":
                return f"{words.name(source)}.stride({dim})"
            if m.group(0).endswith("storage_offset()"):
                return f"{words.name(source)}.storage_offset()"
            return words.name(source)

        text = _SHAPE_REF.sub(ref, self.template)
        lower = _LOWER_BOUND.fullmatch(text)  # ShapeEnv writes lower bounds as ``2 <= s0``
        first = words.name(self.sources[0]) if self.sources else GLOBAL_STATE
        return first, f"{lower.group(2)} >= {lower.group(1)}" if lower else text

    def check(self, names: Names, value: str) -> str:
        raise AssertionError("rendered by the code builder, which knows each source's expression")

    def render(self, expr_of: Any) -> str:
        """The guard as Python source, given ``expr_of(source) -> str``."""
        return _TOKEN.sub(lambda m: expr_of(self.sources[int(m.group(1))]), self.template)

    def explain(self, actual: Any) -> str:
        readable = _TOKEN.sub(lambda m: self.sources[int(m.group(1))].name(), self.template)
        return f"symbolic shape guard failed: {readable}"


def shape_env_guards(
    shape_env: Any, examples: Sequence[Any], sources: Sequence[Source], contexts: Sequence[Any]
) -> list[ShapeGuard]:
    """The ShapeEnv's guards over the graph inputs ``examples`` read from
    ``sources`` (made symbolic with ``contexts``).

    Raises:
        ConstraintViolationError: when the trace specialised a dimension marked
            with ``mark_dynamic`` (its constraint is in ``contexts``).
    """
    if shape_env is None or not examples:
        return []
    used: list[Source] = []

    def ref(src: Any) -> str:
        prop = getattr(src, "prop", None)
        base = getattr(src, "base", src)
        ours = base.source if isinstance(base, ShapeSource) else None
        if ours is None:
            raise AssertionError(f"unexpected ShapeEnv source {src!r}")
        if ours not in used:
            used.append(ours)
        token = f"___SRC{used.index(ours)}___"
        if prop is None:
            return token
        kind = prop.name
        if kind == "SIZE":
            return f"{token}.size()[{src.idx}]"
        if kind == "STRIDE":
            return f"{token}.stride()[{src.idx}]"
        return f"{token}.storage_offset()"

    texts = shape_env.produce_guards(
        list(examples), [ShapeSource(s) for s in sources], source_ref=ref, input_contexts=list(contexts)
    )
    frozen = tuple(used)
    return [ShapeGuard(None, text, frozen) for text in texts]


def settle_tensor_guards(shape_env: Any, guards: Sequence[Guard], examples: dict[Source, Any]) -> list[Guard]:
    """TensorMatch guards with the sizes the trace specialised put back.

    A dim traced symbolically may have been specialised by the trace (the
    ShapeEnv replaced its symbol by a number, e.g. after ``if x.size(0) == 3``);
    the ShapeEnv then emits no guard for it, so the tensor guard checks it.
    """
    if shape_env is None:
        return list(guards)
    out: list[Guard] = []
    for guard in guards:
        example = examples.get(guard.source) if isinstance(guard, TensorMatch) else None
        if example is not None and None in guard.sizes:
            sizes = tuple(
                want if want is not None else _specialised(shape_env, example.size(i))
                for i, want in enumerate(guard.sizes)
            )
            guard = dataclasses.replace(guard, sizes=sizes)
        out.append(guard)
    return out


def _specialised(shape_env: Any, size: Any) -> int | None:
    expr = shape_env.replace(size.node.expr) if isinstance(size, torch.SymInt) else size
    return int(expr) if getattr(expr, "is_number", isinstance(expr, int)) else None
