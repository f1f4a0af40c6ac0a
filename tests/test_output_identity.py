"""Outputs that are two tensor objects in eager stay two objects compiled,
whatever the backend returns: inductor hands back one object for ``t`` and a
view of ``t`` that changes nothing (``t.view(t.shape)``, ``t.t().t()``), and
code that tests ``is``, keeps one in a dict by identity or sets an attribute
on it would see the difference. The later output becomes a view of the
earlier one (same storage, shape and strides; a new object), only for the
pairs the backend merged. Outputs that are one object in eager
(``t.contiguous()``, ``t.float()`` of a float tensor) stay one."""
import pytest
import torch

import bytegraph
from tests.helpers import check


def merging_backend(gm: torch.fx.GraphModule, example_inputs: list):
    """Runs the graph as traced, then returns one object for outputs that are
    the same view of the same memory, as inductor does."""
    def run(*args):
        result = list(gm(*args))
        for j, out in enumerate(result):
            for earlier in result[:j]:
                if (isinstance(out, torch.Tensor) and isinstance(earlier, torch.Tensor)
                        and out.untyped_storage().data_ptr() == earlier.untyped_storage().data_ptr()
                        and (out.shape, out.stride(), out.storage_offset())
                        == (earlier.shape, earlier.stride(), earlier.storage_offset())):
                    result[j] = earlier
                    break
        return result
    return run


#: a tensor t made in the graph -> outputs of which some are views of t that change nothing
SIBLINGS = {
    "view": lambda t: (t, t.view(t.shape)),
    "reshape": lambda t: (t, t.reshape(t.shape)),
    "transpose twice": lambda t: (t, t.transpose(0, 1).transpose(0, 1)),
    "t().t()": lambda t: (t, t.t().t()),
    "full slice": lambda t: (t, t[:]),
    "ellipsis": lambda t: (t, t[...]),
    "expand_as": lambda t: (t, t.expand_as(t)),
    "view_as": lambda t: (t, t.view_as(t)),
    "narrow all": lambda t: (t, t.narrow(0, 0, t.shape[0])),
    "permute identity": lambda t: (t, t.permute(0, 1)),
    "aten.alias": lambda t: (t, torch.ops.aten.alias(t)),
    "three outputs": lambda t: (t, t.view(t.shape), t.t().t()),
    "the view first": lambda t: (t.view(t.shape), t),
    "two views": lambda t: (t.view(t.shape), t.reshape(t.shape)),
    "nested in a dict": lambda t: {"a": t, "b": [t[:]]},
    # one object in eager: stays one
    "contiguous": lambda t: (t, t.contiguous()),
    "to the same dtype": lambda t: (t, t.to(torch.float32)),
    "float of a float": lambda t: (t, t.float()),
    "the same tensor twice": lambda t: (t, t),
}


@pytest.mark.parametrize("case", list(SIBLINGS))
@pytest.mark.parametrize("backend", [merging_backend, "aot_eager"])
def test_outputs_are_the_objects_eager_returns(case, backend):
    def f(x):
        return SIBLINGS[case](torch.tanh(x) * 2)

    check(f, make=lambda: (torch.randn(3, 4),), backend=backend)


@pytest.mark.parametrize("case", ["view", "transpose twice", "contiguous"])
def test_on_inductor_too(case):
    def f(x):
        return SIBLINGS[case](torch.tanh(x) * 2)

    check(f, make=lambda: (torch.randn(3, 4),), backend="inductor", atol=1e-5)


def test_every_call_separates_them_not_only_the_first():
    def f(x):
        t = x.sin()
        return t, t.view(t.shape)

    check(f, calls=[lambda: (torch.randn(3, 4),)] * 3, backend=merging_backend)


def test_a_write_through_the_separated_output_is_seen_by_the_other():
    def f(x):
        t = x.cos()
        return t, t.t().t()

    def run(fn):
        a, b = fn(torch.ones(2, 2))
        b.add_(1)
        b.label = "b"
        return a, hasattr(a, "label"), a is b

    got = run(bytegraph.compile(f, backend=merging_backend))
    expected = run(f)
    assert got[1:] == expected[1:] == (False, False)
    torch.testing.assert_close(got[0], expected[0])


@pytest.mark.parametrize("case", ["view", "full slice", "the same tensor twice"])
def test_views_of_an_input_and_the_input_itself(case):
    def f(x):
        x.mul_(2)
        return (x, *SIBLINGS[case](x))

    check(f, make=lambda: (torch.randn(3, 4),), backend=merging_backend)


def test_outputs_that_require_grad():
    def f(x):
        t = x.exp()
        return t, t.view(t.shape)

    check(f, make=lambda: (torch.randn(3, 4, requires_grad=True),), backend="aot_eager", backward=True)
