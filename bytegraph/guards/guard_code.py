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
failing guard, the value it saw (or the exception reading it raised) and whether
it raised; it runs only on a cache miss, to explain the recompile in words, and
is compiled then (with ``observe``, which reads the guarded values for automatic
dynamic shapes).
"""
from __future__ import annotations

import builtins
import dataclasses
import functools
import inspect
import math
import re
import time
import types
from typing import Any, Callable, Sequence

import torch

from bytegraph.breaks import InternalError
from bytegraph.bytecode.versions import code_constants, code_objects, global_reads
from bytegraph.guards.guards import (
    ConstantMatch,
    Guard,
    IdMatch,
    NoAliasing,
    RecomputedMatch,
    SameObject,
    TypeMatch,
    describe_source,
)
from bytegraph.guards.module_guards import NoModuleHooks
from bytegraph.guards.shape_guards import ShapeGuard
from bytegraph.guards.source import (
    AttrSource,
    ClosureSource,
    GlobalSource,
    LocalSource,
    Source,
    attr_expr,
    is_plain_name,
)
from bytegraph.guards.tensor_guards import SameStorage, TensorMatch


@dataclasses.dataclass
class GuardFunction:
    """The generated guard of one cache entry.

    Attributes:
        check: ``check(cells, *args, **kwargs) -> bool``.
        guards: the guards in check order.
        text: the generated Python source (shown by the HTML report): the
            factory of ``check``, then those of its twins.
        observed: the guards whose values :meth:`observe` reads.
        make_twins: builds the ``first_failure`` and ``observe`` twins of
            ``check``. They run only on a cache miss, so their source is compiled
            on first use (compiling a large model's guard source is a tenth of its
            trace).
    """

    check: Callable[..., bool]
    guards: list[Guard]
    text: str
    observed: list[Guard]
    make_twins: Callable[[], tuple[Callable[..., tuple[int, Any, bool]], Callable[..., list]]]
    _twins: tuple | None = None

    def twins(self) -> tuple[Callable[..., tuple[int, Any, bool]], Callable[..., list]]:
        """(first_failure, observe): the generated functions, compiled now if not yet."""
        if self._twins is None:
            self._twins = self.make_twins()
        return self._twins

    def observe(self, cells: Any, args: tuple, kwargs: dict) -> list[tuple[Guard, Any]]:
        """The current values of the sources of tensor and scalar guards (for
        automatic dynamic shapes); None where a source cannot be read."""
        if not self.observed:
            return []
        return list(zip(self.observed, self.twins()[1](cells, *args, **kwargs)))

    def first_failure(self, cells: Any, args: tuple, kwargs: dict) -> str | None:
        """Words for the first guard that fails on these arguments, or None."""
        index, value, raised = self.twins()[0](cells, *args, **kwargs)
        if index < 0:
            return None
        guard = self.guards[index]
        if raised and guard.source is not None:  # reading the guarded value raised ``value``
            return f"{describe_source(guard.source)} could not be read: {type(value).__name__}: {value}"
        return guard.explain(None if raised else value)

    def seconds_per_call(self, cells: Any, args: tuple, kwargs: dict) -> float | None:
        """Seconds one call of :attr:`check` takes on the arguments its entry was
        compiled for (the fastest of up to :data:`GUARD_TIMING_CALLS` calls;
        None when it does not pass): the compile report's per-call guard cost."""
        best, spent = None, 0.0
        for _ in range(GUARD_TIMING_CALLS):
            start = time.perf_counter()
            try:
                passed = self.check(cells, *args, **kwargs)
            except TypeError:  # (cannot happen for arguments the frame was bound to; never the user's problem)
                return None
            seconds = time.perf_counter() - start
            if not passed:
                return None
            best = seconds if best is None else min(best, seconds)
            spent += seconds
            if spent > GUARD_TIMING_SECONDS:
                break
        return best


#: calls of a new guard function timed by :meth:`GuardFunction.seconds_per_call`, and the
#: seconds they may take together: a guard function warms up over its first calls
GUARD_TIMING_CALLS, GUARD_TIMING_SECONDS = 20, 0.002


