"""Graph node targets that the GraphModule's generated code calls as traced.

torch.fx writes a callable of torch into the generated code by its qualified
name (``torch.broadcast_tensors``), looked up when the code runs, and that name
does not always find the callable that was traced:

- some ATen bindings of ``torch._C._VariableFunctions`` (behind ``torch.<op>``
  and ``torch._VF``) share their name with a Python wrapper of another
  signature: ``torch.broadcast_tensors(*tensors)`` against the binding's
  ``(tensors)``, ``torch.unique_consecutive`` returning one tensor where the
  binding returns three. torch's own Python (``F.mse_loss``) calls the
  bindings, and bytegraph traces it;
- a function that torch makes and names after another (``torch.vmap(torch.sum)``
  is ``functools.wraps``'d as ``torch.sum``) would be called as the function it
  is named after.

Such a target becomes a :class:`Binding`, which fx keeps as an object of the
module's globals.
"""
from __future__ import annotations

import builtins
import functools
import types
from typing import Any

import torch
import torch.fx
from torch.fx.graph import _is_from_torch
from torch.fx.node import _get_qualified_name

_VARIABLE_FUNCTIONS = torch._C._VariableFunctions


class Binding:
    """Calls ``fn``, the object traced, whatever its name finds."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.__name__ = self.__qualname__ = getattr(fn, "__name__", type(fn).__name__)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __reduce__(self) -> tuple:
        """A binding pickles by a name that finds its wrapper: it is rebuilt from its name."""
        if getattr(_VARIABLE_FUNCTIONS, self.__name__, None) is self.fn:
            return _variable_function, (self.__name__,)
        return Binding, (self.fn,)

    def __repr__(self) -> str:
        return f"Binding({self.fn!r})"


def _variable_function(name: str) -> Binding:
    return Binding(getattr(_VARIABLE_FUNCTIONS, name))


def _name_finds_another(fn: Any) -> bool:
    """Whether fx's qualified name of ``fn`` finds another object (or none)."""
    try:
        first, *rest = _get_qualified_name(fn).split(".")
        found = functools.reduce(getattr, rest, __import__(first) if rest else getattr(builtins, first))
        return found is not fn
    except (AttributeError, ImportError, RuntimeError, ValueError):
        return True


#: for torch's C functions, which live as long as torch (a function made at run time is not kept)
_builtin_name_finds_another = functools.cache(_name_finds_another)


def graph_target(target: Any) -> Any:
    """``target``, or a :class:`Binding` of it where fx would call what its name finds."""
    builtin = isinstance(target, (types.BuiltinFunctionType, torch._ops.OpOverload, torch._ops.OpOverloadPacket))
    if not callable(target) or not (builtin or _is_from_torch(target)):
        return target  # fx binds it as an object
    misnamed = (_builtin_name_finds_another if builtin else _name_finds_another)(target)
    return Binding(target) if misnamed else target


def bind_targets(graph: torch.fx.Graph) -> None:
    """Give every ``call_function`` node of ``graph`` its :func:`graph_target`."""
    for node in graph.nodes:
        if node.op == "call_function":
            node.target = graph_target(node.target)
