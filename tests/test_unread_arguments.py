"""Scalar arguments the compiled frame never reads guard nothing.

An immutable scalar argument (int, float, bool, complex, str, bytes, None) is
wrapped and guarded when the frame's code first reads it. One the code never
reads (a training step's ``batch_idx``) cannot change what the graph computes,
so a new value reuses the compiled entry, as with torch.compile; one that is
read is guarded as before, and one handed on at a graph break reaches the
resume function as it came.
"""
import pytest
import torch

from tests.helpers import check

VALUES = {
    "int": (0, 1, 7),
    "float": (0.5, 1.5, -2.0),
    "bool": (False, True, False),
    "complex": (1j, 2 + 0j, -1j),
    "str": ("a", "b", "c"),
    "bytes": (b"a", b"b", b"c"),
    "none_then_int": (None, 3, None),
}


def calls_with(values):
    return [(lambda v=v: (torch.ones(3), v)) for v in values]


@pytest.mark.parametrize("kind", VALUES)
def test_an_unread_scalar_argument_reuses_the_graph(kind):
    def step(x, unused):
        return x * 2

    check(step, calls=calls_with(VALUES[kind]), graphs=1)


@pytest.mark.parametrize("kind, graphs", [("bool", 2), ("str", 3)])
def test_a_read_scalar_argument_is_still_guarded(kind, graphs):
    def step(x, used):
        return x * 2 if used == VALUES[kind][1] else x - 1  # the value decides the branch

    check(step, calls=calls_with(VALUES[kind]), graphs=graphs)


def test_an_int_used_in_arithmetic_recompiles_as_before():
    def step(x, n):
        return x + n

    # a new value recompiles (automatic dynamic then makes n symbolic): 2 graphs for 3 values
    check(step, calls=calls_with((1, 2, 3)), graphs=2)


def test_keyword_only_and_defaulted_arguments():
    def step(x, idx=0, *, tag="train"):
        return x.sin()

    check(step, calls=[lambda: (torch.ones(2), 1), lambda: (torch.ones(2), 2)], kwargs={"tag": "eval"}, graphs=1)


def test_an_unread_argument_handed_on_at_a_graph_break_is_read_after_it():
    def step(x, idx):
        y = x * 2
        print("", end="")  # a graph break: idx goes to the resume function unread
        return y + idx

    check(step, calls=calls_with((1, 2)), graphs=3, breaks=1, gb_types=["print"])


def test_locals_reads_every_argument():
    def step(x, idx):
        return x + len(locals()), locals()["idx"]

    check(step, calls=calls_with((1, 2)), graphs=2)


def test_an_argument_read_only_by_a_closure():
    def step(x, idx):
        def inner():
            return idx

        return x * 2, inner()

    check(step, calls=calls_with((1, 2)), graphs=2)


def test_an_argument_read_by_a_comprehension_and_deleted():
    def step(x, idx):
        ys = [x * k for k in (idx, idx)]
        del idx
        return ys

    check(step, calls=calls_with((1, 2)), graphs=2)


def test_an_unread_argument_reassigned():
    def step(x, idx):
        idx = 5
        return x + idx

    check(step, calls=calls_with((1, 2, 3)), graphs=1)
