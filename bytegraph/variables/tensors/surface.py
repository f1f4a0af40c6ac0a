"""The Tensor API surface as data: for each attribute and method name of
``torch.Tensor``, which path a traced tensor answers it by.

:class:`~bytegraph.variables.tensors.tensor.TensorVariable` dispatches on these tables
(see ``attribute_route``/``method_route`` there); ``tools/gen_docs.py``
renders ``docs/tensor_support.md`` from the same tables, so the page stays
true to the code. Names not listed here are answered by a handler of
TensorVariable or, for methods, put in the graph when they return tensors.
"""
from __future__ import annotations

import torch

#: Attributes answered from the example's metadata as constants (guarded by the
#: input's tensor guard: type, dtype, device, requires_grad, sizes, strides).
STATIC_ATTRS = frozenset(
    {
        "dtype", "device", "layout", "ndim", "requires_grad", "itemsize", "is_cuda", "is_cpu", "is_meta",
        "is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_mkldnn", "is_ipu", "is_maia", "is_mps",
        "is_mtia", "is_vulkan", "is_xla", "is_xpu",
    }
)

#: Attributes the tensor guard does not cover: read from an input (and guarded
#: through its source), from the example for tensors made in the graph.
SOURCED_ATTRS = frozenset({"retains_grad", "grad_dtype"})

#: Attributes that are not tensor data: reading one is a graph break.
BREAKING_ATTRS = {
    "_base": "is the tensor this one views (its identity is not tracked)",
    "_cdata": "is a memory address",
    "output_nr": "is autograd bookkeeping",
    "_grad": "is autograd bookkeeping",
    "_grad_fn": "is autograd bookkeeping",
    "_backward_hooks": "holds autograd hooks",
    "_post_accumulate_grad_hooks": "holds autograd hooks",
    "_python_dispatch": "describes the tensor's implementation",
    "_has_symbolic_sizes_strides": "describes the tensor's implementation",
    "volatile": "is a removed autograd flag",
    "name": "is not modelled",
    "__cuda_array_interface__": "exposes device memory",
}

#: Methods answered from metadata; the value is computed by calling them on the example.
STATIC_METHODS = frozenset(
    {
        "dim", "ndimension", "numel", "nelement", "is_floating_point", "is_complex", "is_contiguous",
        "element_size", "get_device", "is_signed", "has_names", "is_same_size", "dim_order", "dense_dim",
        "sparse_dim", "is_distributed",
    }
)

#: Zero-argument methods the tensor guard does not cover: read from an input
#: (guarded through ``x.<method>()``), from the example for tensors made in the graph.
SOURCED_METHODS = frozenset({"is_inference", "is_conj", "is_neg"})

#: Zero-argument methods about where a storage lives: read from the input that
#: owns the storage (guarded through ``x.<method>()``), False for storages made in the graph.
STORAGE_METHODS = frozenset({"is_shared", "is_pinned"})

#: Methods whose Python result depends on tensor data.
DATA_DEPENDENT_METHODS = {
    "item": "converts a tensor to a Python scalar",
    "tolist": "converts a tensor to Python values",
    "__bool__": "converts a tensor to a Python bool",
    "__int__": "converts a tensor to a Python int",
    "__float__": "converts a tensor to a Python float",
    "__index__": "converts a tensor to a Python int",
    "is_nonzero": "converts a tensor to a Python bool",
}
#: data-dependent methods that become symbolic scalars when scalar capture is on
CAPTURABLE_METHODS = frozenset({"item", "tolist", "__int__", "__float__", "__index__"})

#: Methods that talk to autograd, storage or the outside world: never in the graph.
BREAKING_METHODS = {
    "__array__": "converts a tensor to a NumPy array",
    "__dlpack__": "exports the tensor's memory",
    "__repr__": "formats tensor data",
    "__str__": "formats tensor data",
    "__format__": "formats tensor data",
    "__reduce_ex__": "pickles the tensor",
    "__deepcopy__": "copies the tensor with its autograd identity",
    "__setstate__": "replaces the tensor's state",
    "backward": "runs autograd's backward pass",
    "retain_grad": "changes autograd bookkeeping",
    "storage": "exposes a TypedStorage",
    "_typed_storage": "exposes a TypedStorage",
    "storage_type": "exposes a TypedStorage class",
    "is_set_to": "compares storages",
    "resize_": "resizes storage",
    "resize_as_": "resizes storage",
    "sparse_resize_": "resizes storage",
    "sparse_resize_and_clear_": "resizes storage",
    "random_": "samples integers in place over a range that depends on the dtype",
    "share_memory_": "moves storage to shared memory",
    "pin_memory": "pins host memory",
    "record_stream": "talks to a device stream",
    "cuda": "moves to a device",
    "apply_": "runs a Python callable on every element",
    "map_": "runs a Python callable on every element",
    "map2_": "runs a Python callable on every element",
    "to_sparse": "changes layout",
    "to_sparse_coo": "changes layout",
    "to_sparse_csr": "changes layout",
    "to_sparse_csc": "changes layout",
    "to_sparse_bsr": "changes layout",
    "to_sparse_bsc": "changes layout",
    "to_mkldnn": "changes layout",
}

#: In-place ops that change a tensor's sizes, strides or storage: in the graph on
#: tensors made in it, a graph break on graph inputs (whose metadata the graph
#: cannot change for the caller).
INPLACE_VIEW_METHODS = frozenset(
    {"as_strided_", "detach_", "set_", "squeeze_", "swapaxes_", "swapdims_", "t_", "transpose_", "unsqueeze_"}
)

#: Specific hints of some breaking methods.
METHOD_HINTS = {
    "random_": "Use torch.randint(low, high, t.shape, dtype=t.dtype) and copy_ it into the tensor, or call random_ "
    "outside the compiled function.",
    "uniform_": "Pass the bounds positionally (t.uniform_(low, high)), or call uniform_ outside the compiled function.",
    "backward": "Return the loss from the compiled function and call .backward() on it outside.",
}

#: ``Tensor.type(name)`` targets: the legacy tensor types by their names.
LEGACY_TENSOR_TYPES = {f"{cls.__module__}.{cls.__name__}": cls for cls in torch._tensor_classes}
