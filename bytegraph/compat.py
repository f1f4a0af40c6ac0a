"""torch.compile's user surface as bytegraph serves it: the one module of
bytegraph that names torch's own frontend package, ``torch._dynamo``.

Why it exists: programs written for torch.compile talk to that package
directly. They change ``torch._dynamo.config``, set a stance with
``torch.compiler.set_stance``, register functions with ``allow_in_graph`` or
``nonstrict_trace``, call ``torch._dynamo.reset()``, and libraries (Lightning,
HF, accelerate) check ``isinstance(m, torch._dynamo.eval_frame.OptimizedModule)``.
For bytegraph to honour those, something must read that state and name that
class; this module is that place, and it does only this:

- **read** the state torch's user functions leave behind: the settings a program
  changed in ``torch._dynamo.config`` (:func:`changed_settings`), the stance
  (:func:`stance`, :func:`forced_eager`), the functions ``allow_in_graph`` and
  ``nonstrict_trace`` registered (:func:`registered_in_graph`). Nothing is
  imported for that: until the program (or torch itself, which FakeTensorMode's
  first use does) imports ``torch._dynamo``, nothing can have been set;
- **recognise** ``torch._dynamo.error_on_graph_break`` and the region objects it makes
  (:func:`is_break_region_factory`, :func:`break_region_flag`), traced as
  ``bytegraph.error_on_graph_break``;
- **hand out** torch's ``OptimizedModule`` class (:func:`torch_optimized_module`),
  which bytegraph's compiled modules subclass so that those isinstance checks pass,
  and torch's registry of backends by name (:func:`torch_backend`);
- **replace** torch's entry points with bytegraph's under ``bytegraph run``
  (:func:`serving`): ``torch.compile`` (and with it ``nn.Module.compile``,
  which calls it), ``torch._dynamo.reset`` (and ``torch.compiler.reset``, which
  calls it), ``torch._dynamo.explain`` and ``torch._dynamo.optimize``.

It never calls torch's frontend to compile, trace or run a frame:
``tests/test_no_dynamo.py`` allows exactly the names used here and checks at run
time that torch's frontend compiled no frame. Tensor marks
(``torch._dynamo.mark_dynamic`` and friends) are attributes on the tensor, read
where inputs are wrapped (:data:`TENSOR_MARKS`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import sys
import time
import warnings
from typing import Any, Callable, Iterator

import torch

from bytegraph import imports
from bytegraph.config import Config

FRONTEND = "torch._dynamo"


#: ``torch._dynamo.<part>`` by part (``torch._dynamo`` for ``""``), the modules this one reads
_MODULE_NAMES = {part: f"{FRONTEND}.{part}" if part else FRONTEND
                 for part in ("", "config", "eval_frame", "trace_rules", "backends.registry", "decorators")}
_MODULES = sys.modules


def _loaded(part: str) -> Any:
    """Module ``torch._dynamo.<part>`` if it is imported already, else None."""
    return _MODULES.get(_MODULE_NAMES[part])


def _frontend(part: str) -> Any:
    """Module ``torch._dynamo.<part>``, imported."""
    return importlib.import_module(_MODULE_NAMES[part])


# ---- settings of torch._dynamo.config ----------------------------------------------------------

#: settings of ``torch._dynamo.config`` bytegraph honours: torch's name -> (bytegraph.config
#: name, how torch's value maps to bytegraph's)
SETTINGS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "recompile_limit": ("recompile_limit", int),
    "cache_size_limit": ("recompile_limit", int),  # torch's older name of the same setting
    "automatic_dynamic_shapes": ("automatic_dynamic_shapes", bool),
    "assume_static_by_default": ("assume_static_by_default", bool),
    "capture_scalar_outputs": ("capture_scalar_outputs", bool),
    "capture_dynamic_output_shape_ops": ("capture_dynamic_output_shape_ops", bool),
    "optimize_ddp": ("optimize_ddp", lambda v: v not in (False, "no_optimization")),
    "specialize_int": ("specialize_int", bool),
    "specialize_float": ("specialize_float", bool),
    "trace_numpy": ("trace_numpy", bool),
    "suppress_errors": ("raise_on_backend_error", lambda v: not v),
    "fail_on_recompile_limit_hit": ("fail_on_recompile_limit_hit", bool),
    "error_on_recompile": ("error_on_recompile", bool),
}

#: settings torch sets itself, or that only select what torch's own frontend logs or
#: caches: changed or not, they ask nothing of bytegraph
_NOT_SEMANTIC = frozenset({"verbose", "inline_inbuilt_nn_modules", "accumulated_cache_size_limit"})

_warned: set[str] = set()


def changed_settings() -> dict[str, Any]:
    """The ``bytegraph.config`` values the program asked for by changing
    ``torch._dynamo.config`` away from torch's defaults
    (``torch._dynamo.config.capture_scalar_outputs = False`` gives
    ``{"capture_scalar_outputs": False}``). A changed setting bytegraph does
    not honour is named in a warning, once. Empty until ``torch._dynamo.config``
    is imported."""
    module = _loaded("config")
    if module is None:
        return {}
    changed: dict[str, Any] = {}
    for name, entry in module._config.items():
        if module._is_default(name):
            continue
        value = getattr(module, name)
        # assigned torch's default (as config.patch does on exit): a choice only where bytegraph's
        # default differs (capture_scalar_outputs): then it asks for torch's behaviour
        if name in SETTINGS:
            target, convert = SETTINGS[name]
            if value != entry.default or convert(value) != _BYTEGRAPH_DEFAULTS[target]:
                changed[target] = convert(value)
        elif name not in _NOT_SEMANTIC and value != entry.default:
            unsupported(f"torch._dynamo.config.{name} = {value!r}", "bytegraph does not read this setting")
    return changed


_BYTEGRAPH_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Config)}


def unsupported(knob: str, why: str) -> None:
    """Warn, once per ``knob``, that bytegraph cannot honour it (attributed to
    the first frame outside bytegraph and torch: the program's)."""
    if knob in _warned:
        return
    _warned.add(knob)
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_LIBRARY_FILES):
        frame, level = frame.f_back, level + 1
    warnings.warn(f"bytegraph: {knob} is not honoured: {why}", stacklevel=level + 1)