class _Builder:
    def __init__(self, code: types.CodeType, prefix: str):
        self.code = code
        self.prefix = prefix
        self.consts: dict[str, Any] = {}
        self._const_names: dict[int, str] = {}
        self.temps: dict[Source, str] = {}
        self.uses: dict[Source, int] = {}
        #: (attribute, expected id) -> the expression of the first class whose
        #: attribute an identity guard checked (see :meth:`class_attr_check`)
        self.class_attrs: dict[tuple[str, int], str] = {}
        #: module class -> the expression of the first module of it whose hooks a guard checked
        self.hook_classes: dict[type, str] = {}

    # names protocol used by sources and guards
    def const(self, value: Any) -> str:
        name = self._const_names.get(id(value))
        if name is None:
            name = f"{self.prefix}c{len(self.consts)}"
            self._const_names[id(value)] = name
            self.consts[name] = value
        return name

    def freevar_index(self, name: str) -> int:
        return self.code.co_freevars.index(name)

    def cells(self) -> str:
        return f"{self.prefix}cells"

    def local(self, name: str) -> str:
        """The guard's parameter name for frame local ``name`` (generated code may
        have locals that are not identifiers, e.g. pytest's ``@py_assert1``)."""
        if not is_plain_name(name):
            return f"{self.prefix}arg{self.code.co_varnames.index(name)}"
        if name in _GLOBALS:  # ``len``, ``math``...: a stand-in until the guard's globals are renamed
            return f"{self.prefix}P_{name}"
        return name

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
        temp = f"{self.prefix}t{len(self.temps)}"
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
        if isinstance(guard, RecomputedMatch):
            args = ", ".join(self.materialize(s, out) for s in guard.sources)
            return f"{self.const(guard.recompute)}({args}) is {self.const(guard.expected)}", "None"
        if guard.source is None:
            return guard.check(self, "None"), "None"
        if isinstance(guard, IdMatch):
            shared = self.class_attr_check(guard, out)
            if shared is not None:
                return shared
        if isinstance(guard, NoModuleHooks) and guard.module_type is not None:
            return self.module_hooks_check(guard, out)
        value = self.materialize(guard.source, out)
        return guard.check(self, value), value

    def module_hooks_check(self, guard: NoModuleHooks, out: list[str]) -> tuple[str, str]:
        """:meth:`NoModuleHooks.render` over the module's ``__dict__`` and ``type()``
        (each into a temporary), the class checked once per distinct class."""
        module = self.materialize(guard.source, out)
        own_dict = self.materialize(AttrSource(guard.source, "__dict__"), out)
        cls = f"{self.prefix}t{len(self.temps)}"
        out.append(f"{cls} = type({module})")
        self.temps[_ModuleClass(guard.source)] = cls
        first = self.hook_classes.setdefault(guard.module_type, cls)
        return guard.render(self, own_dict, cls, None if first == cls else first), module

    def class_attr_check(self, guard: IdMatch, out: list[str]) -> tuple[str, str] | None:
        """The identity check of a method read from an object's class
        (``m.__class__.forward``), done once per distinct class.

        Modules of one class each guard the same class attribute; a later one
        whose class is the very class an earlier guard already checked passes
        with one ``is``: the class's attribute, read again in the same guard
        call, is the object just checked. Only where the attribute's value is
        used by no other guard (so it need not be read into a temporary).
        """
        source = guard.source
        base = source.base
        if not (isinstance(source, AttrSource) and isinstance(base, AttrSource) and base.attr == "__class__"):
            return None
        if self.uses.get(source, 0) != 1 or source in self.temps:
            return None
        cls = self.materialize(base, out)
        value = attr_expr(self, cls, source.attr)
        check = guard.check(self, value)
        first = self.class_attrs.setdefault((source.attr, guard.expected_id), cls)
        return (check if first == cls else f"{cls} is {first} or {check}"), value


@dataclasses.dataclass(frozen=True)
class _ModuleClass(Source):
    """``type(module)`` of a module whose hooks a guard checks (a temporary's key, never rendered)."""

    module: Source


def _sources_of(guard: Guard) -> tuple:
    if isinstance(guard, (NoAliasing, ShapeGuard, RecomputedMatch)):
        return guard.sources
    if isinstance(guard, (SameObject, SameStorage)):
        return (guard.source, guard.other)
    return (guard.source,)


