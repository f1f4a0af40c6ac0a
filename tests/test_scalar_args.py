"""A 0-d tensor passed where an operator's schema takes a Scalar
(``torch.full(size, t)``, ``value=t``, ``alpha=t``, ``F.elu(x, t)``,
``_foreach_pow(t, exps)``, ``_foreach_lerp_(xs, ys, t)``): eager reads its
value before the kernel; the graph reads it the same way (``t.item()``) and
must give eager's values (bit for bit), dtypes and errors in one graph."""
import functools

import pytest
import torch

import bytegraph
from tests.helpers import check


#: compiled whole, eager's values bit for bit (NaNs equal), dtypes and argument writes, in one graph
one_graph = functools.partial(check, fullgraph=True, atol=0, rtol=0)


class Tagged(torch.Tensor):
    pass


@pytest.mark.parametrize("fill", [
    torch.tensor(5.0), torch.tensor(7), torch.tensor(7, dtype=torch.int32), torch.tensor(True),
    torch.tensor(2.5, dtype=torch.float16), torch.tensor(2.5, dtype=torch.float64), torch.tensor(float("nan")),
], ids=lambda t: str(t.dtype))
def test_full_with_tensor_fill_infers_eagers_dtype(fill):
    out = one_graph(lambda t: torch.full((2, 3), t), fill)
    assert out.is_contiguous()


def test_full_with_explicit_dtype_and_keyword_fill():
    one_graph(lambda t: torch.full((4,), fill_value=t, dtype=torch.float64) + 1, torch.tensor(0.1))


def test_full_with_subclass_fill_is_a_plain_tensor():
    # a Scalar argument never dispatches __torch_function__: eager returns a plain tensor
    out = one_graph(lambda t: torch.full((2,), t), torch.tensor(5.0).as_subclass(Tagged))
    assert type(out) is torch.Tensor


@pytest.mark.parametrize("fill, dtype", [
    (torch.tensor(1e300, dtype=torch.float64), None),  # the default float32 cannot hold it
    (torch.tensor(300), torch.uint8),
])
def test_full_overflowing_raises_like_eager(fill, dtype):
    def f(t):
        return torch.full((2,), t, dtype=dtype)

    one_graph(f, torch.tensor(1, dtype=fill.dtype))
    # the graph's own conversion raises, and the frame reruns natively: eager's error
    check(f, fill, raises=RuntimeError)


def test_complex_fill_runs_natively():
    def f(t):
        return torch.full((2,), t)

    # FakeTensors cannot read a complex value: the call breaks and nothing is left to compile
    check(f, torch.tensor(1 + 2j), graphs=0, breaks=1, gb_types=["operator error at trace time"])


def test_full_with_a_tensor_that_is_no_scalar_raises_type_error():
    def f(t):
        return torch.full((2,), t)

    for bad in (torch.tensor([1.0]), torch.tensor(1.0, requires_grad=True)):
        with pytest.raises(TypeError):
            f(bad)
        with pytest.raises(TypeError):
            bytegraph.compile(f, backend="eager")(bad)