_LIBRARY_FILES = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (torch, sys.modules[__package__]))


# ---- the stance (torch.compiler.set_stance) ------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Stance:
    """The stance ``torch.compiler.set_stance`` set: ``name`` is one of
    ``"default"``, ``"force_eager"``, ``"eager_on_recompile"``,
    ``"fail_on_recompile"``, ``"eager_then_compile"``, ``"aot_eager_then_compile"``;
    ``backend`` the backend forced with the default stance (or None)."""

    name: str = "default"
    backend: Any = None


DEFAULT_STANCE = Stance()


def stance() -> Stance:
    """The stance in force (the default one until ``torch._dynamo`` is imported)."""
    frontend = _loaded("eval_frame")
    if frontend is None:
        return DEFAULT_STANCE
    current = frontend._stance
    if current.skip_guard_eval_unsafe:
        unsupported("torch.compiler.set_stance(skip_guard_eval_unsafe=True)",
                    "bytegraph evaluates every guard of a cache entry")
    if current.stance == "default" and current.backend is None:
        return DEFAULT_STANCE
    return Stance(current.stance, current.backend)


_stance_holder: Any = None  # torch._dynamo.eval_frame once it is imported


def forced_eager() -> bool:
    """Whether the stance is ``"force_eager"`` (asked on every call of a compiled function)."""
    global _stance_holder
    if _stance_holder is None:
        _stance_holder = _loaded("eval_frame")
        if _stance_holder is None:
            return False
    return _stance_holder._stance.stance == "force_eager"


# ---- functions registered to go in the graph -----------------------------------------------------

#: the attribute ``torch.compiler.assume_constant_result`` sets on a function: calls of it
#: with constant arguments are evaluated once, at trace time, and their result is a constant
MARKED_CONSTANT = "_dynamo_marked_constant"


def registered_in_graph(fn: Any) -> str | None:
    """``"nonstrict_trace"`` or ``"allow_in_graph"`` when ``fn`` (not one of torch's own
    functions) was registered by that decorator, else None."""
    rules = _loaded("trace_rules")
    if rules is None or (getattr(fn, "__module__", None) or "").startswith("torch"):
        return None
    allowed = rules._allowed_callable_ids.function_ids  # None until something was registered
    if allowed is None or id(fn) not in allowed:
        return None
    nonstrict = rules._nonstrict_trace_callable_ids.function_ids
    return "nonstrict_trace" if nonstrict is not None and id(fn) in nonstrict else "allow_in_graph"


# ---- regions that decide whether graph breaks raise (torch._dynamo.error_on_graph_break) --------

def is_break_region_factory(fn: Any) -> bool:
    """Whether ``fn`` is ``torch._dynamo.error_on_graph_break``: bytegraph traces
    a call of it as one of ``bytegraph.error_on_graph_break``."""
    decorators = _loaded("decorators")
    return decorators is not None and fn is decorators.error_on_graph_break


def break_region_flag(value: Any) -> tuple[bool, str] | None:
    """For an object ``torch._dynamo.error_on_graph_break(flag)`` made: whether
    graph breaks raise in its region, and the attribute holding that flag; else None."""
    decorators = _loaded("decorators")
    if decorators is None or type(value) is not decorators.ErrorOnGraphBreakDecoratorContextManager:
        return None
    return bool(value.error_on_graph_break), "error_on_graph_break"


