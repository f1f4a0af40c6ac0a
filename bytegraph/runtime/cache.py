"""Per-code caches of compiled frames, the call path, and the frames generated
code enters at run time (resume functions, callees routed after a break).

A :class:`FrameCache` belongs to one code object, as torch.compile's cache
does: every ``bytegraph.compile`` call of a function with that code, and every
instance of a module class (modules are guarded by type and structure, not
identity), shares it. It holds :class:`CacheEntry` objects, newest first, each
made under one set of compile options (:func:`intern_options`: equal options
are one object); :func:`run` checks the guards of the entries made under the
call's options and runs the first hit, and on a miss converts the frame again
(a recompile), up to ``config.recompile_limit`` entries of the code object in
all, after which the code runs natively with one warning naming the guard that
keeps failing.

What runs a cache's code owns it (see :func:`cache_for`, which holds it weakly):
a dropped compiled function frees its caches. One frame converts at a time.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import threading
import types
import warnings
import weakref
from typing import Any, Callable, Iterable, Iterator

import torch

from bytegraph import compat, logs
from bytegraph.backends.registry import lookup_backend
from bytegraph.breaks import GraphRaised
from bytegraph.bytecode.route_calls import route_calls
from bytegraph.config import config
from bytegraph.convert import CompileOptions, Converted, RunNatively, convert_frame
from bytegraph.graph import deferred
from bytegraph.graph.output_graph import DynamicPolicy
from bytegraph.guards.guard_code import GuardFunction
from bytegraph.guards.source import LocalSource, Source, is_plain_name
from bytegraph.guards.tensor_guards import TensorMatch
from bytegraph.runtime import metrics
from bytegraph.runtime.ddp import is_ddp, run_ddp
from bytegraph.variables.objects.nn_modules import has_hooks


class CacheEntry:
    """One compiled version of a frame.

    Attributes:
        check: the guard function, ``check(cells, *args, **kwargs) -> bool``.
        defaults/kwdefaults: the function's ``__defaults__``/``__kwdefaults__``
            objects when it was compiled (the entry applies only while they are
            the same objects).
        guard: the GuardFunction (for failure reasons).
        code: the transformed code object.
    """

    __slots__ = ("check", "guard", "code", "defaults", "kwdefaults", "options", "_plain_fn", "_refs", "valid",
                 "__weakref__")

    def __init__(self, converted: Converted, owner: FrameCache, fn: types.FunctionType, options: CompileOptions):
        self.guard: GuardFunction = converted.guard
        self.options = options  # the compile options it was made under (interned: compared with ``is``)
        # the guard binds arguments with these defaults: valid only while the function has them
        self.defaults = fn.__defaults__
        self.kwdefaults = fn.__kwdefaults__
        self.code = converted.code
        self._plain_fn: Callable | None = None
        self.valid = True
        entry_ref = weakref.ref(self)
        owner_ref = weakref.ref(owner)

        def on_death(_ref: Any) -> None:
            entry, cache = entry_ref(), owner_ref()
            if entry is not None and cache is not None:
                cache.invalidate(entry)

        self._refs = [weakref.ref(g.ref(), on_death) for g in converted.id_guards if g.weak]
        self.check = converted.guard.check

    def function_for(self, fn: types.FunctionType) -> Callable:
        """The transformed code as a function with ``fn``'s globals, defaults and closure."""
        if fn.__closure__ is None and self._plain_fn is not None:
            return self._plain_fn
        new = types.FunctionType(self.code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        new.__kwdefaults__ = fn.__kwdefaults__
        if fn.__closure__ is None:
            self._plain_fn = new
        return new


class FrameCache:
    """Cache entries of one code object, under any compile options."""

    def __init__(self, code: types.CodeType):
        self.code = code
        self.entries: list[CacheEntry] = []
        #: the code runs natively under every option set (it hit the recompile limit)
        self.native = False
        #: options (by id) under which the code runs natively (it cannot be traced, or their backend failed)
        self.native_under: dict[int, CompileOptions] = {}
        #: id(options) -> the FrameHooks its entries' transformed code calls: its own, so that the
        #: resume functions and callee caches they hold go with this cache
        self.hooks: dict[int, FrameHooks] = {}
        self.dynamic_dims: dict[Source, frozenset[int]] = {}
        self.dynamic_scalars: set[Source] = set()
        self.data_dependent: set[Source] = set()
        #: 0 for an original frame; for a resume function, how many pieces of
        #: its eager frame run before it (set by :class:`ResumeFunction`)
        self.resume_depth = 0
        self.nested = 0  # calls of this resume function running (see ResumeFunction)
        #: under the stance "eager_then_compile": the sizes and scalars of the first
        #: call, which ran eagerly (see :func:`_call_snapshot`)
        self.first_call: tuple | None = None

    def policy(self, options: CompileOptions) -> DynamicPolicy:
        """Which inputs the next compile traces symbolically (torch.compile's
        ``dynamic``: True = all tensor dims and scalar arguments, False = none,
        None = automatic, or all with ``config.assume_static_by_default`` off)."""
        if options.dynamic is False:
            return DynamicPolicy(static=True)
        everything = options.dynamic is True or not config.assume_static_by_default
        return DynamicPolicy(
            all_dims=everything, dims=dict(self.dynamic_dims),
            scalars=frozenset(self.dynamic_scalars), data_dependent=frozenset(self.data_dependent),
        )

    def note_changes(self, entry: CacheEntry, cells: Any, args: tuple, kwargs: dict) -> None:
        """Automatic dynamic: tensor dims and Python scalars whose values differ
        from what ``entry`` was traced with become symbolic in the next compile,
        and dims that were symbolic in ``entry`` stay so (a size outside a
        ``mark_dynamic`` range recompiles dynamic, as torch.compile)."""
        for guard, value in entry.guard.observe(cells, args, kwargs):
            if isinstance(guard, TensorMatch):
                if isinstance(value, torch.Tensor) and value.dim() == len(guard.sizes):
                    changed = {i for i, want in enumerate(guard.sizes) if want is None or value.size(i) != want}
                    if changed:
                        self.dynamic_dims[guard.source] = self.dynamic_dims.get(guard.source, frozenset()) | changed
            elif type(value) is type(guard.expected) and value != guard.expected:
                self.dynamic_scalars.add(guard.source)

    def note_first_call(self, args: tuple) -> None:
        """Automatic dynamic from the eager first call (stance ``"eager_then_compile"``):
        the positional arguments' dims and scalars that differ now are symbolic in the
        first compile."""
        names = self.code.co_varnames[:self.code.co_argcount]
        for name, before, now in zip(names, self.first_call or (), _call_snapshot(args)):
            if isinstance(before, tuple) and isinstance(now, tuple) and len(before) == len(now):
                changed = frozenset(i for i, (a, b) in enumerate(zip(before, now)) if a != b)
                if changed:
                    self.dynamic_dims[LocalSource(name)] = changed
            elif type(before) in (int, float) and type(before) is type(now) and before != now:
                self.dynamic_scalars.add(LocalSource(name))

    def note_data_dependent(self, sources: Iterable[Source]) -> None:
        """Inputs read from tensor data (what a resume function receives after a
        break on ``int(t)`` or ``x[mask]``) are likely to change every call:
        specialising them first would only cost a recompile, so they are
        symbolic from the first compile (``DynamicPolicy.data_dependent``)."""
        self.data_dependent.update(sources)

    def clear(self) -> None:
        """Drop every entry and the run-natively decision (``bytegraph.reset``)."""
        for entry in self.entries:
            entry.valid = False
        self.entries = []
        self.native = False
        self.native_under = {}

    def invalidate(self, entry: CacheEntry) -> None:
        entry.valid = False
        self.entries = [e for e in self.entries if e is not entry]

    def hit(self, fn: types.FunctionType, args: tuple, kwargs: dict, options: CompileOptions) -> Any:
        """The first entry made under ``options`` whose guard passes for this call,
        None, or :data:`UNBOUND` when the arguments do not bind to the signature."""
        cells = fn.__closure__
        defaults, kwdefaults = fn.__defaults__, fn.__kwdefaults__
        try:
            for entry in self.entries:
                if entry.options is options and entry.defaults is defaults and entry.kwdefaults is kwdefaults \
                        and entry.check(cells, *args, **kwargs):
                    return entry
        except TypeError:
            return UNBOUND
        return None

    def miss(self, fn: types.FunctionType, args: tuple, kwargs: dict, options: CompileOptions) -> Any:
        """No entry made under ``options`` matched: compile (or give up and run
        natively), then run. The settings a program changed in
        torch's frontend config (:mod:`bytegraph.compat`) apply while the frame compiles, and the stance
        ``torch.compiler.set_stance`` set decides whether it compiles.

        One frame converts at a time (:data:`COMPILE_LOCK`); a thread that waited
        looks at the entries again first (another may have compiled what this
        call needs), and the entry runs after the lock is released.
        """
        with COMPILE_LOCK:
            entry = self.hit(fn, args, kwargs, options)
            if entry is None and not (self.native or id(options) in self.native_under):
                changed = compat.changed_settings()
                with config.patch(**changed) if changed else contextlib.nullcontext():
                    entry = self._compile(fn, args, kwargs, options, compat.stance())
        return fn(*args, **kwargs) if entry is None or entry is UNBOUND else call_entry(entry, fn, args, kwargs)

    def _compile(self, fn: types.FunctionType, args: tuple, kwargs: dict, options: CompileOptions,
                 stance: compat.Stance) -> CacheEntry | None:
        """A new entry for this call, or None when the call runs natively (this
        once, or from now on: the recompile limit, a whole-frame break)."""
        cells = fn.__closure__
        reason = None
        if stance.name == "force_eager":
            return None
        if stance.name in ("eager_then_compile", "aot_eager_then_compile") and self.first_call is None:
            self.first_call = _call_snapshot(args)  # the next call compiles, dynamic where it differs
            return None
        latest = next((e for e in self.entries if e.options is options), None)
        if self.entries:
            if latest is None:
                reason = f"{self.code.co_name} was compiled with another backend or other options"
            elif latest.defaults is not fn.__defaults__ or latest.kwdefaults is not fn.__kwdefaults__:
                reason = f"{self.code.co_name}.__defaults__ or __kwdefaults__ changed"
            else:
                reason = latest.guard.first_failure(cells, args, kwargs) or "unknown guard"
            if latest is not None:  # a recompile (a first compile under other options is not one)
                if stance.name == "eager_on_recompile":
                    return None
                if stance.name == "fail_on_recompile" or config.error_on_recompile:
                    raise RuntimeError(
                        f"Detected recompile when torch.compile stance is 'fail_on_recompile'. filename: "
                        f"{self.code.co_filename!r}, function name: {self.code.co_name!r}, line number: "
                        f"{self.code.co_firstlineno}; failed guard: {reason}")
                metrics.record_recompile(self.code, reason)
            limit = options.recompile_limit or config.recompile_limit
            if len(self.entries) >= limit:
                if self.nested > 1:  # a later iteration of a loop that resumes here: this one runs natively
                    return None
                if config.fail_on_recompile_limit_hit or options.fullgraph:
                    raise RuntimeError(f"bytegraph: {self.code.co_qualname} hit the recompile limit ({limit}) "
                                       f"with fail_on_recompile_limit_hit or fullgraph=True. Last guard failure: {reason}")
                self.native = True
                metrics.record_native(self.code)
                warnings.warn(
                    f"bytegraph: {self.code.co_qualname} hit config.recompile_limit "
                    f"({limit}); running it natively from now on. "
                    f"Last guard failure: {reason}",
                    stacklevel=logs.user_stacklevel(),
                )
                return None
            if logs.enabled("recompiles"):
                logs.get("recompiles").info("recompiling %s: %s", self.code.co_qualname, reason)
            if latest is not None and options.dynamic is None and config.automatic_dynamic_shapes:
                self.note_changes(latest, cells, args, kwargs)
        elif self.first_call is not None and options.dynamic is None and config.automatic_dynamic_shapes:
            self.note_first_call(args)
        if torch._C._functorch.peek_interpreter_stack() is not None:
            return None  # under vmap/grad (torch.func): the values are functorch wrappers
        try:
            f_locals = self._bind(fn, args, kwargs)
        except (TypeError, ValueError):  # eager's TypeError; a hand-made code object's non-identifier names
            return None  # (the native call raises eager's exception, with no chained context)
        signature_fn = None if self.resume_depth else fn
        compiling = options if stance.backend is None else forced_backend(options, stance.backend)
        hooks = self.hooks.get(id(compiling))
        if hooks is None or hooks.options is not compiling:
            hooks = self.hooks[id(compiling)] = FrameHooks(compiling)
        result = convert_frame(self.code, fn.__globals__, cells, f_locals, signature_fn, compiling,
                               hooks, self.policy(options))
        for brk in result.breaks if isinstance(result, Converted) else ():
            metrics.record_break(self.code, brk)
        if isinstance(result, RunNatively):
            metrics.record_break(self.code, result.reason)
            metrics.record_native(self.code)
            self.native_under[id(options)] = options
            return None
        entry = CacheEntry(result, self, fn, options)
        metrics.record_compile(self.code, metrics.CompileRecord(
            weakref.ref(result.code), result.graphs, result.guard.guards, result.seconds, reason, result.guard.text,
            result.import_seconds, result.guard.seconds_per_call(cells, args, kwargs)))
        self.entries = [entry, *self.entries]
        return entry

    def _bind(self, fn: types.FunctionType, args: tuple, kwargs: dict) -> dict[str, Any]:
        """The call's arguments by parameter name, bound as CPython would.

        Raises:
            TypeError: when the arguments do not fit the signature.
            ValueError: when a parameter name is not an identifier (hand-made code).
        """
        code = fn.__code__
        if self.resume_depth:  # positional parameters, some not identifiers (e.g. pytest's @py_assert1)
            if kwargs or len(args) != code.co_argcount:
                raise TypeError(f"{code.co_name}() takes {code.co_argcount} positional arguments")
            return dict(zip(code.co_varnames, args))
        count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) \
            + bool(code.co_flags & inspect.CO_VARKEYWORDS)
        if not all(is_plain_name(name) for name in code.co_varnames[:count]):
            raise ValueError(f"{code.co_qualname} has a parameter name that is not an identifier")
        # the code's own signature and fn's defaults (a __signature__ attribute does not change binding)
        plain = types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)
        plain.__kwdefaults__ = fn.__kwdefaults__
        bound = inspect.signature(plain, follow_wrapped=False).bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)


