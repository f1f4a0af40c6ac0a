"""Operators registered with ``torch.library`` called in compiled code: one graph
node each (its output shapes from the fake kernel), as under torch.compile;
an operator without a fake kernel is a graph break that says how to add one.
Every test compares with eager, including the arguments an operator writes."""
import pytest
import torch
from torch import Tensor

import bytegraph
from tests.helpers import check


# operators of this module's own namespace, registered once at import
@torch.library.custom_op("bgtest::scale3", mutates_args=())
def scale3(x: Tensor) -> Tensor:
    return x * 3


@scale3.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("bgtest::accumulate", mutates_args=("acc",))
def accumulate(acc: Tensor, x: Tensor) -> None:
    acc.add_(x)


@accumulate.register_fake
def _(acc, x):
    return None


@torch.library.custom_op("bgtest::parts", mutates_args=())
def parts(x: Tensor) -> tuple[Tensor, Tensor]:
    return x.floor(), (x * 10).to(torch.int64)


@parts.register_fake
def _(x):
    return torch.empty_like(x), torch.empty_like(x, dtype=torch.int64)


@torch.library.custom_op("bgtest::no_fake", mutates_args=())
def no_fake(x: Tensor) -> Tensor:
    return x - 1


@torch.library.custom_op("bgtest::count_positive", mutates_args=())
def count_positive(x: Tensor) -> int:
    return int((x > 0).sum())


@count_positive.register_fake
def _(x):
    return 0  # not what the real kernel returns


torch.library.define("bgtest::cube", "(Tensor x) -> Tensor")
torch.library.impl("bgtest::cube", "cpu", lambda x: x ** 3)
torch.library.register_fake("bgtest::cube", lambda x: torch.empty_like(x))
torch.library.define("bgtest::cube_no_fake", "(Tensor x) -> Tensor")
torch.library.impl("bgtest::cube_no_fake", "cpu", lambda x: x ** 3)


@pytest.mark.parametrize("call", [
    lambda x: torch.ops.bgtest.scale3(x),           # the overload packet
    lambda x: torch.ops.bgtest.scale3.default(x),   # one overload
    lambda x: scale3(x),                            # the custom_op object itself
], ids=["packet", "overload", "custom_op_object"])
def test_custom_op_is_one_graph_node(call):
    def f(x):
        return call(x).sin() + 1

    check(f, torch.randn(4), fullgraph=True)


def test_define_impl_register_fake_op():
    def f(x):
        return torch.ops.bgtest.cube(x) - x

    check(f, torch.randn(2, 3), fullgraph=True)


def test_aten_overload_called_through_torch_ops():
    def f(x, y):
        return torch.ops.aten.add.Tensor(x, y) * torch.ops.aten.mul(x, 2)

    check(f, torch.randn(3), torch.randn(3), fullgraph=True)


def test_op_writing_its_input_mutates_the_caller_tensor():
    def f(acc, x):
        accumulate(acc, x)
        torch.ops.bgtest.accumulate(acc, x)
        return acc * 2

    check(f, torch.zeros(3), torch.randn(3), fullgraph=True)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_op_writing_its_input_under_real_backends(backend):
    def f(acc, x):
        accumulate(acc, x)
        return acc + 1

    check(f, torch.zeros(3), torch.randn(3), backend=backend, fullgraph=True)


def test_writing_op_on_aliased_inputs_recompiles_rather_than_reuse():
    def f(acc, x):
        accumulate(acc, x)
        return x + 1

    a = torch.ones(3)
    # the aliasing guard of an input-writing graph fails on the second call: a second graph
    check(f, calls=[(torch.zeros(3), torch.ones(3)), (a, a)], graphs=2)


def test_op_with_several_outputs_of_different_dtypes():
    def f(x):
        whole, tenths = parts(x)
        return whole * 2, tenths + 1

    out = check(f, torch.randn(5) * 4, fullgraph=True)
    assert out[1].dtype == torch.int64


def test_op_without_fake_kernel_breaks_with_a_hint():
    def f(x):
        return no_fake(x).cos() + torch.ops.bgtest.cube_no_fake(x)

    # each op breaks; the cos between them and the add after them are a graph each
    check(f, torch.randn(3), graphs=2, breaks=2, gb_types=["custom operator without fake kernel"] * 2)
    report = bytegraph.explain(f)(torch.randn(3))
    assert "register_fake" in report.break_reasons[0].hints[0]
    with pytest.raises(Exception, match="without fake kernel"):
        bytegraph.compile(f, backend="eager", fullgraph=True)(torch.randn(3))


def test_op_returning_a_python_value_runs_natively():
    def f(x):
        return x + count_positive(x)

    x = torch.tensor([1.0, -2.0, 3.0])
    # nothing before the op; the add after it is one graph
    check(f, x, graphs=1, breaks=1, gb_types=["custom operator returning a Python value"])
