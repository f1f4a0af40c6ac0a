"""Sets and dicts whose members are objects hashed by identity (tensors,
parameters, modules): CPython finds them by ``id()`` (a tensor's hash), never
by ``==``; a list's ``in`` compares identity first, then ``==``. Each test
compares with eager and counts graphs (and breaks)."""
import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same
from tests.helpers import check

P = torch.nn.Parameter(torch.ones(3, 3))


def test_set_of_a_tensor_and_its_in_place_result_has_one_member():
    def f(x):
        y = x.mul_(2)  # the same object as x
        s = {x}
        s.add(y)
        s.add(x + 1)  # a new object
        return len(s), y in s, (x - 1) in s

    assert check(f, torch.randn(4), fullgraph=True) == (2, True, False)


def test_frozenset_of_a_constant_and_a_tensor_is_rebuilt_after_the_graph():
    def f(x):
        s = frozenset([1, x])
        return x + 1, s, frozenset(s)

    _, s, t = check(f, torch.randn(4), fullgraph=True)  # check pairs the input in s with the compiled side's x
    assert type(s) is frozenset and len(s) == 2 and 1 in s and t == s


def test_membership_of_two_inputs_is_guarded_on_their_aliasing():
    def f(a, b):
        a.add_(1)
        return a in set([b]), b in {a, 2}

    a = torch.zeros(5)  # one object passed twice: not the traced case, a recompile
    assert check(f, calls=[(a, torch.zeros(5, 2)), (a, a)], fullgraph=True, graphs=2) == (True, True)


def test_set_methods_on_identity_members():
    def f(x, y):
        s = {x, "k"}
        s.discard(y)
        u = s | {y}
        d = u - {x}
        s.update([y, y])
        return len(s), len(u), len(d), y in d, x in d, s.issuperset({x}), s.isdisjoint(d)

    check(f, torch.ones(2), torch.ones(2), fullgraph=True, graphs=0)  # no tensor work: nothing to compile


def test_removing_a_missing_tensor_raises_eagers_key_error():
    def f(x, y):
        s = {x}
        s.remove(y)
        return x + 1

    check(f, torch.ones(2), torch.ones(2), raises=KeyError, graphs=0, breaks=1, gb_types=["user error"])


def test_iterating_a_set_of_tensors_breaks_its_order_is_runtime_ids():
    def f(x, y):
        total = x * 0
        for t in {x, y}:
            total = total + t
        return total

    x, y = torch.randn(3), torch.randn(3)  # (the sum of two is the same in either order)
    # each step of the native set iterator breaks; the steps after the first resume in one resume function
    check(f, x, y, graphs=2, breaks=3,
          gb_types=["set order of identity-hashed members"] + ["unsupported iteration"] * 2)
    with pytest.raises(bytegraph.breaks.Unsupported):
        bytegraph.compile(f, fullgraph=True)(x, y)


def test_set_of_modules():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(2, 2), torch.nn.ReLU()

        def forward(self, x):
            frozen = {self.a, "note"}
            for m in (self.a, self.b):
                x = m(x) if m not in frozen else m(x).detach()
            return x

    m = M()
    x = torch.randn(3, 2)
    cnt = CompileCounter()
    out = bytegraph.compile(m, backend=cnt, fullgraph=True)(x)
    assert same(out, m(x)) and out.requires_grad == m(x).requires_grad
    assert cnt.frame_count == 1


def test_dict_keyed_by_a_parameter_and_by_a_computed_tensor():
    def f(a):
        b = a * 2
        d = {"a": a, P: 3, b: 4}
        return d["a"] + d[P] + d[b], P in d, (a + 0) in d

    assert check(f, torch.randn(3, 3), fullgraph=True)[1:] == (True, False)


def test_list_membership_compares_identity_first_then_eq():
    def found_by_identity(x):
        return x in [x, 5]

    assert check(found_by_identity, torch.ones(1), fullgraph=True, graphs=0) is True

    def needs_eq(x):  # 1 == x is a tensor, whose bool is the answer: data-dependent
        return (1 in [x]), x + 1

    for value in (1.0, 2.0):  # the truth of the comparison is a data-dependent break
        check(needs_eq, torch.tensor([value]), breaks=1, gb_types=["data-dependent branching"])
    with pytest.raises(bytegraph.breaks.Unsupported):
        bytegraph.compile(needs_eq, fullgraph=True)(torch.ones(1))
