"""Which tensors an operation of a graph may write in place, read from its
node: the ``OutputGraph`` asks to know which graph inputs a graph writes, so
that a graph that raises after writing one can put it back before its frame
reruns natively (:mod:`bytegraph.graph.rerun`). Which tensors share memory
(:func:`storage_id`) is told here too."""
from __future__ import annotations

from typing import Any

import torch
import torch.fx


def storage_id(example: torch.Tensor) -> int | None:
    """Identity of a (fake) tensor's storage (views share it); None for
    layouts without one (sparse, mkldnn...)."""
    try:
        return example.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return None


def is_inplace_name(name: Any) -> bool:
    """Whether an operation of this name writes its first argument: ``add_``, ``__iadd__``,
    ``setitem``, and the ``operator`` module's in-place functions (``x += 1`` on a tensor
    is recorded as ``operator.iadd``)."""
    return isinstance(name, str) and (
        (name.endswith("_") and not name.endswith("__")) or name in ("__setitem__", "setitem")
        or name.startswith("__i") or name in _OPERATOR_INPLACE
    )


#: the in-place functions of the ``operator`` module
_OPERATOR_INPLACE = frozenset({"iadd", "iand", "iconcat", "ifloordiv", "ilshift", "imatmul", "imod", "imul", "ior",
                               "ipow", "irshift", "isub", "itruediv", "ixor"})

#: operations that write tensor arguments which their schemas do not mark as written (so no
#: version counter moves): the running statistics of batch/instance norm in training (argument 5,
#: ``training``/``use_input_stats``, in both the ``torch.`` and the ``F.`` forms), the weight of an
#: embedding with ``max_norm`` (``F.embedding`` argument 3, renormed in place)
_WRITES_ARGUMENTS = {
    "batch_norm": (5, "training"), "instance_norm": (5, "use_input_stats"), "embedding": (3, "max_norm"),
}


def _writes_arguments(node: torch.fx.Node, name: str) -> bool:
    """Whether ``node`` (named ``name``) is one of :data:`_WRITES_ARGUMENTS` with
    its writing flag not known to be off; every tensor argument after the
    first then counts as written."""
    if name not in _WRITES_ARGUMENTS:
        return False
    position, keyword = _WRITES_ARGUMENTS[name]
    flag = node.args[position] if len(node.args) > position else node.kwargs.get(keyword, name != "embedding")
    return flag is not None and flag is not False


def written_args(node: torch.fx.Node) -> list[torch.fx.Node] | None:
    """The argument nodes (with tensor examples) that operation ``node`` may
    write in place; None when it writes one whose identity is unknown (the
    FakeTensor run found a written argument, or a write target is no tensor)."""
    if node.op not in ("call_function", "call_method"):
        return []
    if node.meta.get("mutates_args"):
        return None
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    targets = [node.args[0]] if is_inplace_name(name) and node.args else []
    targets += [node.kwargs["out"]] if "out" in node.kwargs else []
    if _writes_arguments(node, name):
        targets += [a for a in [*node.args[1:], *node.kwargs.values()] if isinstance(a, torch.fx.Node)
                    and isinstance(a.meta.get("example_value"), torch.Tensor)]
    if not all(isinstance(t, torch.fx.Node) and isinstance(t.meta.get("example_value"), torch.Tensor)
               for t in targets):
        return None
    return targets
