"""``torch.nn.attention.sdpa_kernel(backends, set_priority=False)``: the scaled-dot-product
attention backend flags, switched at trace time and in the graph like autocast.

Its Python (a ``contextlib`` generator reading and setting the flags with C functions) is
modelled, recognised by identity (``TORCH_MODELS``): entering runs ``graph/sdp_flags.py``'s
``enter_sdpa_kernel`` now and as a graph node, leaving runs ``exit_sdpa_kernel`` on what
entering returned; a graph that raises inside the block has the flags put back (``graph/rerun.py``).
"""
from __future__ import annotations

import contextlib
import inspect
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch.nn.attention as attention

from bytegraph.breaks import unimplemented
from bytegraph.graph.sdp_flags import enter_sdpa_kernel, exit_sdpa_kernel
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.torch_state.base import SwitchedStateVariable
from bytegraph.variables.tx import wrap_const

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class SdpaKernelVariable(SwitchedStateVariable):
    """``sdpa_kernel(backends, set_priority)`` made in the trace (``backends``: the values of the
    distinct SDPBackend members, in order)."""

    enter_fn = staticmethod(enter_sdpa_kernel)
    exit_fn = staticmethod(exit_sdpa_kernel)

    def __init__(self, backends: tuple[int, ...], set_priority: bool):
        super().__init__()
        self.backends = backends
        self.set_priority = set_priority

    def python_type(self) -> type:
        return contextlib._GeneratorContextManager  # what calling the contextmanager function returns

    def enter_args(self) -> tuple:
        return self.backends, self.set_priority

    def constructor(self) -> tuple[Callable[..., Any], tuple]:
        return attention.sdpa_kernel, ([attention.SDPBackend(b) for b in self.backends], self.set_priority)

    def enter(self, tx: Tx) -> VT:
        super().enter(tx)
        return wrap_const(tx, {})  # what the generator yields

    def __repr__(self) -> str:
        return f"SdpaKernelVariable({self.backends}, set_priority={self.set_priority})"


def call_sdpa_kernel(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """The model of ``torch.nn.attention.sdpa_kernel``: constant arguments only."""
    values = [a.as_python_constant() if a.is_python_constant() else a for a in args]
    options = {k: v.as_python_constant() if v.is_python_constant() else v for k, v in kwargs.items()}
    try:
        bound = _SIGNATURE.bind(*values, **options)
    except TypeError:
        bound = None
    backends = bound.arguments.get("backends") if bound is not None else None
    backends = [backends] if isinstance(backends, attention.SDPBackend) else backends
    set_priority = bound.arguments.get("set_priority", False) if bound is not None else None
    if not (type(backends) is list and all(isinstance(b, attention.SDPBackend) for b in backends)
            and type(set_priority) is bool):
        unimplemented(
            gb_type="unsupported context manager",
            context=f"sdpa_kernel({', '.join(map(str, args))})",
            explanation="sdpa_kernel is traced with a constant SDPBackend or list of them and a constant "
                        "set_priority; other arguments (eager's AssertionError among them) run natively.",
            hints=("Pass SDPBackend members.",),
        )
    return SdpaKernelVariable(tuple(dict.fromkeys(int(b) for b in backends)), set_priority)


_SIGNATURE = inspect.signature(attention.sdpa_kernel)
