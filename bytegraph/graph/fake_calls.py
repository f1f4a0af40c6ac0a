"""One operation run on FakeTensors: under torch's Python dispatcher only when a symbol may be met.

The Python dispatcher lets composite kernels written in C++ (``F.pad``...) take
symbolic sizes, through torch's Python kernels, as under torch.compile; it slows
every dispatch down, so a trace with a ShapeEnv turns it on per operation, for an
argument that is symbolic or whose data a kernel may read as sizes.
"""
from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch._dispatch.python import enable_python_dispatcher
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils import _pytree as pytree

_SYMBOLIC_SCALARS = (torch.SymInt, torch.SymFloat, torch.SymBool)


def is_index_tensor(value: Any) -> bool:
    """Whether ``value`` is an integer or bool tensor (whose data a kernel may read as indices or sizes)."""
    return isinstance(value, torch.Tensor) and not (value.is_floating_point() or value.is_complex())


def has_index_tensor(args: Any, kwargs: dict) -> bool:
    """Whether an argument is an index tensor (:func:`is_index_tensor`)."""
    return any(is_index_tensor(a) for a in pytree.tree_leaves((args, kwargs)))


def needs_python_dispatcher(args: Any, kwargs: Any) -> bool:
    """Whether a run in a trace with a ShapeEnv may meet a symbol: an argument is a
    SymInt/SymFloat/SymBool, a tensor with a symbolic size, stride or offset, or an index
    tensor (``x[mask]`` and ``nonzero`` make sizes from its data)."""
    for leaf in pytree.tree_leaves((args, kwargs)):
        if isinstance(leaf, _SYMBOLIC_SCALARS) or isinstance(leaf, torch.Tensor) and (
                leaf._has_symbolic_sizes_strides or is_index_tensor(leaf)):
            return True
    return False


def call_on_fakes(fake_mode: FakeTensorMode, dispatcher: bool, kind: str, target: Any, args: tuple,
                  kwargs: dict) -> Any:
    """``target(*args, **kwargs)`` (``kind`` ``"call_function"``), or the method ``target`` of
    ``args[0]`` (``"call_method"``), under ``fake_mode`` and, if ``dispatcher``, the Python dispatcher."""
    with fake_mode, enable_python_dispatcher() if dispatcher else contextlib.nullcontext():
        return getattr(args[0], target)(*args[1:], **kwargs) if kind == "call_method" else target(*args, **kwargs)
