"""Outputs that eager returns as distinct views of one memory stay so,
whatever the backend returns. Inductor hands back one object for ``t`` and a
view of ``t`` that changes nothing (``t.view(t.shape)``, ``t.t().t()``): the
later output becomes a view of the earlier one (same storage, shape and
strides; a new object). It hands back the pieces of ``torch.split(t, ...)``
of a ``t`` it does not return as buffers of their own: they are copied into
one storage at eager's layout (strides and offsets), so a write through one
is seen through another where eager's overlap. Outputs that are one object
in eager (``t.contiguous()``, ``t.float()`` of a float tensor) stay one."""
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


def materializing_backend(gm: torch.fx.GraphModule, example_inputs: list):
    """Runs the graph as traced, then returns each output that is not a view
    of an input as a contiguous buffer of its own, as inductor does for views
    of a tensor it does not return."""
    def run(*args):
        inputs = {a.untyped_storage().data_ptr() for a in args if isinstance(a, torch.Tensor)}
        return [out.clone(memory_format=torch.contiguous_format)
                if isinstance(out, torch.Tensor) and out.untyped_storage().data_ptr() not in inputs else out
                for out in gm(*args)]
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
    "split": lambda t: torch.split(t, [1, 2], dim=0),
    "chunk": lambda t: t.chunk(2, dim=1),
    "unbind": lambda t: t.unbind(1),
    "rows": lambda t: (t[0], t[2]),
    "the tensor and a row": lambda t: (t, t[1]),
    "a transposed view and a column": lambda t: (t.t(), t[:, 1]),
    # one object in eager: stays one
    "contiguous": lambda t: (t, t.contiguous()),
    "to the same dtype": lambda t: (t, t.to(torch.float32)),
    "float of a float": lambda t: (t, t.float()),
    "the same tensor twice": lambda t: (t, t),
}


@pytest.mark.parametrize("case", list(SIBLINGS))
@pytest.mark.parametrize("backend", [merging_backend, materializing_backend, "aot_eager"])
def test_outputs_are_the_objects_eager_returns(case, backend):
    def f(x):
        return SIBLINGS[case](torch.tanh(x) * 2)

    check(f, make=lambda: (torch.randn(3, 4),), backend=backend)


@pytest.mark.parametrize("case", ["view", "transpose twice", "contiguous", "split", "the tensor and a row"])
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


def test_pieces_of_a_transposed_intermediate_keep_eagers_strides_on_inductor():
    """(fuzz seeds 3100743, 3100888) ``x * 1`` of a transposed ``x`` keeps its
    strides in eager; the pieces of its split overlap in memory."""
    def f(x):
        t = x * 1
        pieces = torch.split(t, [1, 2], dim=0)
        return torch.nn.functional.gelu(t, approximate="tanh"), pieces

    check(f, calls=[lambda: (torch.randn(4, 3).t(),)] * 2, backend="inductor", atol=1e-5)


def test_a_write_through_a_rebuilt_piece_is_seen_through_the_others():
    def f(x):
        t = x.exp()
        return t, t[1], t[:, 0]

    def run(fn):
        whole, row, column = fn(torch.zeros(3, 3))
        row.fill_(5)
        return whole, column

    got = run(bytegraph.compile(f, backend=materializing_backend))
    expected = run(f)
    for a, e in zip(got, expected):
        torch.testing.assert_close(a, e)


def test_views_of_an_input_are_not_rebuilt():
    def f(x):
        x.add_(1)
        return x[0], x[1:]

    check(f, make=lambda: (torch.randn(3, 4),), backend=materializing_backend)
