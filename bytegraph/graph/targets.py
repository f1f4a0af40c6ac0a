"""Graph node targets that the GraphModule's generated code calls as traced.

torch.fx writes a function of torch into the generated code by its qualified
name (``torch.broadcast_tensors``), looked up when the code runs. For some ATen
bindings of ``torch._C._VariableFunctions`` (the functions behind ``torch.<op>``
and ``torch._VF``) that name is a Python wrapper of torch's with another
signature: ``torch.broadcast_tensors(*tensors)`` against the binding's
``(tensors)``, ``torch.cdist``'s ``compute_mode`` string against the binding's
int, and ``torch.unique_consecutive`` returning one tensor where the binding
returns three. torch's own Python (``F.mse_loss``, ``torch.unique``) calls the
bindings, and bytegraph traces it, so such nodes are common. Their targets
become a :class:`Binding`, which fx keeps as an object of the module's globals.
"""
from __future__ import annotations

import functools
from typing import Any

import torch
from torch.fx.node import _get_qualified_name

_VARIABLE_FUNCTIONS = torch._C._VariableFunctions


class Binding:
    """Calls the ATen binding ``torch._C._VariableFunctions.<name>`` itself."""

    def __init__(self, name: str):
        self.fn = getattr(_VARIABLE_FUNCTIONS, name)
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __reduce__(self) -> tuple:  # the binding pickles by a name that finds the wrapper
        return Binding, (self.__name__,)

    def __repr__(self) -> str:
        return f"torch._C._VariableFunctions.{self.__name__}"


@functools.cache
def _misnamed(fn: Any) -> bool:
    """Whether fx's qualified name of the binding ``fn`` finds another object (or none)."""
    try:
        module, _, name = _get_qualified_name(fn).rpartition(".")
        found = functools.reduce(getattr, module.split(".")[1:], __import__(module.split(".")[0]))
        return getattr(found, name) is not fn
    except (AttributeError, ImportError, RuntimeError, ValueError):
        return True


def graph_target(target: Any) -> Any:
    """``target``, or a :class:`Binding` of it where fx would call a wrapper by its name."""
    if callable(target) and getattr(_VARIABLE_FUNCTIONS, getattr(target, "__name__", ""), None) is target and \
            _misnamed(target):
        return Binding(target.__name__)
    return target


def bind_targets(graph: torch.fx.Graph) -> None:
    """Give every ``call_function`` node of ``graph`` its :func:`graph_target`."""
    for node in graph.nodes:
        if node.op == "call_function":
            node.target = graph_target(node.target)