# ---- frames entered by generated code: resume functions and routed callees ----------------

#: how many calls of one resume function may nest: a loop whose body breaks calls the resume
#: function after the break once more per iteration, from inside the previous call, so a long loop
#: would otherwise exhaust Python's stack where eager runs fine; past the limit the rest of the
#: frame runs natively
LOOP_RESUME_DEPTH = 16


class ResumeFunction:
    """Calls a resume function's code through its cache.

    Called as ``resume(*live_locals, *stack_values, closure)`` where
    ``closure`` is the tuple of cells for the code's free variables, or None.
    A call nested :data:`LOOP_RESUME_DEPTH` deep in calls of the same code
    runs it natively.
    """

    def __init__(self, code: types.CodeType, f_globals: dict, options: CompileOptions, depth: int):
        self.code = code
        self.f_globals = f_globals
        self.options = options
        self.cache: FrameCache = cache_for(code)
        self.cache.resume_depth = depth
        self.plain = types.FunctionType(code, f_globals) if not code.co_freevars else None

    def __call__(self, *args: Any) -> Any:
        *values, closure = args
        fn = self.plain or types.FunctionType(self.code, self.f_globals, self.code.co_name, None, closure)
        cache = self.cache
        if cache.nested >= LOOP_RESUME_DEPTH:
            return fn(*values)
        cache.nested += 1
        try:
            return run(cache, fn, tuple(values), {}, self.options)
        finally:
            cache.nested -= 1

    def __repr__(self) -> str:
        return f"<ResumeFunction {self.code.co_name}>"


