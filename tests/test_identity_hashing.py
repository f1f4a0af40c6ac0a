"""Sets and dicts whose members are objects hashed by identity (tensors,
parameters, modules): CPython finds them by ``id()`` (a tensor's hash), never
by ``==``; a list's ``in`` compares identity first, then ``==``. Each test
compares with eager and counts graphs (and breaks)."""
import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same

P = torch.nn.Parameter(torch.ones(3, 3))


def compiled(fn, **kwargs):
    cnt = CompileCounter()
    return bytegraph.compile(fn, backend=cnt, **kwargs), cnt


def test_set_of_a_tensor_and_its_in_place_result_has_one_member():
    def f(x):
        y = x.mul_(2)  # the same object as x
        s = {x}
        s.add(y)
        s.add(x + 1)  # a new object
        return len(s), y in s, (x - 1) in s

    opt, cnt = compiled(f, fullgraph=True)
    assert opt(torch.randn(4)) == f(torch.randn(4)) == (2, True, False)
    assert cnt.frame_count == 1


def test_frozenset_of_a_constant_and_a_tensor_is_rebuilt_after_the_graph():
    def f(x):
        s = frozenset([1, x])
        return x + 1, s, frozenset(s)

    x = torch.randn(4)
    opt, cnt = compiled(f, fullgraph=True)
    out, s, t = opt(x)
    expected, es, et = f(x)
    assert same(out, expected)
    assert type(s) is frozenset and len(s) == len(es) == 2 and 1 in s and x in s
    assert t == s
    assert cnt.frame_count == 1


def test_membership_of_two_inputs_is_guarded_on_their_aliasing():
    def f(a, b):
        a.add_(1)
        return a in set([b]), b in {a, 2}

    a, b = torch.zeros(5), torch.zeros(5, 2)
    opt, cnt = compiled(f, fullgraph=True)
    assert opt(a, b) == f(a.clone(), b.clone()) == (False, False)
    assert cnt.frame_count == 1
    assert opt(a, a) == f(a, a) == (True, True)  # one object passed twice: not the traced case
    assert cnt.frame_count == 2


def test_set_methods_on_identity_members():
    def f(x, y):
        s = {x, "k"}
        s.discard(y)
        u = s | {y}
        d = u - {x}
        s.update([y, y])
        return len(s), len(u), len(d), y in d, x in d, s.issuperset({x}), s.isdisjoint(d)

    opt, cnt = compiled(f, fullgraph=True)
    assert opt(torch.ones(2), torch.ones(2)) == f(torch.ones(2), torch.ones(2))
    assert cnt.frame_count == 0  # no tensor work: nothing to compile


def test_removing_a_missing_tensor_raises_eagers_key_error():
    def f(x, y):
        s = {x}
        s.remove(y)
        return x + 1

    opt, _ = compiled(f)
    with pytest.raises(KeyError) as eager:
        f(torch.ones(2), torch.ones(2))
    with pytest.raises(KeyError) as ours:
        opt(torch.ones(2), torch.ones(2))
    assert type(ours.value) is type(eager.value)


def test_iterating_a_set_of_tensors_breaks_its_order_is_runtime_ids():
    def f(x, y):
        total = x * 0
        for t in {x, y}:
            total = total + t
        return total

    x, y = torch.randn(3), torch.randn(3)
    with bytegraph.runtime.metrics.recording() as rec:
        opt, _ = compiled(f)
        assert same(opt(x, y), f(x, y))
    assert rec.breaks[0].gb_type == "set order of identity-hashed members"
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

    opt, cnt = compiled(f, fullgraph=True)
    a = torch.randn(3, 3)
    out, has_p, has_new = opt(a)
    e_out, e_p, e_new = f(a)
    assert same(out, e_out) and (has_p, has_new) == (e_p, e_new) == (True, False)
    assert cnt.frame_count == 1


def test_list_membership_compares_identity_first_then_eq():
    def found_by_identity(x):
        return x in [x, 5]

    opt, cnt = compiled(found_by_identity, fullgraph=True)
    assert opt(torch.ones(1)) is True
    assert cnt.frame_count == 0

    def needs_eq(x):  # 1 == x is a tensor, whose bool is the answer: data-dependent
        return (1 in [x]), x + 1

    for value in (1.0, 2.0):
        x = torch.tensor([value])
        with bytegraph.runtime.metrics.recording() as rec:
            opt, _ = compiled(needs_eq)
            found, out = opt(x)
        e_found, e_out = needs_eq(x)
        assert found == e_found and same(out, e_out)
        assert len(rec.breaks) >= 1
    with pytest.raises(bytegraph.breaks.Unsupported):
        bytegraph.compile(needs_eq, fullgraph=True)(torch.ones(1))
