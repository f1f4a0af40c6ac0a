"""Kinds of ordinary Python that torch.compile traces into one graph and that
bytegraph used to break on (or answer differently from eager), found with the
peer suite (PyTorch's own function tests, see docs/peer_suite.md). Each test
compiles with ``fullgraph=True`` and compares with the eager result."""
import collections
import functools
import itertools

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same


def full(fn, *args, graphs=1):
    """Compile ``fn`` whole (``fullgraph=True``), run it and eager on the same
    arguments, assert equal results and the number of graphs; return the result."""
    expected = fn(*args)
    cnt = CompileCounter()
    actual = bytegraph.compile(fn, backend=cnt, fullgraph=True)(*args)
    assert same(actual, expected), f"compiled {actual!r} != eager {expected!r}"
    if graphs is not None:
        assert cnt.frame_count == graphs, f"expected {graphs} graph(s), got {cnt.frame_count}"
    return actual


# --- torch functions that answer about process state ----------------------------

def test_state_queries_fold_to_constants():
    def f(x):
        flags = (
            torch._C._is_any_autocast_enabled(),
            torch.get_autocast_dtype("cpu"),
            torch._C._get_privateuse1_backend_name(),
            torch.autograd._is_checkpoint_valid(),
            torch.fx._symbolic_trace.is_fx_tracing(),
            torch.onnx.is_in_onnx_export(),
            torch.distributed.is_available(),
        )
        return x + 1, flags

    full(f, torch.ones(3))


def test_autocast_dtype_query_is_guarded():
    def f(x):
        return x.to(torch.get_autocast_dtype("cpu"))

    compiled = bytegraph.compile(f, backend="eager", fullgraph=True)
    x = torch.ones(2)
    assert compiled(x).dtype == f(x).dtype
    torch.set_autocast_dtype("cpu", torch.float16)
    try:
        assert compiled(x).dtype == f(x).dtype == torch.float16
    finally:
        torch.set_autocast_dtype("cpu", torch.bfloat16)


def test_usage_logging_is_not_a_break():
    def f(x):
        return torch.nn.Softmax(dim=-1)(x)

    full(f, torch.randn(2, 3))


def test_small_torch_helpers_of_skipped_modules_are_traced():
    @torch.jit.script_if_tracing
    def helper(x, c=1.5):
        return x * c

    def f(x):
        y = torch.jit._unwrap_optional(x)
        return helper(y) + torch.jit.annotate(torch.Tensor, y)

    full(f, torch.randn(3))
