"""defaultdicts, dicts keyed by objects, and user subclasses of the builtin
containers, traced whole (``fullgraph=True``) and compared with eager (issue 17)."""
import collections

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same
from helpers import t


def full(fn, *args, graphs=1):
    """Run ``fn`` eagerly, then compiled whole on the same arguments; assert the
    same result and the number of graphs; return the compiled result."""
    expected = fn(*args)
    cnt = CompileCounter()
    actual = bytegraph.compile(fn, backend=cnt, fullgraph=True)(*args)
    assert same(actual, expected), f"compiled {actual!r} != eager {expected!r}"
    assert cnt.frame_count == graphs, f"expected {graphs} graph(s), got {cnt.frame_count}"
    return actual


# ---- defaultdict ---------------------------------------------------------------------------

@pytest.mark.parametrize("factory", [list, set, dict, tuple, lambda: [0]], ids=["list", "set", "dict", "tuple", "lambda"])
def test_defaultdict_keyed_by_a_parameter_is_mutated_in_place(factory):
    weight = torch.nn.Parameter(torch.ones(2))

    def make():
        d = collections.defaultdict(factory)
        d["a"], d[weight] = 1, 2
        return d

    def fn(d, x):
        d["a"] = x + 1
        d[weight] = d[weight] + 1
        return x * 2, d["missing"]

    eager_d, compiled_d = make(), make()
    x = t(3)
    expected = fn(eager_d, x)
    cnt = CompileCounter()
    actual = bytegraph.compile(fn, backend=cnt, fullgraph=True)(compiled_d, x)
    assert same(actual, expected) and cnt.frame_count == 1
    assert list(compiled_d) == list(eager_d) == ["a", weight, "missing"]
    assert same(compiled_d["a"], eager_d["a"]) and compiled_d[weight] == eager_d[weight] == 3


def test_dict_keyed_by_a_tensor_guards_the_key_by_identity():
    def fn(d, x):
        return sum(k.sum() * v for k, v in d.items() if isinstance(k, torch.Tensor)) + x * d["s"]

    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt)
    keys = [t(2), t(2)]
    x = t(1)
    d = {keys[0]: 2, "s": 0}
    assert same(compiled(d, x), fn(d, x))
    other = {keys[1]: 2, "s": 0}  # an equal-shaped but different tensor key: a recompile, not a stale answer
    assert same(compiled(other, x), fn(other, x))
    assert cnt.frame_count == 2


def test_defaultdict_made_in_the_trace_and_filled_through_a_closure():
    def fn(x):
        groups = collections.defaultdict(list)

        def add(key, value):
            groups[key].append(value)

        add("a", x)
        add("a", x + 1)
        add("b", 3)
        return groups, groups.default_factory, len(groups["a"])

    full(fn, t(2))


def test_default_factory_of_a_captured_defaultdict():
    table = collections.defaultdict(lambda: 5, z=1)

    def fn(x):
        factory = table.default_factory
        return x + table["q"] + factory()

    full(fn, t(2))
    assert dict(table) == {"z": 1, "q": 5}


class Tally(collections.defaultdict):
    def total(self):
        return sum(self.values())


def test_defaultdict_subclass_attributes_are_no_custom_getattribute():
    tally = Tally(int, a=1, b=2)

    def fn(x):
        return x * tally.total(), tally.default_factory

    full(fn, t(2))