@pytest.mark.parametrize("method", ["addcmul_", "addcdiv_", "addcmul", "addcdiv"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pointwise_value_tensor_matches_eager_bits(method, dtype):
    torch.manual_seed(0)
    x, y, z = (torch.rand(300, dtype=dtype) + 0.5 for _ in range(3))  # long enough for the vector kernel
    one_graph(lambda x, y, z, s: getattr(x, method)(y, z, value=s), x, y, z, torch.tensor(0.3))


def test_pointwise_value_promotes_like_eager():
    args = (torch.ones(3, dtype=torch.float64), torch.rand(3), torch.rand(3), torch.tensor(3))
    assert one_graph(lambda x, y, z, s: torch.addcmul(x, y, z, value=s), *args).dtype == torch.float64
    ints = (torch.arange(3), torch.arange(3), torch.arange(3), torch.tensor(4, dtype=torch.int32))
    one_graph(lambda x, y, z, s: x.addcmul_(y, z, value=s), *ints)


def test_pointwise_value_converted_like_eager():
    # eager truncates a float value for integer tensors; float16 kernels compute in float32
    one_graph(lambda x, s: x.addcmul(x, x, value=s), torch.arange(3), torch.tensor(0.5))
    one_graph(lambda x, s: x.addcmul(x, x, value=s), torch.rand(50).half(), torch.tensor(0.3))


@pytest.mark.parametrize("fn", [
    lambda x, t: torch.full_like(x, t),
    lambda x, t: x.new_full((2, 2), t),
    lambda x, t: torch.add(x, x, alpha=t),
    lambda x, t: x.clone().sub_(x * 2, alpha=t),
    lambda x, t: torch.nn.functional.elu(x, t),
    lambda x, t: torch.nn.functional.leaky_relu(x, t),
    lambda x, t: torch.nn.functional.threshold(x, t, 0.0),
    lambda x, t: torch.nn.functional.softplus(x, beta=t),
    lambda x, t: torch.linspace(0, t, 5),
    lambda x, t: torch._foreach_addcmul_([x.clone()], [x], [x], value=t),
    lambda x, t: torch._foreach_add([x], [x], alpha=t),
    lambda x, t: torch._foreach_pow([x.abs()], t),
], ids=["full_like", "new_full", "add_alpha", "sub_alpha_", "elu", "leaky_relu", "threshold", "softplus",
        "linspace", "foreach_addcmul_", "foreach_add_alpha", "foreach_pow"])
def test_scalar_parameters_of_other_operators(fn):
    torch.manual_seed(0)
    one_graph(fn, torch.randn(40), torch.tensor(0.25))


def test_scalar_checked_by_torch_python_stays_in_the_graph():
    # F.hardtanh is traced (docs/torch_policy.md): its `min_val > max_val` check on a 0-d tensor is
    # the graph's, and raises eager's ValueError; the binding torch._C._nn.hardtanh reads the scalar
    def f(x, lo):
        return torch.nn.functional.hardtanh(x, lo, 2.0)

    check(f, torch.randn(4), torch.tensor(-1.0), fullgraph=True)
    check(f, torch.randn(4), torch.tensor(3.0), raises=ValueError, fullgraph=True)


def test_pointwise_value_eager_rejects_raises_like_eager():
    def f(x, s):
        return x.addcdiv(x, x + 1, value=s)  # integer addcdiv

    for run in (f, bytegraph.compile(f, backend="eager")):
        with pytest.raises(RuntimeError, match="Integer division"):
            run(torch.arange(3), torch.tensor(2))


def test_foreach_pow_with_tensor_base():
    one_graph(lambda b, exps: torch._foreach_pow(b, exps), torch.tensor(0.8), [torch.tensor(3.4), torch.rand(5)])
    out = one_graph(lambda b, exps: torch._foreach_pow(b, exps), torch.tensor(2),
                    [torch.tensor(3.4), torch.arange(4)])
    assert [o.dtype for o in out] == [torch.float32, torch.int64]


def test_foreach_lerp_with_tensor_weight():
    def in_place(xs, ys, w):
        out = torch._foreach_lerp_(xs, ys, w)
        return out is xs, xs[0] * 1

    xs, ys = [torch.ones(2, 2) * 4.26, torch.rand(3) * 3.14], [torch.ones(2, 2), torch.rand(3)]
    one_graph(lambda xs, ys, w: torch._foreach_lerp(xs, ys, w), xs, ys, torch.tensor(0.7))
    assert one_graph(in_place, xs, ys, torch.tensor(0.5))[0] is True


def test_finding_scalar_reads_leaves_version_counters_alone():
    def f(x, t):
        x.add_(t)
        x.add_(x, alpha=t)
        return x._version

    check(f, torch.ones(3), torch.tensor(2.0), fullgraph=True)