# ---- marks on tensors (torch._dynamo.mark_dynamic and friends) ---------------------------------

#: the attributes torch's marking functions set on a tensor (a set of dims each; ranges as
#: objects with ``dim``, ``min``, ``max``). bytegraph's own ``mark_dynamic``/``maybe_mark_dynamic``/
#: ``mark_static`` set the same ones, so a tensor carries one record of its marks.
DYNAMIC_DIMS = "_dynamo_dynamic_indices"
DYNAMIC_RANGES = "_dynamo_dynamic_range"
WEAK_DYNAMIC_DIMS = "_dynamo_weak_dynamic_indices"
UNBACKED_DIMS = "_dynamo_unbacked_indices"
STATIC_DIMS = "_dynamo_static_indices"
STATIC_ADDRESS = "_dynamo_static_input_type"


@dataclasses.dataclass(frozen=True)
class DimRange:
    """The ``min``/``max`` (None: open) ``mark_dynamic`` gave dimension ``dim``."""

    dim: int
    min: int | None
    max: int | None


@dataclasses.dataclass(frozen=True)
class Marks:
    """A tensor's marks: ``dynamic`` maps each dim marked dynamic to its range
    (``(min, max)``, None for either end when open) or None when it may be
    specialised (``maybe_mark_dynamic``); ``static`` are the dims marked static."""

    dynamic: dict[int, tuple[int | None, int | None] | None]
    static: frozenset[int]


NO_MARKS = Marks({}, frozenset())


def tensor_marks(t: torch.Tensor) -> Marks:
    """The marks torch's (or bytegraph's) marking functions left on ``t``."""
    if not getattr(t, "_has_dynamo_dim_marking", False) and not hasattr(t, STATIC_ADDRESS):
        return NO_MARKS
    dynamic: dict[int, tuple[int | None, int | None] | None] = dict.fromkeys(getattr(t, WEAK_DYNAMIC_DIMS, ()))
    if getattr(t, UNBACKED_DIMS, None):
        unsupported("torch._dynamo.mark_unbacked", "bytegraph traces the dimension as an ordinary "
                    "symbolic size (mark_dynamic), which may still be specialised to 0 or 1")
        dynamic.update(dict.fromkeys(getattr(t, UNBACKED_DIMS)))
    ranges = {r.dim: (r.min, r.max) for r in getattr(t, DYNAMIC_RANGES, ())}
    for dim in getattr(t, DYNAMIC_DIMS, ()):
        dynamic[dim] = ranges.get(dim, (None, None))
    if hasattr(t, STATIC_ADDRESS):
        unsupported("torch._dynamo.mark_static_address", "bytegraph passes the tensor as an ordinary "
                    "graph input and does not guard on its address")
    return Marks(dynamic, frozenset(getattr(t, STATIC_DIMS, ())))


# ---- torch's classes and registries --------------------------------------------------------------

def torch_optimized_module() -> type:
    """torch's ``OptimizedModule`` class (importing torch's frontend package, as
    the first FakeTensorMode would)."""
    with imports.first_use("torch._dynamo"):
        frontend = _frontend("eval_frame")
    return frontend.OptimizedModule


def torch_backend(name: str) -> Callable | None:
    """The backend torch's registry has under ``name``, or None."""
    registry = _frontend("backends.registry")
    try:
        return registry.lookup_backend(name)
    except Exception:  # torch's InvalidBackend (an unknown name)
        return None


# ---- torch's entry points under `bytegraph run` -------------------------------------------------

#: the entry points :func:`serving` replaces: attributes of ``torch._dynamo``, and ``torch.compile``
ENTRY_POINTS = ("reset", "explain", "optimize")


@contextlib.contextmanager
def serving(replacements: dict[str, Callable]) -> Iterator[None]:
    """Within the block, ``torch.compile`` and torch's entry points (:data:`ENTRY_POINTS`)
    are ``replacements`` (bytegraph's functions, by the same names); torch's are put back
    after. Imports torch's frontend package, whose functions are replaced."""
    start = time.perf_counter()
    before = _loaded("")
    frontend = _frontend("")
    if before is None:  # (bytegraph run serves them before the program starts)
        imports.record("torch._dynamo", time.perf_counter() - start, at_startup=True)
    saved = {name: getattr(frontend, name) for name in ENTRY_POINTS}
    saved_compile = torch.compile
    try:
        torch.compile = replacements["compile"]
        for name in ENTRY_POINTS:
            setattr(frontend, name, replacements[name])
        yield
    finally:
        torch.compile = saved_compile
        for name, fn in saved.items():
            setattr(frontend, name, fn)