deferred.PIECE_CALLS.add(id(ResumeFunction.__call__.__code__))


#: packages whose Python functions a natively run frame calls natively
_NATIVE_PACKAGES = frozenset({"torch", "bytegraph"})


class FrameHooks:
    """The :class:`~bytegraph.translator.graph_break.FrameRuntime` of one set of
    options, owned by the FrameCache whose entries call it (or an OptimizedModule)."""

    def __init__(self, options: CompileOptions):
        self.options = options
        self._resumes: dict[types.CodeType, ResumeFunction] = {}
        self._routed_calls: dict[types.FunctionType, types.FunctionType] = {}
        #: caches of the callees routed after a break (they live as long as these options' caches)
        self._callees: dict[types.CodeType, FrameCache] = {}

    def clear(self) -> None:
        """Forget the resume functions, callee caches and routed disabled functions (``bytegraph.reset``)."""
        self._resumes.clear()
        self._callees.clear()
        self._routed_calls.clear()

    def resume_function(self, code: types.CodeType, f_globals: dict, depth: int,
                        data_dependent: frozenset[str] = frozenset()) -> Callable[..., Any]:
        fn = self._resumes.get(code)
        if fn is None or fn.f_globals is not f_globals:
            fn = ResumeFunction(code, f_globals, self.options, depth)
            self._resumes[code] = fn
        fn.cache.note_data_dependent(LocalSource(name) for name in data_dependent)
        return fn

    def resume_depth(self, code: types.CodeType) -> int:
        return cache_for(code).resume_depth

    def route_callee(self, callee: Any) -> Callable[..., Any]:
        """``callee`` made to compile its own frame: Python functions and bound
        methods run through their cache; a module runs its ``forward`` that way
        (with its hooks, if it has any, run natively around it, as the
        module's own ``__call__`` runs them) unless its class overrides
        ``__call__`` (that method is routed, as any object's), a DDP module as
        ``runtime/ddp.py`` runs it; a ``functools.partial`` routes the
        function it holds, an object whose class defines ``__call__`` in
        Python that method; anything else is returned unchanged."""
        if isinstance(callee, types.FunctionType):
            return self._runner(callee)
        if isinstance(callee, types.MethodType) and isinstance(callee.__func__, types.FunctionType):
            return types.MethodType(self._runner(callee.__func__), callee.__self__)
        if is_ddp(callee):  # DDP's forward runs natively, the module it wraps is routed
            return functools.partial(run_ddp, callee, lambda module, *a, **k: self.route_callee(module)(*a, **k))
        if isinstance(callee, torch.nn.Module) and type(callee).__call__ is torch.nn.Module.__call__:
            forward = callee.forward
            if "forward" not in callee.__dict__ and isinstance(forward, types.MethodType) and isinstance(
                    forward.__func__, types.FunctionType):
                compiled = types.MethodType(self._runner(forward.__func__), callee)
                return functools.partial(_call_with_forward, callee, compiled) if has_hooks(callee) else compiled
            return callee
        if type(callee) is functools.partial:  # (a subclass may override __call__)
            return functools.partial(self.route_callee(callee.func), *callee.args, **callee.keywords)
        call = getattr(type(callee), "__call__", None)
        if isinstance(call, types.FunctionType) and not isinstance(callee, type):
            return types.MethodType(self._runner(call), callee)
        return callee

    def route_calls_of(self, disabled: Any) -> Callable[..., Any]:
        if isinstance(disabled, types.MethodType):  # a disabled method, bound
            return types.MethodType(self.route_calls_of(disabled.__func__), disabled.__self__)
        fn = inspect.unwrap(disabled)
        routed = self._routed_calls.get(fn)
        if routed is None:
            routed = self._routed_calls[fn] = route_calls(fn, self._route_from_native)
        return routed

    def _route_from_native(self, callee: Any) -> Any:
        """A callee of a natively run frame: torch's and bytegraph's own Python run natively
        (as top-level frames torch.compile skips), the program's is routed."""
        module = getattr(callee, "__module__", None) or ""
        if module.partition(".")[0] in _NATIVE_PACKAGES:
            return callee
        return self.route_callee(callee)

    def _runner(self, fn: types.FunctionType) -> Callable[..., Any]:
        cache, options = self._callees.get(fn.__code__), self.options
        if cache is None or cache.code is not fn.__code__:
            cache = self._callees[fn.__code__] = cache_for(fn.__code__)

        def runner(*args: Any, **kwargs: Any) -> Any:
            return run(cache, fn, args, kwargs, options)

        return runner


