"""Binary operators ask a right operand whose type is a proper subclass of the
left's first when it overrides the reflected method (``ChainMap() | Sub()``
with ``Sub.__ror__``); comparisons ask the subclass's own method first. The
order shows in the result and in which methods ran."""
import collections
import operator

import pytest
import torch

from tests.helpers import check

#: (base, a left operand, the operator, its reflected dunder)
CASES = [
    (collections.ChainMap, collections.ChainMap, operator.or_, "__ror__"),
    (dict, dict, operator.or_, "__ror__"),
    (collections.OrderedDict, collections.OrderedDict, operator.or_, "__ror__"),
    (set, set, operator.and_, "__rand__"),
    (set, set, operator.sub, "__rsub__"),
    (frozenset, frozenset, operator.xor, "__rxor__"),
    (list, list, operator.add, "__radd__"),
    (tuple, tuple, operator.add, "__radd__"),
    (int, lambda: 3, operator.add, "__radd__"),
    (float, lambda: 2.0, operator.mul, "__rmul__"),
    (str, lambda: "a", operator.add, "__radd__"),
]


@pytest.mark.parametrize("base,left,op,name", CASES, ids=[f"{c[0].__name__}-{c[3]}" for c in CASES])
def test_subclass_reflected_method_runs_first(base, left, op, name):
    sub = type("Sub", (base,), {name: lambda self, other: ("reflected", type(other).__name__)})

    def f(x):
        return x + 1, op(left(), sub())

    check(f, torch.ones(2), fullgraph=True)


def test_reflected_declining_falls_back_to_the_left_operand():
    class Sub(collections.ChainMap):
        def __ror__(self, other):
            return NotImplemented

    def f(x):
        return x + 1, type(collections.ChainMap({"a": 1}) | Sub({"b": 2})).__name__

    check(f, torch.ones(2), fullgraph=True)


def test_comparisons_ask_the_subclass_first():
    def f(x):
        log = []

        class A:
            def __eq__(self, other):
                log.append("A")
                return NotImplemented

        class B(A):
            def __eq__(self, other):
                log.append("B")
                return NotImplemented

        class C(A):
            pass

        return x + 1, A() == B(), A() == C(), B() == A(), log

    check(f, torch.ones(2), fullgraph=True)
