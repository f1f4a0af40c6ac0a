"""Compiling a ``DistributedDataParallel`` module.

DDP's own forward talks to its C++ reducer (bucket rebuilds, unused-parameter
search, join notifications) and runs natively, as under torch.compile; the
module it wraps is what gets compiled. While DDP runs that module, its graphs
are split at gradient buckets (``bytegraph/backends/ddp.py``).
"""
from __future__ import annotations

from typing import Any, Callable

import torch


#: the DDP class, or None where torch is built without distributed support
_DDP: type | None = torch.nn.parallel.DistributedDataParallel if torch.distributed.is_available() else None


def is_ddp(module: torch.nn.Module) -> bool:
    """Whether ``module`` is a ``torch.nn.parallel.DistributedDataParallel``
    (called on every compiled module call: one ``isinstance``)."""
    return _DDP is not None and isinstance(module, _DDP)


def run_ddp(ddp: torch.nn.Module, compiled_call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``ddp(*args, **kwargs)`` natively with its wrapped module's call
    replaced by ``compiled_call(module, *args, **kwargs)``.

    The replacement goes through ``nn.Module._compiled_call_impl`` (the hook
    ``Module.compile()`` uses), set for the duration of this call only and
    restored even when the call raises. While ``compiled_call`` runs, the
    module's own call is back in place: a native call of the module from
    inside it (a frame that falls back to running natively, hooks run around
    a compiled ``forward``, an OptimizedModule inside) runs the module, not
    ``compiled_call`` again.
    """
    inner = ddp.module
    missing = object()
    previous = inner.__dict__.get("_compiled_call_impl", missing)

    def install(call: Any) -> None:
        if call is missing:
            inner.__dict__.pop("_compiled_call_impl", None)
        else:
            inner._compiled_call_impl = call

    def replacement(*a: Any, **k: Any) -> Any:
        install(previous)
        try:
            return compiled_call(inner, *a, **k)
        finally:
            install(replacement)

    install(replacement)
    try:
        return ddp(*args, **kwargs)
    finally:
        install(previous)