def _call_snapshot(args: tuple) -> tuple:
    """What automatic dynamic compares between two calls: each positional
    argument's sizes (a tensor), its value (an int or float), else None."""
    return tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else a if type(a) in (int, float) else None
                 for a in args)


_FORCED: dict[tuple[int, int], tuple[Any, CompileOptions]] = {}


def forced_backend(options: CompileOptions, backend: Any) -> CompileOptions:
    """``options`` with the backend ``torch.compiler.set_stance(force_backend=...)``
    forced (one object per pair, so that resume functions share their caches)."""
    key = (id(options), id(backend))
    known = _FORCED.get(key)
    if known is None or known[0] is not backend:
        known = backend, dataclasses.replace(options, backend=lookup_backend(backend))
        _FORCED[key] = known
    return known[1]


def _call_with_forward(module: torch.nn.Module, forward: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``module(*args, **kwargs)`` (hooks and all) with ``forward`` in place of
    its ``forward`` for this call only (an instance attribute, removed after)."""
    module.__dict__["forward"] = forward
    try:
        return module(*args, **kwargs)
    finally:
        module.__dict__.pop("forward", None)


#: one CompileOptions object per distinct set of options (:func:`intern_options`), while used (it holds its backend)
_OPTIONS: "weakref.WeakValueDictionary[tuple, CompileOptions]" = weakref.WeakValueDictionary()


def intern_options(options: CompileOptions) -> CompileOptions:
    """The one CompileOptions object equal to ``options``: the same backend
    object (by identity: a backend need not be hashable), ``fullgraph``,
    ``dynamic`` and ``recompile_limit``. Entries compiled under it serve every
    ``bytegraph.compile`` call that asks for the same, as torch.compile's cache does."""
    key = (id(options.backend), options.fullgraph, options.dynamic, options.recompile_limit)
    with COMPILE_LOCK:
        return _OPTIONS.setdefault(key, options)


#: held while a frame converts: tracing uses process-wide state (the recursion limit, grad mode,
#: torch's tracing context), and threads missing on one frame together would each compile an entry
COMPILE_LOCK = threading.RLock()

#: id(code) -> the FrameCache, while an owner keeps it (it holds its code: the id is not reused)
_CACHES: "weakref.WeakValueDictionary[int, FrameCache]" = weakref.WeakValueDictionary()
#: every FrameCache still alive; compiled wrappers hold theirs directly, so
#: reset() must clear them in place rather than only forget them.
_LIVE: "weakref.WeakSet[FrameCache]" = weakref.WeakSet()
#: id(code) -> how many live FrameCaches have that code (its metrics record goes with the last)
_CODE_CACHES: dict[int, int] = {}


#: a compiled function -> its cache: kept as long as the function (as torch.compile keeps its cache
#: on the code), so that a later ``bytegraph.compile`` of it, or of another module of its class, hits
_OWNERS: "weakref.WeakKeyDictionary[types.FunctionType, FrameCache]" = weakref.WeakKeyDictionary()


def cache_for(code: types.CodeType, owner: types.FunctionType | None = None) -> FrameCache:
    """The FrameCache of ``code`` (created on first use), kept alive by ``owner`` if given.

    Its owners keep it: a compiled function's wrapper and the function itself
    (:data:`_OWNERS`), the transformed code that calls a resume function, the
    :class:`FrameHooks` that routed a callee after a graph break. When the last
    goes, its entries, guards and graphs go, and its record in
    :data:`metrics.FRAMES` becomes a freed frame's (:func:`metrics.forget`)."""
    with COMPILE_LOCK:  # (two threads routing one callee at once get one cache)
        cache = _CACHES.get(id(code))
        if cache is None or cache.code is not code:
            cache = FrameCache(code)
            _CACHES[id(code)] = cache
            _LIVE.add(cache)
            _CODE_CACHES[id(code)] = _CODE_CACHES.get(id(code), 0) + 1
            metrics.revive(id(code))
            weakref.finalize(cache, _cache_freed, id(code))
        if owner is not None:
            _OWNERS[owner] = cache
    return cache


def _cache_freed(code_id: int) -> None:
    """A FrameCache was freed: with the last one of its code, the code's metrics record goes."""
    left = _CODE_CACHES.pop(code_id, 1) - 1
    if left:
        _CODE_CACHES[code_id] = left
    else:
        metrics.forget(code_id)


#: what :meth:`FrameCache.hit` finds when the arguments do not bind: the call runs natively
#: (and raises eager's TypeError outside any except clause: no chained context)
UNBOUND = object()


def run(cache: FrameCache, fn: types.FunctionType, args: tuple, kwargs: dict, options: CompileOptions) -> Any:
    """Call ``fn`` through its cache: the first entry made under ``options``
    whose guard passes, else a miss."""
    entry = cache.hit(fn, args, kwargs, options)
    if entry is UNBOUND:
        return fn(*args, **kwargs)
    if entry is None:
        return cache.miss(fn, args, kwargs, options)
    return call_entry(entry, fn, args, kwargs)


def call_entry(entry: CacheEntry, fn: types.FunctionType, args: tuple, kwargs: dict) -> Any:
    """Run ``entry``'s transformed code; if its graph raised (:class:`GraphRaised`,
    nothing of the frame has run yet but the graph), run ``fn`` natively, which
    raises eager's exception after eager's side effects."""
    try:
        return entry.function_for(fn)(*args, **kwargs)
    except GraphRaised as raised:
        metrics.record_graph_rerun(fn.__code__)
        if logs.enabled("graph_breaks"):
            logs.get("graph_breaks").info("graph of %s raised %r; running the frame natively",
                                          fn.__code__.co_qualname, raised.__cause__)
    # (outside the except clause, so that eager's exception has no GraphRaised as its context)
    return fn(*args, **kwargs)


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Compile afresh inside the block: ``bytegraph.compile`` calls made in it
    get caches (and interned options) of their own, which later compile calls
    outside do not see (``bytegraph.explain`` reports one compilation)."""
    global _CACHES, _OPTIONS, _OWNERS
    saved = _CACHES, _OPTIONS, _OWNERS
    _CACHES, _OPTIONS, _OWNERS = (weakref.WeakValueDictionary(), weakref.WeakValueDictionary(),
                                  weakref.WeakKeyDictionary())
    try:
        yield
    finally:
        _CACHES, _OPTIONS, _OWNERS = saved


def reset() -> None:
    """Drop every cache entry and statistic; compiled functions that are still
    alive recompile on their next call."""
    for cache in list(_LIVE):
        cache.clear()
        for hooks in cache.hooks.values():
            hooks.clear()
    _CACHES.clear()
    _OWNERS.clear()
    _FORCED.clear()
    _OPTIONS.clear()
    metrics.reset()
