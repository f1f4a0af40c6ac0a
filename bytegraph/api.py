"""The public API: ``compile``, ``reset`` and friends (mirrors ``torch.compile``)."""
from __future__ import annotations

from typing import Any, Callable

import torch

from bytegraph.backends.builtin import inductor_with
from bytegraph.backends.registry import lookup_backend
from bytegraph.convert import CompileOptions
from bytegraph.runtime import cache
from bytegraph.runtime.wrappers import OptimizedModule, compile_function


def compile(
    model_or_fn: Callable | torch.nn.Module | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | Callable = "inductor",
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
) -> Any:
    """Compile a function or ``nn.Module`` with bytegraph (same contract as ``torch.compile``).

    Usable as ``bytegraph.compile(fn)``, ``@bytegraph.compile`` or
    ``@bytegraph.compile(backend="eager")``.

    Args:
        model_or_fn: a Python function, bound method, ``functools.partial`` of
            one, or ``nn.Module``.
        fullgraph: raise :class:`bytegraph.Unsupported` at the first graph break
            instead of running that part natively (torch.compile's ``fullgraph``).
        dynamic: None = static first, then dynamic for sizes that change;
            True = dynamic from the start; False = always static.
        backend: ``"eager"``, ``"aot_eager"``, ``"inductor"``, another registered
            name, or a callable ``(gm, example_inputs) -> callable``.
        mode / options: inductor settings (torch.compile's ``mode``/``options``);
            only valid with the inductor backend.
        disable: return ``model_or_fn`` unchanged.

    Returns:
        A compiled function (same signature), an :class:`OptimizedModule`, or a
        decorator when ``model_or_fn`` is None.

    Raises:
        TypeError: for a ``model_or_fn`` that is none of those, a non-bool
            ``fullgraph``/``disable``, or a ``dynamic`` that is not None/bool.
        ValueError: for an unknown backend name, or ``mode``/``options`` with a
            backend other than inductor.
    """
    if not isinstance(fullgraph, bool):
        raise TypeError(f"bytegraph.compile: fullgraph must be a bool, got {type(fullgraph).__name__}")
    if not isinstance(disable, bool):
        raise TypeError(f"bytegraph.compile: disable must be a bool, got {type(disable).__name__}")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise TypeError(f"bytegraph.compile: dynamic must be None or a bool, got {type(dynamic).__name__}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"bytegraph.compile: options must be a dict, got {type(options).__name__}")
    if (mode is not None or options) and backend != "inductor":
        raise ValueError("bytegraph.compile: mode and options apply only to backend='inductor'")

    def decorate(target: Any) -> Any:
        if disable:
            return target
        compiler = inductor_with(mode, options) if backend == "inductor" and (mode or options) else (
            lookup_backend(backend)
        )
        opts = CompileOptions(compiler, fullgraph, dynamic)
        if isinstance(target, torch.nn.Module):
            return OptimizedModule(target, opts)
        if not callable(target):
            raise TypeError(
                f"bytegraph.compile: model_or_fn must be a function or nn.Module, got {type(target).__name__}"
            )
        return compile_function(target, opts)

    if model_or_fn is None:
        return decorate
    return decorate(model_or_fn)


def reset() -> None:
    """Drop all compiled code and statistics (mirrors ``torch.compiler.reset``)."""
    cache.reset()
