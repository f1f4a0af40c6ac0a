"""The public API: ``compile``, ``reset``, ``mark_dynamic`` and friends (mirrors
``torch.compile`` and TorchDynamo's user functions)."""
from __future__ import annotations

from typing import Any, Callable

import torch

from bytegraph import compat
from bytegraph.backends.builtin import inductor_with
from bytegraph.backends.registry import lookup_backend, with_arguments
from bytegraph.convert import CompileOptions
from bytegraph.runtime import cache
from bytegraph.runtime.wrappers import compile_function, optimized_module


def compile(
    model_or_fn: Callable | torch.nn.Module | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | Callable | None = "inductor",
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    name: str | None = None,
    disable: bool = False,
    recompile_limit: int | None = None,
    isolate_recompiles: bool = False,
    shapes_spec: Any = None,
) -> Any:
    """Compile a function or ``nn.Module`` with bytegraph (same contract as ``torch.compile``).

    Usable as ``bytegraph.compile(fn)``, ``@bytegraph.compile`` or
    ``@bytegraph.compile(backend="eager")``.

    Args:
        model_or_fn: a Python function, bound method, ``functools.partial`` of
            one, or ``nn.Module``; any other callable is accepted as by
            torch.compile (an object with a Python ``__call__`` is compiled
            through it; builtins, ``OpOverload``s and ``lru_cache`` wrappers
            have no Python frame to trace and run natively).
        fullgraph: raise :class:`bytegraph.Unsupported` at the first graph break
            instead of running that part natively (torch.compile's ``fullgraph``).
        dynamic: None = static first, then dynamic for sizes that change;
            True = dynamic from the start (tensor sizes and int/float
            arguments); False = always static.
        backend: ``"eager"``, ``"aot_eager"``, ``"inductor"`` (also None),
            another registered name (bytegraph's or torch's registry), or a
            callable ``(gm, example_inputs) -> callable``.
        mode / options: inductor settings (torch.compile's ``mode``/``options``);
            with another backend they are passed to it as keyword arguments, as
            torch.compile does (``backend(gm, example_inputs, mode=...)``; the
            built-in ``eager`` backends warn that they ignore them).
        name: a name for the compiled region (accepted, as metadata).
        disable: return ``model_or_fn`` unchanged.
        recompile_limit: this call's own limit of cache entries per frame
            (default: ``bytegraph.config.recompile_limit``).
        isolate_recompiles: accepted; every ``compile`` call of bytegraph
            keeps its own cache entries (torch.compile's ``True``).
        shapes_spec: not supported (a warning says so).

    Returns:
        A compiled function (same signature), an :class:`OptimizedModule`, or a
        decorator when ``model_or_fn`` is None.

    Raises:
        TypeError: for a ``model_or_fn`` that is none of those, a non-bool
            ``fullgraph``/``disable``, or a ``dynamic`` that is not None/bool.
        ValueError: for an unknown backend name, or both ``mode`` and ``options``.
    """
    if not isinstance(fullgraph, bool):
        raise TypeError(f"bytegraph.compile: fullgraph must be a bool, got {type(fullgraph).__name__}")
    if not isinstance(disable, bool):
        raise TypeError(f"bytegraph.compile: disable must be a bool, got {type(disable).__name__}")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise TypeError(f"bytegraph.compile: dynamic must be None or a bool, got {type(dynamic).__name__}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"bytegraph.compile: options must be a dict, got {type(options).__name__}")
    if recompile_limit is not None and (not isinstance(recompile_limit, int) or recompile_limit < 1):
        raise ValueError(f"bytegraph.compile: recompile_limit must be a positive int, got {recompile_limit!r}")
    if mode is not None and options is not None:
        raise ValueError("bytegraph.compile: give either mode or options, not both (as torch.compile)")
    if shapes_spec is not None:
        compat.unsupported("torch.compile(shapes_spec=...)", "bytegraph traces sizes as given by dynamic= and the marks")
    backend = "inductor" if backend is None else backend
    arguments = {"mode": mode} if mode not in (None, "default") else {}
    arguments.update({"options": options} if options else {})

    def decorate(target: Any) -> Any:
        if disable:
            return target
        if backend == "inductor":
            compiler = inductor_with(mode, options) if arguments else lookup_backend(backend)
        else:
            compiler = with_arguments(lookup_backend(backend), arguments) if arguments else lookup_backend(backend)
        opts = cache.intern_options(CompileOptions(compiler, fullgraph, dynamic, recompile_limit))
        if isinstance(target, torch.nn.Module):
            return optimized_module(target, opts)
        if not callable(target):
            raise TypeError(
                f"bytegraph.compile: model_or_fn must be callable (a function or nn.Module), got {type(target).__name__}"
            )
        return compile_function(target, opts)

    if model_or_fn is None:
        return decorate
    return decorate(model_or_fn)


def reset() -> None:
    """Drop all compiled code and statistics (mirrors ``torch.compiler.reset``)."""
    cache.reset()


def mark_dynamic(t: torch.Tensor, index: int | list[int], *, min: int | None = None, max: int | None = None) -> None:
    """Trace dimension(s) ``index`` of ``t`` symbolically from the first compile
    (mirrors TorchDynamo's ``mark_dynamic``, and sets the same marks on ``t``,
    so the frontend's own ``mark_dynamic`` is honoured as well).

    With ``min``/``max`` the dimension's range is constrained: a call outside it
    fails the guard and recompiles. If tracing specialises the dimension to one
    value (e.g. ``if t.size(0) == 4``), compiling raises torch's
    ``ConstraintViolationError``, as torch.compile does.

    Raises:
        TypeError: when ``t`` is not a tensor or ``index`` not an int/list of ints.
        ValueError: for an index out of range or ``min > max``.
    """
    dims = _check_dims("mark_dynamic", t, index)
    if min is not None and max is not None and min > max:
        raise ValueError(f"mark_dynamic: min ({min}) must not exceed max ({max})")
    _marks(t, compat.DYNAMIC_DIMS).update(dims)
    _marks(t, compat.DYNAMIC_RANGES).update(compat.DimRange(d, min, max) for d in dims)


def maybe_mark_dynamic(t: torch.Tensor, index: int | list[int]) -> None:
    """Like :func:`mark_dynamic`, but no error when tracing specialises the
    dimension (mirrors TorchDynamo's ``maybe_mark_dynamic``).

    Raises:
        TypeError / ValueError: as :func:`mark_dynamic`.
    """
    _marks(t, compat.WEAK_DYNAMIC_DIMS).update(_check_dims("maybe_mark_dynamic", t, index))


def mark_static(t: torch.Tensor, index: int | list[int] | None = None) -> None:
    """Keep dimension(s) ``index`` of ``t`` (all when None) static, even under
    ``dynamic=True``, automatic dynamic or a ``mark_dynamic`` (mirrors
    TorchDynamo's ``mark_static``).

    Raises:
        TypeError / ValueError: as :func:`mark_dynamic`.
    """
    dims = _check_dims("mark_static", t, list(range(t.dim())) if index is None and isinstance(t, torch.Tensor) else index)
    _marks(t, compat.STATIC_DIMS).update(dims)


def _check_dims(api: str, t: Any, index: Any) -> list[int]:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"bytegraph.{api}: t must be a torch.Tensor, got {type(t).__name__}")
    dims = [index] if isinstance(index, int) else index
    if not isinstance(dims, (list, tuple)) or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise TypeError(f"bytegraph.{api}: index must be an int or a list of ints, got {index!r}")
    for d in dims:
        if not -t.dim() <= d < t.dim():
            raise ValueError(f"bytegraph.{api}: index {d} out of range for a {t.dim()}-d tensor")
    return [d % t.dim() for d in dims]


def _marks(t: torch.Tensor, attr: str) -> set:
    """The set of marks ``attr`` on ``t`` (created empty), as torch's marking functions keep them."""
    if not hasattr(t, attr):
        setattr(t, attr, set())
    t._has_dynamo_dim_marking = True  # type: ignore[attr-defined]
    return getattr(t, attr)
