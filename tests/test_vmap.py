"""``torch.vmap`` called inside compiled code: the vmap of a torch C function is
one graph node (identity of in-place results kept); the vmap of impure Python
code is a graph break, run natively with eager's result (pure Python code:
tests/test_func_transforms.py)."""
import pytest
import torch

from tests.helpers import check


@pytest.mark.parametrize("dynamic", [False, True])
def test_vmap_of_an_in_place_method_returns_its_input(dynamic):
    def f(z):
        x = z.clone()
        y = torch.vmap(torch.Tensor.acos_)(x)
        return y is x, y is z, x * 2

    assert check(f, torch.full((4, 1), 0.5), dynamic=dynamic, fullgraph=True)[:2] == (True, False)


def test_vmap_in_place_writes_the_callers_tensor():
    def f(x):
        return torch.vmap(torch.Tensor.sin_)(x) is x

    check(f, torch.randn(3, 2), fullgraph=True)


@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_vmap_of_torch_functions_with_in_dims(backend):
    def f(x, y):
        return torch.vmap(torch.dot)(x, y) + 1, torch.func.vmap(torch.sum, in_dims=1)(x)

    check(f, torch.randn(3, 5), torch.randn(3, 5), backend=backend, fullgraph=True)


def test_vmap_with_bad_in_dims_raises_like_eager():
    def f(x):
        return torch.vmap(torch.sin, in_dims=(0, 1))(x)

    # the error leaves the vmapped function to run natively
    check(f, torch.randn(3), raises=ValueError, graphs=0, breaks=1, gb_types=["cannot reconstruct"])


def test_vmap_of_python_code_breaks():
    calls = []

    def body(t):
        calls.append(1)  # a side effect per vmap call: must happen once per run, as in eager
        return t * 2

    def f(x):
        return torch.vmap(body)(x) + 1

    # the impure body makes the vmapped call one graph break (the wrapper rebuilt for it), run
    # natively; the add after it is one graph
    check(f, torch.randn(3), graphs=1, breaks=1, gb_types=["unsupported torch.func transform"])
    assert len(calls) == 2  # eager once, compiled once
