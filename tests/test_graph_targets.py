"""Graph targets whose fx name finds another callable.

torch.fx names a callable of torch in the generated code by its qualified name.
For some bindings of ``torch._C._VariableFunctions`` (what torch's own Python,
such as ``F.mse_loss`` or ``torch.unique_consecutive``, calls) that name finds
a wrapper that takes or returns something else, and a function torch makes and
names after another (``torch.vmap(torch.sum)``) would be called as the function
it is named after: the graph raised (and the frame reran natively) or returned
a wrong value. Every such binding torch has is enumerated below; the public
functions that reach them, and torch.func transforms of torch's functions, are
compared with eager, with no graph raising.
"""
import math
import operator

import pytest
import torch
import torch.fx
import torch.nn.functional as F

from bytegraph.graph.targets import Binding, bind_targets, graph_target
from tests.helpers import check

VF = torch._C._VariableFunctions


def _bindings_fx_misnames():
    """Every binding whose qualified name, as fx writes it, does not find the binding."""
    from torch.fx.node import _get_qualified_name

    found = []
    for name in dir(VF):
        fn = getattr(VF, name)
        if name.startswith("__") or not callable(fn):
            continue
        try:
            module, _, attr = _get_qualified_name(fn).rpartition(".")
            owner = __import__(module)
            for part in module.split(".")[1:]:
                owner = getattr(owner, part)
            if getattr(owner, attr) is fn:
                continue
        except Exception:
            pass
        found.append(name)
    return found


MISNAMED = _bindings_fx_misnames()


def test_torch_has_such_bindings():
    assert {"broadcast_tensors", "unique_consecutive", "cdist"} <= set(MISNAMED)


@pytest.mark.parametrize("name", MISNAMED)
def test_generated_code_calls_the_binding_itself(name):
    graph = torch.fx.Graph()
    graph.output(graph.call_function(getattr(VF, name), (graph.placeholder("x"),)))
    bind_targets(graph)
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    called = [v for v in gm.forward.__globals__.values() if isinstance(v, Binding)]
    assert [b.fn for b in called] == [getattr(VF, name)]


def test_other_targets_are_kept():
    for target in (torch.add, VF.add, torch._C._nn.hardswish, torch.ops.aten.mul.Tensor, len, operator.getitem,
                   math.sqrt, torch.Tensor.add, torch.nn.functional.relu):
        assert graph_target(target) is target


def rows():
    return torch.tensor([[1.0, 2.0], [1.0, 2.0], [3.0, 0.0]])


CASES = {
    "unique_consecutive": (lambda x: torch.unique_consecutive(x), lambda: (torch.tensor([1.0, 1.0, 2.0, 3.0, 3.0, 1.0]),)),
    "unique_consecutive_counts": (lambda x: torch.unique_consecutive(x, return_counts=True),
                                  lambda: (torch.tensor([1.0, 1.0, 2.0, 2.0, 1.0]),)),
    "unique_dim": (lambda x: torch.unique(x, dim=0), lambda: (rows(),)),
    "mse_loss": (lambda x, y: F.mse_loss(x, y), lambda: (torch.randn(4, 3), torch.randn(4, 3))),
    "l1_loss": (lambda x, y: F.l1_loss(x, y, reduction="sum"), lambda: (torch.randn(4, 3), torch.randn(3))),
    "smooth_l1_loss": (lambda x, y: F.smooth_l1_loss(x, y), lambda: (torch.randn(5), torch.randn(5))),
    "huber_loss": (lambda x, y: F.huber_loss(x, y, delta=0.5), lambda: (torch.randn(5), torch.randn(5))),
    "broadcast_tensors": (lambda x, y: torch.broadcast_tensors(x, y), lambda: (torch.randn(3, 1), torch.randn(4))),
    "meshgrid": (lambda x, y: torch.meshgrid(x, y, indexing="ij"), lambda: (torch.randn(3), torch.randn(2))),
    "block_diag": (lambda x, y: torch.block_diag(x, y), lambda: (torch.randn(2, 2), torch.randn(1, 3))),
    "cartesian_prod": (lambda x, y: torch.cartesian_prod(x, y), lambda: (torch.randn(3), torch.randn(2))),
    "atleast_1d": (lambda x, y: torch.atleast_1d(x, y), lambda: (torch.tensor(1.0), torch.randn(2))),
    "atleast_2d": (lambda x: torch.atleast_2d(x), lambda: (torch.randn(3),)),
    "atleast_3d": (lambda x: torch.atleast_3d(x), lambda: (torch.randn(3, 2),)),
    "cdist": (lambda x, y: torch.cdist(x, y), lambda: (torch.randn(4, 3), torch.randn(2, 3))),
    "cdist_mm": (lambda x, y: torch.cdist(x, y, compute_mode="use_mm_for_euclid_dist"),
                 lambda: (torch.randn(4, 3), torch.randn(2, 3))),
    "einsum": (lambda x, y: torch.einsum("ij,jk->ik", x, y), lambda: (torch.randn(2, 3), torch.randn(3, 4))),
    "split": (lambda x: torch.split(x, 2), lambda: (torch.randn(5, 2),)),
    "split_sizes": (lambda x: torch.split(x, [1, 4]), lambda: (torch.randn(5, 2),)),
    "tensordot": (lambda x, y: torch.tensordot(x, y, dims=1), lambda: (torch.randn(2, 3), torch.randn(3, 4))),
    "norm_dim": (lambda x: torch.norm(x, dim=0), lambda: (torch.randn(3, 2),)),
    "norm_p1": (lambda x: torch.norm(x, p=1), lambda: (torch.randn(3, 2),)),
    "vmap_sum": (lambda x: torch.vmap(torch.sum)(x) * 1, lambda: (torch.randn(3, 5),)),
    "vmap_sum_in_dims": (lambda x: torch.func.vmap(torch.sum, in_dims=1)(x), lambda: (torch.randn(3, 5),)),
    "vmap_dot": (lambda x, y: torch.vmap(torch.dot)(x, y) + 1, lambda: (torch.randn(3, 5), torch.randn(3, 5))),
    "vmap_method": (lambda x: torch.vmap(torch.Tensor.cos)(x), lambda: (torch.randn(3, 2),)),
    "stft": (lambda x, w: torch.stft(x, 8, window=w, return_complex=True), lambda: (torch.randn(32), torch.hann_window(8))),
}


@pytest.mark.parametrize("name", CASES)
def test_functions_reaching_misnamed_bindings_run_their_graph(name):
    fn, make = CASES[name]
    check(fn, make=make, fullgraph=True, reruns=0)


def test_chain_matmul_runs_its_graph():
    def f(a, b, c):
        return torch.chain_matmul(a, b, c)

    with pytest.warns(UserWarning):
        check(f, make=lambda: (torch.randn(2, 3), torch.randn(3, 4), torch.randn(4, 2)), fullgraph=True, reruns=0)
