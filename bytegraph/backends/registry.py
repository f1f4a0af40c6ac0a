"""The backend registry: names to compiler functions.

A backend is ``callable(gm: torch.fx.GraphModule, example_inputs: list[Tensor])
-> callable``: it receives each captured graph with the real tensors of the
first call and returns the function bytegraph calls in place of the graph
(mirrors torch.compile's backend contract).
"""
from __future__ import annotations

from typing import Callable

import torch

from bytegraph import compat

Backend = Callable[[torch.fx.GraphModule, list], Callable]

_REGISTRY: dict[str, Backend] = {}


def register_backend(compiler_fn: Backend | None = None, name: str | None = None):
    """Register ``compiler_fn`` under ``name`` (default: its ``__name__``).

    Usable as ``register_backend(fn)``, ``@register_backend`` or
    ``@register_backend(name="mine")``.

    Raises:
        TypeError: when ``compiler_fn`` is not callable or ``name`` is not a string.
        ValueError: when the name is already registered to another function.
    """
    if name is not None and not isinstance(name, str):
        raise TypeError(f"register_backend: name must be a string, got {type(name).__name__}")
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name)
    if not callable(compiler_fn):
        raise TypeError(f"register_backend: compiler_fn must be callable, got {type(compiler_fn).__name__}")
    key = name or getattr(compiler_fn, "__name__", None)
    if not isinstance(key, str):
        raise TypeError("register_backend: give a name for a backend without __name__")
    if key in _REGISTRY and _REGISTRY[key] is not compiler_fn:
        raise ValueError(f"register_backend: a backend named {key!r} is already registered")
    _REGISTRY[key] = compiler_fn
    return compiler_fn


def lookup_backend(backend: str | Backend) -> Backend:
    """The compiler function for a registered name, or ``backend`` itself if callable.

    Raises:
        ValueError: for an unknown name (the message lists the known ones).
        TypeError: for anything that is neither a string nor callable.
    """
    if isinstance(backend, str):
        if backend in _REGISTRY:
            return _REGISTRY[backend]
        torchs = compat.torch_backend(backend)  # one of torch's own (cudagraphs, tvm, openxla...)
        if torchs is None:
            raise ValueError(f"unknown backend {backend!r}; registered backends: {list_backends()}")
        return torchs
    if callable(backend):
        return backend
    raise TypeError(f"backend must be a name or a callable, got {type(backend).__name__}")


class BackendWithArguments:
    """A backend called with keyword arguments: ``backend(gm, example_inputs,
    **kwargs)`` (what torch.compile's ``mode``/``options`` become for a backend
    other than inductor)."""

    def __init__(self, backend: Callable, kwargs: dict):
        self.backend = backend
        self.kwargs = kwargs
        self.__name__ = getattr(backend, "__name__", type(backend).__name__)

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        return self.backend(gm, example_inputs, **self.kwargs)


def with_arguments(backend: Backend, kwargs: dict) -> Backend:
    """``backend`` called with ``kwargs`` too."""
    return BackendWithArguments(backend, kwargs)


def list_backends() -> list[str]:
    """Names of the registered backends, sorted."""
    return sorted(_REGISTRY)