def _parameters(code: types.CodeType, fn: Callable | None, builder: _Builder) -> str:
    """Parameter list text matching ``code``'s signature, with ``fn``'s defaults.

    Read from the code object (not ``inspect.signature``, which a ``__signature__``
    attribute can change). A name callers may pass by keyword is kept as is and
    must be a plain name; positional-only names (and all of a resume function's,
    ``fn`` None) are renamed when they are not. A parameter named like a global
    the guards read (``len``, ``math``) is written as a stand-in until
    :func:`_rename_shadowed` has renamed those globals, then gets its name back.

    Raises:
        InternalError: a parameter callers may pass by keyword has a name that is
            not a plain identifier.
    """
    names = code.co_varnames
    argcount, posonly, kwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    defaults = (fn.__defaults__ or ()) if fn is not None else ()
    kwdefaults = (fn.__kwdefaults__ or {}) if fn is not None else {}

    def param(index: int, keyword_ok: bool, default: Any = inspect.Parameter.empty) -> str:
        name = names[index]
        if keyword_ok and fn is not None and not is_plain_name(name):  # FrameCache._bind refuses these
            raise InternalError(f"{code.co_qualname} has a keyword parameter named {name!r}")
        text = builder.local(name)
        return text if default is inspect.Parameter.empty else f"{text}={builder.const(default)}"

    parts = []
    first_default = argcount - len(defaults)
    for i in range(argcount):
        default = defaults[i - first_default] if i >= first_default else inspect.Parameter.empty
        parts.append(param(i, i >= posonly, default))
        if i == posonly - 1:
            parts.append("/")
    index = argcount + kwonly
    if code.co_flags & inspect.CO_VARARGS:
        parts.append("*" + param(index, False))
        index += 1
    elif kwonly:
        parts.append("*")
    for i in range(argcount, argcount + kwonly):
        parts.append(param(i, True, kwdefaults.get(names[i], inspect.Parameter.empty)))
    if code.co_flags & inspect.CO_VARKEYWORDS:
        parts.append("**" + param(index, False))
    return ", ".join(parts)


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

    prefix = _internal_prefix(code)
    builder = _Builder(code, prefix)
    builder.count_uses(ordered_guards)
    params = _parameters(code, fn, builder)
    check_lines: list[str] = []
    fail_lines: list[str] = []
    for index, guard in enumerate(ordered_guards):
        pre: list[str] = []
        cond, value = builder.check_text(guard, pre)
        check_lines += pre
        check_lines.append(f"if not ({cond}): return False")
        fail_lines.append(f"{prefix}i = {index}")  # before reading its sources: a read that raises fails this guard
        fail_lines += pre
        fail_lines.append(f"if not ({cond}): return ({index}, {value}, False)")

    observed = [g for g in ordered_guards if _observable(g)]
    plain = _Builder(code, prefix)  # no temporaries: each value read on its own
    plain.consts, plain._const_names = builder.consts, builder._const_names
    observe_lines = []
    for guard in observed:
        observe_lines += [
            "try:",
            f"    {prefix}values.append({plain.expr(guard.source)})",
            "except Exception:",
            f"    {prefix}values.append(None)",
        ]
    observe_body = "\n".join(f"        {line}" for line in observe_lines) or "        pass"
    sig = f"{prefix}cells, {params}" if params else f"{prefix}cells"
    factory_params = ", ".join(builder.consts)
    body = "\n".join(f"            {line}" for line in check_lines) or "            pass"
    fail_body = "\n".join(f"            {line}" for line in fail_lines) or "            pass"
    p = prefix
    check_text = (
        f"def {p}make({factory_params}):\n"
        f"    def {p}guard({sig}):\n"
        f"        try:\n{body}\n"
        f"        except RecursionError:\n"
        f"            raise\n"
        f"        except Exception:\n"
        f"            return False\n"
        f"        return True\n"
        f"    return {p}guard\n"
    )
    twins_text = (
        f"def {p}make({factory_params}):\n"
        f"    def {p}first_failure({sig}):\n"
        f"        {p}i = -1\n"
        f"        try:\n{fail_body}\n"
        f"        except Exception as {p}e:\n"
        f"            return ({p}i, {p}e, True)\n"
        f"        return (-1, None, False)\n"
        f"    def {p}observe({sig}):\n"
        f"        {p}values = []\n"
        f"{observe_body}\n"
        f"        return {p}values\n"
        f"    return {p}first_failure, {p}observe\n"
    )
    filename = f"<bytegraph guards for {code.co_name}>"
    shadowed = sorted(_GLOBALS.keys() & set(code.co_varnames))
    check_text, twins_text = (_rename_shadowed(t, shadowed, prefix) for t in (check_text, twins_text))
    check = _run_guard_source(check_text, filename, shadowed, prefix)(**builder.consts)
    make_twins = functools.partial(_make_twins, twins_text, filename, shadowed, prefix, builder.consts)
    return GuardFunction(check, ordered_guards, check_text + twins_text, observed, make_twins)


