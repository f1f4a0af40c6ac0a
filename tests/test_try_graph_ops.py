"""Graph operations inside ``try`` statements stay in the graph: tracing
follows the path on which nothing raises, and a graph that raises at run time
(an index out of range, a failed factorisation) makes the frame rerun
natively, where the user's ``except``/``else``/``finally`` clauses run as in
eager. Each test runs the normal path and the raising path, compiled whole,
and compares with eager (results, exceptions, side effects, written inputs)."""
import pytest
import torch

from tests.helpers import check


IN_RANGE, OUT_OF_RANGE = torch.tensor([0, 1, 1]), torch.tensor([0, 1, 9])


def test_index_op_in_try_reraises_as_the_library_does():
    def f(x, index):  # PyG's aggregation: re-raise with a clearer error
        try:
            y = torch.zeros(4, 2).index_add(0, index, x)
        except (IndexError, RuntimeError) as e:
            raise ValueError("bad index") from e
        return y + 1

    check(f, torch.ones(3, 2), IN_RANGE, fullgraph=True)
    # the raising call traces the path on which nothing raises, then reruns natively: eager's ValueError
    check(f, torch.ones(3, 2), OUT_OF_RANGE, fullgraph=True, raises=ValueError)


def test_handler_result_replaces_the_graph_result():
    def f(x, index):
        try:
            y = x[index] * 2
        except IndexError:
            y = x.sum().reshape(1) - 1
        return y.cos()

    x = torch.randn(4)
    check(f, calls=[(x, IN_RANGE), (x, OUT_OF_RANGE)], fullgraph=True, reruns=1)  # the handler runs natively


def test_try_except_else_finally_run_in_eager_order():
    def f(x, index, log):
        try:
            log.append("try")
            y = x.index_select(0, index)
        except IndexError:
            log.append("except")
            y = x
        else:
            log.append("else")
            y = y + 1
        finally:
            log.append("finally")
        return y * 2, list(log)

    x = torch.randn(4)
    for index in (IN_RANGE, OUT_OF_RANGE):
        check(f, x, index, [], fullgraph=True, reruns=int(index is OUT_OF_RANGE))  # the log: written alike


def test_nested_try_outer_clause_catches_what_the_inner_does_not():
    def f(x, index, d):
        try:
            try:
                y = x[index] * d["scale"]
            except KeyError:
                y = x[index]
        except IndexError:
            y = -x
        return y + 1

    x = torch.arange(4.0)
    # two graphs: the traced KeyError path (an empty dict) is a guard of its own
    check(f, calls=[(x, IN_RANGE, {"scale": 3.0}), (x, IN_RANGE, {}), (x, OUT_OF_RANGE, {"scale": 3.0}),
                    (x, OUT_OF_RANGE, {})], graphs=2, fullgraph=True, reruns=2)


def test_clause_that_cannot_catch_lets_eager_exception_through():
    def f(x, index):
        try:
            y = x[index] + 1
        except KeyError:
            y = x
        return y

    check(f, torch.randn(4), IN_RANGE, fullgraph=True)
    check(f, torch.randn(4), OUT_OF_RANGE, fullgraph=True, raises=IndexError)


def test_with_block_inside_try_leaves_grad_mode_as_eager():
    def f(x, index):
        try:
            with torch.no_grad():
                y = x[index] * 2
        except IndexError:
            y = x.detach() * 0
        return y, torch.is_grad_enabled()

    x = torch.randn(4, requires_grad=True)
    check(f, calls=[(x, IN_RANGE), (x, OUT_OF_RANGE)], fullgraph=True, reruns=1)
    assert torch.is_grad_enabled()


def test_inputs_written_before_the_raise_are_written_once():
    def f(x, index, log):
        x.add_(1)
        log.append(x.sum())
        try:
            y = x[index]
        except IndexError:
            y = x * 10
        return y

    for index in (IN_RANGE, OUT_OF_RANGE):  # x and the log compared as each side left them
        check(f, torch.zeros(4), index, [], fullgraph=True, reruns=int(index is OUT_OF_RANGE))


def test_failed_factorisation_in_try_runs_the_handler():
    def f(a):
        try:
            return torch.linalg.cholesky(a).sum()
        except torch.linalg.LinAlgError:
            return a.diagonal().sum() * 0 - 1

    check(f, calls=[(torch.eye(3) * 2,), (-torch.eye(3),)], fullgraph=True, reruns=1)


class Aggregation(torch.nn.Module):
    """A module whose own method wraps its scatter in try/except (as PyG's ``Aggregation.__call__``)."""

    def reduce(self, x, index):
        return torch.zeros(4, x.shape[1]).index_add(0, index, x)

    def forward(self, x, index):
        try:
            return self.reduce(x, index)
        except (IndexError, RuntimeError) as e:
            if index.numel() > 0 and int(index.max()) >= 4:
                raise ValueError("index out of range for 4 nodes") from e
            raise


def test_try_in_an_inlined_module_method():
    agg = Aggregation()

    def f(x, index):
        return agg(x, index).relu() + 1

    x = torch.randn(3, 2)
    check(f, x, IN_RANGE, fullgraph=True)
    check(f, x, OUT_OF_RANGE, fullgraph=True, raises=ValueError)


@pytest.mark.parametrize("clause", ["Exception", "LookupError", "(KeyError, IndexError)", ""])
def test_every_clause_that_catches_runs_its_handler(clause):
    namespace = {}
    exec(
        "def f(x, i):\n"
        "    try:\n"
        "        y = x[i].sin()\n"
        f"    except {clause}:\n"
        "        y = x * 0\n"
        "    return y\n",
        namespace,
    )
    x = torch.randn(4)
    check(namespace["f"], calls=[(x, IN_RANGE), (x, OUT_OF_RANGE)], fullgraph=True, reruns=1)
