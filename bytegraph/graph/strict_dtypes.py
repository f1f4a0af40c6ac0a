"""Operations whose eager kernels and meta functions (what the FakeTensor run
of a trace uses) disagree on tensor arguments of different floating-point
dtypes (``F.linear(x, w)`` with ``x`` float32 and ``w`` float64, as after a
module's ``double()``):

- :data:`STRICT`, :data:`NORMS`: eager raises ``RuntimeError``; a graph may
  not (inductor computes the operation in the promoted dtype);
- :data:`UNPROMOTED`: eager's result has another dtype than the meta
  function's (``torch.normal(mean, std)`` keeps ``mean``'s).

Dtypes are fixed by the guards, so such a call disagrees on every run of its
graph: the trace breaks before it (:func:`check_dtypes`), and the operation
runs natively, as eager.

The names were found by running every OpInfo of torch's ``op_db`` with one
floating-point tensor argument in another dtype, eagerly and on FakeTensors,
and by the same comparison on the calls modules make (``gru_cell``,
``nll_loss`` with a weight); ``tests/test_mixed_dtype_kernels.py`` repeats the sweep
and fails on an operation these tables lack.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree

from bytegraph.breaks import unimplemented

#: operations (their Python names, in place or not, without an OpOverload's ``.default``) that need one
#: floating-point dtype in all tensor arguments
STRICT = frozenset({
    "mm", "mv", "addmm", "addbmm", "matmul", "__matmul__", "__rmatmul__", "linear", "cdist", "cross", "linalg_cross",
    "complex", "polar", "heaviside", "index_add", "index_copy", "index_reduce", "index_put", "put", "linalg_pinv",
    "binary_cross_entropy", "nll_loss", "nll_loss_nd", "nll_loss2d", "conv_transpose1d", "conv_transpose3d",
    "grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "_softmax_backward_data",
    "_linear_cross_entropy_batch_chunked", "_linear_cross_entropy_batch_chunked_no_reduction",
    "gru_cell", "lstm_cell", "rnn_tanh_cell", "rnn_relu_cell",
})

#: normalisations whose kernels also take a bfloat16 or float16 input with float32 parameters
NORMS = frozenset({
    "batch_norm", "native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update", "instance_norm",
    "layer_norm", "native_layer_norm", "group_norm", "native_group_norm",
})

#: operations whose eager result dtype, for arguments of mixed floating-point dtypes, is not their meta function's
UNPROMOTED = frozenset({"normal", "addr", "huber_loss", "soft_margin_loss"})

#: operations whose kernels compare the dtypes of their first n arguments only (``instance_norm``'s
#: running statistics may be of another dtype)
_LEADING = {"instance_norm": 3}

_REDUCED = (torch.bfloat16, torch.float16)


def mixed_dtypes(base: str, args: tuple, kwargs: dict) -> list[torch.dtype] | None:
    """The floating-point dtypes of the tensor arguments of operation ``base``
    (its name without an in-place ``_``) when its eager kernel and its meta
    function disagree on them (None: they agree)."""
    if base not in STRICT and base not in NORMS and base not in UNPROMOTED:
        return None
    if base in _LEADING:
        args, kwargs = args[:_LEADING[base]], {}
    tensors = [a for a in pytree.tree_leaves((args, kwargs))
               if isinstance(a, torch.Tensor) and (a.is_floating_point() or a.is_complex())]
    dtypes = list(dict.fromkeys(t.dtype for t in tensors))
    if len(dtypes) < 2:
        return None
    if base in NORMS and tensors[0].dtype in _REDUCED and all(t.dtype == torch.float32 for t in tensors[1:]):
        return None
    return dtypes


def check_dtypes(name: str, args: tuple, kwargs: dict) -> None:
    """Graph-break before ``name`` when its eager kernel and its meta function
    disagree on the dtypes of its arguments."""
    base = name.partition(".")[0]
    base = base[:-1] if base.endswith("_") and not base.endswith("__") else base
    dtypes = mixed_dtypes(base, args, kwargs)
    if dtypes is None:
        return
    context = f"{name} on tensors of dtypes {', '.join(str(d) for d in dtypes)}"
    if base in UNPROMOTED:
        unimplemented(gb_type="mixed dtypes give another result dtype in a trace", context=context,
                      hints=("Convert the tensors to one dtype (x.to(w.dtype)), or the module to the inputs' dtype.",),
                      explanation="Eager computes this operation in another dtype than the trace would; it runs "
                      "natively, as eager.")
    unimplemented(gb_type="operation rejects mixed dtypes", context=context,
                  hints=("Convert the tensors to one dtype (x.to(w.dtype)), or the module to the inputs' dtype.",),
                  explanation="Eager raises RuntimeError for these dtypes together, and a compiled graph might "
                  "compute a value instead; the operation runs natively, where it raises.")
