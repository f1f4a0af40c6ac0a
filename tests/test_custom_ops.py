"""Operators registered with ``torch.library`` called in compiled code: one graph
node each (its output shapes from the fake kernel), as under torch.compile;
an operator without a fake kernel is a graph break that says how to add one.
Every test compares with eager, including the arguments an operator writes."""
import pytest
import torch
from torch import Tensor

import bytegraph
from tests.helpers import check_compiled, check_fullgraph, clone_inputs
from bytegraph.testing import CompileCounter, same


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


def breaks_of(fn, *args):
    report = bytegraph.explain(fn)(*clone_inputs(args))
    return report.graph_count, [b.gb_type for b in report.break_reasons]


@pytest.mark.parametrize("call", [
    lambda x: torch.ops.bgtest.scale3(x),           # the overload packet
    lambda x: torch.ops.bgtest.scale3.default(x),   # one overload
    lambda x: scale3(x),                            # the custom_op object itself
], ids=["packet", "overload", "custom_op_object"])
def test_custom_op_is_one_graph_node(call):
    def f(x):
        return call(x).sin() + 1

    check_fullgraph(f, torch.randn(4))
    assert breaks_of(f, torch.randn(4)) == (1, [])


def test_define_impl_register_fake_op():
    def f(x):
        return torch.ops.bgtest.cube(x) - x

    check_fullgraph(f, torch.randn(2, 3))


def test_aten_overload_called_through_torch_ops():
    def f(x, y):
        return torch.ops.aten.add.Tensor(x, y) * torch.ops.aten.mul(x, 2)

    check_fullgraph(f, torch.randn(3), torch.randn(3))


def test_op_writing_its_input_mutates_the_caller_tensor():
    def f(acc, x):
        accumulate(acc, x)
        torch.ops.bgtest.accumulate(acc, x)
        return acc * 2

    check_fullgraph(f, torch.zeros(3), torch.randn(3))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_op_writing_its_input_under_real_backends(backend):
    def f(acc, x):
        accumulate(acc, x)
        return acc + 1

    acc, x = torch.zeros(3), torch.randn(3)
    eager_acc = acc.clone()
    expected = f(eager_acc, x)
    actual = bytegraph.compile(f, backend=backend, fullgraph=True)(acc, x)
    assert same(actual, expected) and same(acc, eager_acc)


def test_writing_op_on_aliased_inputs_recompiles_rather_than_reuse():
    def f(acc, x):
        accumulate(acc, x)
        return x + 1

    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    compiled(torch.zeros(3), torch.ones(3))
    a = torch.ones(3)
    expected_input = a.clone()
    expected = f(expected_input, expected_input)
    assert same(compiled(a, a), expected) and same(a, expected_input)
    assert cnt.frame_count == 2  # the aliasing guard of an input-writing graph failed


def test_op_with_several_outputs_of_different_dtypes():
    def f(x):
        whole, tenths = parts(x)
        return whole * 2, tenths + 1

    out = check_fullgraph(f, torch.randn(5) * 4)
    assert out[1].dtype == torch.int64


def test_op_without_fake_kernel_breaks_with_a_hint():
    def f(x):
        return no_fake(x).cos() + torch.ops.bgtest.cube_no_fake(x)

    check_compiled(f, torch.randn(3), graphs=None)
    graphs, gb_types = breaks_of(f, torch.randn(3))
    assert gb_types == ["custom operator without fake kernel"] * 2
    report = bytegraph.explain(f)(torch.randn(3))
    assert "register_fake" in report.break_reasons[0].hints[0]
    with pytest.raises(Exception, match="without fake kernel"):
        bytegraph.compile(f, backend="eager", fullgraph=True)(torch.randn(3))


def test_op_returning_a_python_value_runs_natively():
    def f(x):
        return x + count_positive(x)

    x = torch.tensor([1.0, -2.0, 3.0])
    check_compiled(f, x, graphs=None)
    assert breaks_of(f, x)[1] == ["custom operator returning a Python value"]
