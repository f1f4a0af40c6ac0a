"""Operators given a 0-d tensor where their schema takes a ``Scalar``.

``torch.full(size, t)``, ``x.addcmul_(y, z, value=t)``, ``F.elu(x, t)``,
``torch._foreach_lerp_(xs, ys, t)``... accept a 0-d tensor ``t`` for a
``Scalar`` parameter: torch's argument parser reads its value (``t.item()``)
before the kernel runs. FakeTensors have no value, so the operation alone is a
data-dependent break. :func:`read_as_scalars` does in the graph what eager does: it
adds ``t.item()`` (a data-dependent scalar, captured as under torch.compile)
and passes it in ``t``'s place, so values, dtypes and the errors eager's
conversion raises (overflow) are eager's own.

Which arguments eager converts is asked of torch itself: the call runs once
on FakeTensors under a dispatch mode that records the tensors whose value is
read (``aten._local_scalar_dense``). Only calls of torch operations (the
functions bytegraph puts in the graph whole: ``torch.*`` and
``torch.nn.functional`` ops, operators) and of ``Tensor``'s C methods are
rewritten, so the reads are the argument parser's (or a kernel's, for a
``Tensor`` overload defined as the same as its ``Scalar`` one, like
``linspace``), never user code's. A
tensor that requires grad is never a Scalar (eager raises TypeError), and a
tensor-subclass argument eager converts runs no ``__torch_function__``.
"""
from __future__ import annotations

import contextlib
import types
import warnings
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch
from torch._dispatch.python import enable_python_dispatcher
from torch._subclasses.fake_tensor import DataDependentOutputException
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from bytegraph.variables.base import VariableTracker
from bytegraph.variables.tensors import tensor

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

_C_FUNCTIONS = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)


class _ValueReads(TorchDispatchMode):
    """Records the tensors whose value an operation reads (``_local_scalar_dense``)."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[int] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func is torch.ops.aten._local_scalar_dense.default:
            self.read.add(id(args[0]))
        return func(*args, **(kwargs or {}))


def _read_examples(tx: Tx, kind: str, target: Any, args: Sequence[VT], kwargs: dict[str, VT]) -> set[int]:
    """ids of the FakeTensor examples whose values ``target`` reads, found by
    running it once (its data-dependent symbols are dropped again)."""
    output = tx.output
    pending = output.shape_env.pending_fresh_unbacked_symbols if output.shape_env is not None else []
    before = len(pending)
    recorder = _ValueReads()
    ex_args = [a.as_example() for a in args]
    ex_kwargs = {k: v.as_example() for k, v in kwargs.items()}
    # an in-place call bumps version counters, which answer t._version: put them back after this run
    tensors = [t for t in pytree.tree_leaves((ex_args, ex_kwargs)) if isinstance(t, torch.Tensor)]
    versions = [t._version for t in tensors]
    dispatcher = enable_python_dispatcher() if output.shape_env is not None else contextlib.nullcontext()
    try:
        with output.fake_mode, dispatcher, recorder, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the graph's own run of the call warns as eager does
            if kind == "call_method":
                getattr(ex_args[0], target)(*ex_args[1:], **ex_kwargs)
            else:
                target(*ex_args, **ex_kwargs)
    except DataDependentOutputException:  # no ShapeEnv: the read itself stops the run (recorded first)
        pass
    except Exception:  # noqa: BLE001 - eager raises too; the usual path reports it
        return set()
    finally:
        del pending[before:]
        torch._C._autograd._unsafe_set_version_counter(tensors, versions)
    return recorder.read


def _is_c_method(name: str) -> bool:
    return isinstance(getattr(torch.Tensor, name, None), _C_FUNCTIONS)


def read_as_scalars(tx: Tx, kind: str, target: Callable | str, args: Sequence[VT], kwargs: dict[str, VT]
                    ) -> tuple[list[VT], dict[str, VT]] | None:
    """The arguments of ``target(*args, **kwargs)`` (``kind``
    ``"call_function"`` for a torch operation the graph calls, or
    ``"call_method"`` with ``self`` first in ``args``)
    with each 0-d tensor eager reads as a Scalar replaced by its ``item()``
    (a graph node); None when the call has no such argument.

    Raises:
        Unsupported: from ``item()`` when data-dependent scalars are not
            captured (``config.capture_scalar_outputs`` off, not fullgraph).
    """
    candidates = [v for v in (*args, *kwargs.values()) if isinstance(v, tensor.TensorVariable)
                  and v.example.dim() == 0 and not v.example.requires_grad]
    if not candidates or kind == "call_method" and not _is_c_method(target):
        return None
    read = _read_examples(tx, kind, target, args, kwargs)
    scalars = {id(v): v for v in candidates if id(v.example) in read}
    if not scalars:
        return None
    # the value as eager's parser takes it: a plain tensor's item() (a Scalar dispatches no __torch_function__)
    items = {key: tensor.TensorVariable(v.node, v.example).call_method(tx, "item", [], {})
             for key, v in scalars.items()}
    return [items.get(id(a), a) for a in args], {k: items.get(id(v), v) for k, v in kwargs.items()}