def _make_twins(text: str, filename: str, shadowed: list[str], prefix: str, consts: dict[str, Any]) -> tuple:
    return _run_guard_source(text, filename, shadowed, prefix)(**consts)


def _internal_prefix(code: types.CodeType) -> str:
    """A prefix for the guard function's own names (constants, temporaries, cells)
    that no local of ``code`` starts with, so none can shadow another."""
    prefix = "___"
    while any(name.startswith(prefix) for name in code.co_varnames):
        prefix += "_"
    return prefix


#: what the generated code may read as globals: builtins and the modules that
#: ShapeEnv guards call (``math.floor``, ``torch.sym_float``...)
_GLOBALS: dict[str, Any] = {**vars(builtins), "math": math, "torch": torch}


def _rename_shadowed(text: str, shadowed: list[str], prefix: str) -> str:
    """``text`` with the globals named in ``shadowed`` called under private names.

    A parameter of the frame named like one of :data:`_GLOBALS` (``len``,
    ``torch``) would shadow it: the source then calls those globals under
    private names (``<prefix>G_len``), and the stand-ins the parameters were
    written as (``<prefix>P_len``) get their names back.
    """
    if not shadowed:
        return text
    names = "|".join(map(re.escape, shadowed))
    # a global is a name not after "." or another identifier character (the text has no strings)
    text = re.sub(rf"(?<![\w.])({names})\b", rf"{prefix}G_\1", text)
    return re.sub(rf"\b{re.escape(prefix)}P_({names})\b", r"\1", text)


def _run_guard_source(text: str, filename: str, shadowed: list[str], prefix: str) -> Callable[..., Any]:
    """Compile and run generated guard source (renamed by :func:`_rename_shadowed`);
    its factory ``<prefix>make``.

    The source reaches user values only through the factory's parameters
    (constants) and identifiers checked as it was built (:func:`attr_expr`,
    :meth:`_Builder.local`). The compiled code is checked for the rest: it holds
    no string constant (a user string written as a literal; the compiler's own
    are the names of keyword-only parameters) and reads no global
    but :data:`_GLOBALS` (its builtins) and the private names of ``shadowed``.

    Raises:
        InternalError: on a string constant or an unknown global (a bytegraph bug).
    """
    namespace: dict[str, Any] = {"__builtins__": _GLOBALS}
    namespace.update((f"{prefix}G_{name}", _GLOBALS[name]) for name in shadowed)
    compiled = compile(text, filename, "exec")
    # the one kind of string the compiler makes itself: the names of keyword-only parameters with defaults
    keyword_only = {name for c in code_objects(compiled)
                    for name in c.co_varnames[c.co_argcount:c.co_argcount + c.co_kwonlyargcount]}
    for const in code_constants(compiled):
        if isinstance(const, (str, bytes)) and const not in keyword_only:
            raise InternalError(f"guard source has a string constant {const!r}")
    unknown = global_reads(compiled) - namespace.keys() - _GLOBALS.keys()
    if unknown:
        raise InternalError(f"guard source reads unknown global(s) {sorted(unknown)}")
    exec(compiled, namespace)
    return namespace[f"{prefix}make"]


def _observable(guard: Guard) -> bool:
    """Guards whose source values automatic dynamic shapes compares across calls."""
    if isinstance(guard, TensorMatch):
        return True
    return isinstance(guard, ConstantMatch) and type(guard.expected) in (int, float)
