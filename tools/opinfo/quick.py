"""The quick tier's slice of ``op_db``: OpInfos torch.compile captures whole (one graph,
equal to eager, on backends eager and aot_eager; ``tests/test_opinfo.py`` checks that
against the committed torch.compile sweep), chosen to reach each way torch exposes an
operator. The expectation for every one is the same: bytegraph captures it whole and
equal to eager. ``KNOWN_FAILURES`` names the ones it does not yet, by kind (the kinds of
``docs/opinfo.md``); the test marks them strict xfail, so a fix shows up as an
unexpected pass and its entry is deleted."""

QUICK = [
    # torch.* builtins (torch._C._VariableFunctions): pointwise, in place, reductions, factories,
    # structured returns, list inputs
    "abs", "add", "addmm", "arange", "cat", "clamp", "cumsum", "index_select", "max.reduction_with_dim",
    "sort", "empty_like",
    # Tensor's C methods and its Python methods (torch/_tensor.py)
    "__getitem__", "__radd__", "cfloat", "__rsub__", "__rpow__",
    # Tensor methods reached through a lambda of torch.testing
    "view", "contiguous", "to",
    # torch.nn.functional (Python) over torch._C._nn and torch.* builtins
    "nn.functional.relu", "nn.functional.cross_entropy", "nn.functional.layer_norm", "nn.functional.conv2d",
    "nn.functional.hardswish", "nn.functional.hardsigmoid",
    "nn.functional.linear_cross_entropy.chunked", "nn.functional.triplet_margin_with_distance_loss",
    # torch._C._nn builtins bound as torch.nn.functional.<name>
    "nn.functional.gelu", "nn.functional.linear", "nn.functional.avg_pool2d",
    # torch.functional (Python)
    "split", "broadcast_tensors", "cdist", "einsum",
    # torch._C._linalg, torch._C._fft, torch._C._special
    "linalg.det", "linalg.eigh", "linalg.pinv.singular", "fft.fft", "fft.rfft2", "special.i0e", "special.zeta",
    "special.polygamma.special_polygamma_n_0",
    # torch.masked (Python), torch.signal.windows (Python)
    "masked.sum", "masked.softmax", "signal.windows.hann",
    # torch.ops.aten overload packets and overloads
    "slice", "_softmax_backward_data", "torch.ops.aten._safe_softmax.default",
    # a tensor of split points
    "tensor_split",
]

#: OpInfo full name -> the kind of docs/opinfo.md it fails by (op.op on both backends)
KNOWN_FAILURES: dict[str, str] = {}
#: the same for in-place variants
KNOWN_INPLACE_FAILURES: dict[str, str] = {}
