"""Guards in words, grouped by the value they check.

What ``explain()``, the ``guards`` log channel and the HTML report show a
user: ``x: float32 tensor of shape (s0, 3)`` and ``s0 >= 2`` rather than the
generated check (``type(x) is ___c1 and x.dtype is ___c2 ...``). Values are
named as the user's code names them (``self.fc.weight``, not
``L['self']._modules['fc']._parameters['weight']``); dynamic sizes get the
symbols ``s0, s1, ...`` in the order their tensors are guarded, the way
torch's ShapeEnv names them.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import torch

from bytegraph.guards.guards import (
    ConstantMatch,
    DictContains,
    DictKeysMatch,
    EqualsMatch,
    FiniteFloat,
    GlobalStateMatch,
    Guard,
    IdMatch,
    LenMatch,
    NoAliasing,
    NoModuleHooks,
    NotShadowed,
    RecomputedMatch,
    SameObject,
    TypeMatch,
)
from bytegraph.guards.shape_guards import ShapeGuard
from bytegraph.guards.source import GLOBAL_STATE, Source, user_name
from bytegraph.guards.tensor_guards import SameStorage, TensorMatch

_SHAPE_REF = re.compile(r"___SRC(\d+)___(?:\.(size|stride)\(\)\[(\d+)\]|\.storage_offset\(\))?")
_LOWER_BOUND = re.compile(r"(-?\d+) <= ([\w.]+)")
_LONG = 60
_LISTED = 8  # names an aliasing guard lists before "and N more"


class GuardWords:
    """Renders the guards of one cache entry in words; one instance per entry,
    so dynamic sizes are numbered ``s0, s1, ...`` consistently across its guards."""

    def __init__(self, guards: Sequence[Guard], names: Mapping[Source, str] | None = None):
        self.guards = list(guards)
        self.names = names  # sources named by the caller (see :func:`~bytegraph.guards.source.user_name`)
        self.symbols: dict[tuple[Source, int], str] = {}
        for guard in self.guards:
            if isinstance(guard, TensorMatch):
                for dim, size in enumerate(guard.sizes):
                    if size is None:
                        self.symbols[(guard.source, dim)] = f"s{len(self.symbols)}"

    def grouped(self, guards: Sequence[Guard] | None = None) -> list[tuple[str, list[str]]]:
        """``[(value name, [facts...]), ...]`` of ``guards`` (default: all) in
        the order values are first guarded; process-wide state last."""
        groups: dict[str, list[str]] = {}
        unshadowed: dict[str, list[str]] = {}  # builtin -> modules none of whose globals shadow it
        for guard in self.guards if guards is None else guards:
            if isinstance(guard, NotShadowed):
                modules = unshadowed.setdefault(guard.builtin_name, [])
                if not modules:
                    groups.setdefault(guard.builtin_name, [])
                modules.append(guard.f_globals.get("__name__", "?"))
                continue
            name, text = self.describe(guard)
            facts = groups.setdefault(name, [])
            if text not in facts:
                facts.append(text)
        for name, modules in unshadowed.items():
            groups[name].append(f"the builtin (no global of {_modules(modules)} shadows it)")
        state = groups.pop(GLOBAL_STATE, None)
        return list(groups.items()) + ([(GLOBAL_STATE, state)] if state else [])

    def lines(self) -> list[str]:
        """One line per value: ``name: fact; fact``."""
        return [f"{name}: {'; '.join(facts)}" for name, facts in self.grouped()]

    def describe(self, guard: Guard) -> tuple[str, str]:
        """``(name of the value checked, the fact in words)``."""
        name = self.name(guard.source)
        if isinstance(guard, TensorMatch):
            return name, self._tensor(guard)
        if isinstance(guard, ShapeGuard):
            first = self.name(guard.sources[0]) if guard.sources else GLOBAL_STATE
            return first, self.shape_text(guard)
        if isinstance(guard, ConstantMatch):
            exp = guard.expected
            if exp is None or exp is Ellipsis or exp is NotImplemented or type(exp) is bool:
                return name, f"is {exp!r}"
            return name, f"== {_short(exp)} ({type(exp).__name__})"
        if isinstance(guard, TypeMatch):
            return name, f"has type {_type_name(guard.expected)}"
        if isinstance(guard, EqualsMatch):
            return name, f"== {_short(guard.expected)}"
        if isinstance(guard, RecomputedMatch):
            return name, f"{guard.label} is {guard.expected!r} (recomputed with Python's operations)"
        if isinstance(guard, FiniteFloat):
            return name, "finite float (neither NaN nor infinite)"
        if isinstance(guard, IdMatch):
            return name, f"is the same object as when compiled ({guard.label})"
        if isinstance(guard, LenMatch):
            return name, f"{_type_name(guard.expected_type)} of length {guard.length}"
        if isinstance(guard, NoModuleHooks):
            return name, "has no forward/backward hooks of its own"
        if isinstance(guard, DictKeysMatch):
            return name, f"{_type_name(guard.expected_type)} with keys {_short(list(guard.keys))}"
        if isinstance(guard, DictContains):
            return name, f"{'has' if guard.present else 'has no'} key {_short(guard.key_value)}"
        if isinstance(guard, NotShadowed):
            return guard.builtin_name, f"the builtin (no global of {_modules([guard.f_globals.get('__name__', '?')])} shadows it)"
        if isinstance(guard, GlobalStateMatch):
            return GLOBAL_STATE, f"{guard.label} = {_short(guard.expected)}"
        if isinstance(guard, SameObject):
            return name, f"is the same object as {self.name(guard.other)}"
        if isinstance(guard, SameStorage):
            verb = "shares" if guard.same else "does not share"
            return name, f"{verb} its storage with {self.name(guard.other)}"
        if isinstance(guard, NoAliasing):
            names = [self.name(s) for s in guard.sources]
            shown = ", ".join(names[:_LISTED]) + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "")
            return "inputs", f"{len(names)} distinct objects: {shown}"
        return name, type(guard).__name__

    def name(self, source: Source | None) -> str:
        """How the user's code names ``source``."""
        return user_name(source, self.names)

    def shape_text(self, guard: ShapeGuard) -> str:
        """A ShapeEnv guard with sizes as symbols: ``s0 >= 2``, ``x.stride(0) == s1``."""

        def ref(m: re.Match) -> str:
            source = guard.sources[int(m.group(1))]
            kind, dim = m.group(2), m.group(3)
            if kind == "size":
                return self.symbols.get((source, int(dim)), f"{self.name(source)}.size({dim})")
            if kind == "stride":
                return f"{self.name(source)}.stride({dim})"
            if m.group(0).endswith("storage_offset()"):
                return f"{self.name(source)}.storage_offset()"
            return self.name(source)

        text = _SHAPE_REF.sub(ref, guard.template)
        lower = _LOWER_BOUND.fullmatch(text)  # ShapeEnv writes lower bounds as ``2 <= s0``
        return f"{lower.group(2)} >= {lower.group(1)}" if lower else text

    def _tensor(self, guard: TensorMatch) -> str:
        sizes = ", ".join(
            self.symbols.get((guard.source, d), "?") if s is None else str(s) for d, s in enumerate(guard.sizes)
        )
        kind = "tensor" if guard.tensor_type is torch.Tensor else guard.tensor_type.__name__
        dtype = str(guard.dtype).removeprefix("torch.")
        text = f"{dtype} {kind} of shape ({sizes}{',' if len(guard.sizes) == 1 else ''})"
        if guard.device.type != "cpu":
            text += f" on {guard.device}"
        if guard.requires_grad:
            text += ", requires_grad"
        if not guard.contiguous:
            strides = ", ".join("?" if s is None else str(s) for s in guard.strides)
            text += f", strides ({strides})"
        return text


def describe_guards(guards: Sequence[Guard], names: Mapping[Source, str] | None = None) -> list[str]:
    """The guards of one cache entry, one line per value (see :class:`GuardWords`)."""
    return GuardWords(guards, names).lines()


def _modules(names: list[str]) -> str:
    unique = list(dict.fromkeys(names))
    return f"module {unique[0]}" if len(unique) == 1 else "modules " + ", ".join(unique)


def _type_name(cls: type) -> str:
    module = getattr(cls, "__module__", "builtins")
    return cls.__qualname__ if module in ("builtins", "__main__") else f"{module}.{cls.__qualname__}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _LONG else text[: _LONG - 3] + "..."
