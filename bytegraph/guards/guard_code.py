"""Generate the guard function of a cache entry.

One straight-line Python function per cache entry checks every guard::

    def ___guard(___cells, x, y):
        try:
            if not (___c0() is True): return False
            if not (type(x) is ___c1 and x.dtype is ___c2 and ...): return False
            ___t0 = self._modules
            ...
        except Exception:
            return False
        return True

It takes the closure cells of the function being run (``None`` if it has no
free variables) and then exactly the compiled function's own parameters, so
CPython binds the call's arguments natively. Constants (types, dtypes, dicts of
globals...) reach the code through the factory's closure, never through
``repr`` (invariant 3). Sub-paths used more than once are computed once into
temporaries. A twin function, ``first_failure``, returns the index of the first
failing guard and the value it saw; it runs only on a cache miss, to explain the
recompile in words.
"""
from __future__ import annotations

import dataclasses
import inspect
import keyword
import math
import types
from typing import Any, Callable, Sequence

import torch

from bytegraph.guards.guards import (
    ConstantMatch,
    Guard,
    NoAliasing,
    SameObject,
    SameStorage,
    TensorMatch,
    TypeMatch,
)
from bytegraph.guards.shape_guards import ShapeGuard
from bytegraph.guards.source import ClosureSource, GlobalSource, LocalSource, Source


@dataclasses.dataclass
class GuardFunction:
    """The generated guard of one cache entry.

    Attributes:
        check: ``check(cells, *args, **kwargs) -> bool``.
        guards: the guards in check order.
        text: the generated Python source (shown by the HTML report).
    """

    check: Callable[..., bool]
    first_failure_fn: Callable[..., tuple[int, Any]]
    guards: list[Guard]
    text: str
    observed: list[Guard] = dataclasses.field(default_factory=list)
    observe_fn: Callable[..., list] | None = None

    def observe(self, cells: Any, args: tuple, kwargs: dict) -> list[tuple[Guard, Any]]:
        """The current values of the sources of tensor and scalar guards (for
        automatic dynamic shapes); None where a source cannot be read."""
        if self.observe_fn is None:
            return []
        return list(zip(self.observed, self.observe_fn(cells, *args, **kwargs)))

    def first_failure(self, cells: Any, args: tuple, kwargs: dict) -> str | None:
        """Words for the first guard that fails on these arguments, or None."""
        index, value = self.first_failure_fn(cells, *args, **kwargs)
        if index < 0:
            return None
        return self.guards[index].explain(value)


class _Builder:
    def __init__(self, code: types.CodeType):
        self.code = code
        self.consts: dict[str, Any] = {}
        self._const_names: dict[int, str] = {}
        self.temps: dict[Source, str] = {}
        self.uses: dict[Source, int] = {}

    # names protocol used by sources and guards
    def const(self, value: Any) -> str:
        name = self._const_names.get(id(value))
        if name is None:
            name = f"___c{len(self.consts)}"
            self._const_names[id(value)] = name
            self.consts[name] = value
        return name

    def freevar_index(self, name: str) -> int:
        return self.code.co_freevars.index(name)

    def local(self, name: str) -> str:
        """The guard's parameter name for frame local ``name`` (generated code may
        have locals that are not identifiers, e.g. pytest's ``@py_assert1``)."""
        if name.isidentifier() and not keyword.iskeyword(name):
            return name
        return f"___arg{self.code.co_varnames.index(name)}"

    def expr(self, source: Source) -> str:
        temp = self.temps.get(source)
        return temp if temp is not None else source.guard_expr(self)

    def count_uses(self, guards: Sequence[Guard]) -> None:
        for guard in guards:
            sources = _sources_of(guard)
            for source in sources:
                while source is not None:
                    self.uses[source] = self.uses.get(source, 0) + 1
                    source = source.base

    def needs_temp(self, source: Source) -> bool:
        if isinstance(source, LocalSource):
            return False
        return self.uses.get(source, 0) > 1 or not isinstance(source, (GlobalSource, ClosureSource))

    def materialize(self, source: Source, out: list[str]) -> str:
        """Ensure ``source`` (and its bases) are available; return its expression."""
        if source in self.temps:
            return self.temps[source]
        if source.base is not None:
            self.materialize(source.base, out)
        if not self.needs_temp(source):
            return self.expr(source)
        text = source.guard_expr(self)
        temp = f"___t{len(self.temps)}"
        out.append(f"{temp} = {text}")
        self.temps[source] = temp
        return temp

    def check_text(self, guard: Guard, out: list[str]) -> tuple[str, str]:
        """(boolean expression, expression of the checked value)."""
        if isinstance(guard, NoAliasing):
            exprs = [self.materialize(s, out) for s in guard.sources]
            ids = ", ".join(f"id({e})" for e in exprs)
            return f"len({{{ids}}}) == {len(exprs)}", "None"
        if isinstance(guard, SameObject):
            value = self.materialize(guard.source, out)
            return f"{value} is {self.materialize(guard.other, out)}", value
        if isinstance(guard, SameStorage):
            a, b = (f"{self.materialize(s, out)}.untyped_storage().data_ptr()" for s in (guard.source, guard.other))
            return f"({a} {'==' if guard.same else '!='} {b})", "None"
        if isinstance(guard, ShapeGuard):
            return guard.render(lambda src: self.materialize(src, out)), "None"
        if guard.source is None:
            return guard.check(self, "None"), "None"
        value = self.materialize(guard.source, out)
        return guard.check(self, value), value


