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

from typing import Mapping, Sequence

from bytegraph.guards.guards import Guard, NotShadowed
from bytegraph.guards.source import GLOBAL_STATE, Source, user_name
from bytegraph.guards.words import modules_phrase


class GuardWords:
    """Renders the guards of one cache entry in words; one instance per entry,
    so dynamic sizes are numbered ``s0, s1, ...`` consistently across its guards."""

    def __init__(self, guards: Sequence[Guard], names: Mapping[Source, str] | None = None):
        self.guards = list(guards)
        self.names = names  # sources named by the caller (see :func:`~bytegraph.guards.source.user_name`)
        self.symbols: dict[tuple[Source, int], str] = {}
        for guard in self.guards:
            for dim in guard.dynamic_dims():
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
            groups[name].append(f"the builtin (no global of {modules_phrase(modules)} shadows it)")
        state = groups.pop(GLOBAL_STATE, None)
        return list(groups.items()) + ([(GLOBAL_STATE, state)] if state else [])

    def lines(self) -> list[str]:
        """One line per value: ``name: fact; fact``."""
        return [f"{name}: {'; '.join(facts)}" for name, facts in self.grouped()]

    def describe(self, guard: Guard) -> tuple[str, str]:
        """``(name of the value checked, the fact in words)``: the guard's own :meth:`~Guard.describe`."""
        return guard.describe(self)

    def name(self, source: Source | None) -> str:
        """How the user's code names ``source``."""
        return user_name(source, self.names)

    def symbol(self, source: Source, dim: int) -> str | None:
        """The symbol (``s0``...) of dynamic size ``dim`` of the tensor at ``source``."""
        return self.symbols.get((source, dim))


def describe_guards(guards: Sequence[Guard], names: Mapping[Source, str] | None = None) -> list[str]:
    """The guards of one cache entry, one line per value (see :class:`GuardWords`)."""
    return GuardWords(guards, names).lines()