def _sources_of(guard: Guard) -> tuple:
    if isinstance(guard, (NoAliasing, ShapeGuard)):
        return guard.sources
    if isinstance(guard, (SameObject, SameStorage)):
        return (guard.source, guard.other)
    return (guard.source,)


def _parameters(code: types.CodeType, fn: Callable | None, builder: _Builder) -> str:
    """Parameter list text matching ``code``'s signature, defaults included."""
    if fn is not None:
        sig = inspect.signature(fn, follow_wrapped=False)
        parts = []
        seen_kwonly = False
        last_posonly = False
        for p in sig.parameters.values():
            if last_posonly and p.kind is not p.POSITIONAL_ONLY:
                parts.append("/")
                last_posonly = False
            if p.kind is p.POSITIONAL_ONLY:
                last_posonly = True
            if p.kind is p.KEYWORD_ONLY and not seen_kwonly:
                parts.append("*")
                seen_kwonly = True
            if p.kind is p.VAR_POSITIONAL:
                seen_kwonly = True
                parts.append(f"*{p.name}")
            elif p.kind is p.VAR_KEYWORD:
                parts.append(f"**{p.name}")
            elif p.default is not p.empty:
                parts.append(f"{p.name}={builder.const(p.default)}")
            else:
                parts.append(p.name)
        if last_posonly:
            parts.append("/")
        return ", ".join(parts)
    names = code.co_varnames[: code.co_argcount]
    return ", ".join(builder.local(n) for n in names)


def build_guard_function(
    code: types.CodeType, fn: Callable | None, guards: Sequence[Guard]
) -> GuardFunction:
    """Generate the guard function for ``code``.

    Args:
        code: the code object of the frame the guards apply to.
        fn: a function with that code, for its signature and defaults (None for
            resume functions, whose parameters are all positional).
        guards: the guards to check; duplicates by :meth:`Guard.key` are dropped.

    Returns:
        A :class:`GuardFunction`.
    """
    unique: dict[tuple, Guard] = {}
    for guard in guards:
        unique.setdefault(guard.key(), guard)
    typed = {(g.source, g.checked_type()) for g in unique.values() if g.checked_type() is not None}
    unique = {
        key: g for key, g in unique.items()
        if not (isinstance(g, TypeMatch) and (g.source, g.expected) in typed)
    }
    ordered = sorted(
        enumerate(unique.values()),
        key=lambda ig: (ig[1].order, ig[1].source.depth() if ig[1].source else 0, ig[0]),
    )
    ordered_guards = [g for _, g in ordered]

    builder = _Builder(code)
    builder.count_uses(ordered_guards)
    params = _parameters(code, fn, builder)
    check_lines: list[str] = []
    fail_lines: list[str] = []
    for index, guard in enumerate(ordered_guards):
        pre: list[str] = []
        cond, value = builder.check_text(guard, pre)
        for line in pre:
            check_lines.append(line)
            fail_lines.append(line)
        check_lines.append(f"if not ({cond}): return False")
        fail_lines.append(f"___i = {index}")
        fail_lines.append(f"if not ({cond}): return ({index}, {value})")

    observed = [g for g in ordered_guards if _observable(g)]
    plain = _Builder(code)  # no temporaries: each value read on its own
    plain.consts, plain._const_names = builder.consts, builder._const_names
    observe_lines = []
    for guard in observed:
        observe_lines += [
            "try:",
            f"    ___values.append({plain.expr(guard.source)})",
            "except Exception:",
            "    ___values.append(None)",
        ]
    observe_body = "\n".join(f"        {line}" for line in observe_lines) or "        pass"
    sig = f"___cells, {params}" if params else "___cells"
    factory_params = ", ".join(builder.consts)
    body = "\n".join(f"            {line}" for line in check_lines) or "            pass"
    fail_body = "\n".join(f"            {line}" for line in fail_lines) or "            pass"
    text = (
        f"def ___make({factory_params}):\n"
        f"    def ___guard({sig}):\n"
        f"        try:\n{body}\n"
        f"        except RecursionError:\n"
        f"            raise\n"
        f"        except Exception:\n"
        f"            return False\n"
        f"        return True\n"
        f"    def ___first_failure({sig}):\n"
        f"        ___i = -1\n"
        f"        try:\n{fail_body}\n"
        f"        except Exception:\n"
        f"            return (___i, None)\n"
        f"        return (-1, None)\n"
        f"    def ___observe({sig}):\n"
        f"        ___values = []\n"
        f"{observe_body}\n"
        f"        return ___values\n"
        f"    return ___guard, ___first_failure, ___observe\n"
    )
    namespace: dict[str, Any] = {"math": math, "torch": torch}  # ShapeEnv guards call math.isnan, math.floor...
    exec(compile(text, f"<bytegraph guards for {code.co_name}>", "exec"), namespace)
    check, first_failure, observe = namespace["___make"](**builder.consts)
    return GuardFunction(check, first_failure, ordered_guards, text, observed, observe)


def _observable(guard: Guard) -> bool:
    """Guards whose source values automatic dynamic shapes compares across calls."""
    if isinstance(guard, TensorMatch):
        return True
    return isinstance(guard, ConstantMatch) and type(guard.expected) in (int, float)
