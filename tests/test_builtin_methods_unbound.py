"""Methods of builtin and library C types called unbound (``OrderedDict.update(od,
...)``, ``dict.__setitem__(sub, k, v)``, ``Counter.__setitem__`` which is dict's),
and the descriptors as values (stored, compared, passed, called); without an
instance of the type first, eager's TypeError."""
import collections

import pytest
import torch

from tests.helpers import check


class OD(collections.OrderedDict):
    pass


class D(dict):
    pass


class L(list):
    pass


class S(set):
    pass


class CountingSetItem(collections.Counter):
    def __setitem__(self, key, value):
        collections.Counter.__setitem__(self, key, value + 1)


def ones():
    return torch.ones(2)


CALLS = {
    "OrderedDict.update": lambda: (lambda od: (collections.OrderedDict.update(od, [("a", 1)], b=2), list(od.items())))(
        collections.OrderedDict()),
    "OrderedDict.update-sub": lambda: (lambda od: (collections.OrderedDict.update(od, a=1), list(od.items())))(OD()),
    "OD.update-through-sub": lambda: (lambda od: (OD.update(od, a=1), list(od.items())))(OD()),
    "dict.update-sub": lambda: (lambda d: (dict.update(d, {"a": 1}), dict.__setitem__(d, "b", 2), d))(D()),
    "list.append-sub": lambda: (lambda sub: (list.append(sub, 3), sub))(L()),
    "set.add-sub": lambda: (lambda sub: (set.add(sub, 3), sub))(S()),
    "Counter.__setitem__-is-dicts": lambda: sorted(CountingSetItem("abracadabra").items()),
    "dict.get-sub": lambda: dict.get(D(a=1), "a"),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_unbound_call_on_an_instance(name):
    call = CALLS[name]

    def f(x):
        return x + 1, call()

    check(f, ones(), fullgraph=True)


def test_descriptors_as_values():
    def f(x, d):
        get, contains = dict.__getitem__, dict.__contains__
        sub = D(b=2)
        return (x + 1, get(d, "a"), get(sub, "b"), contains(d, "a"), get is dict.__getitem__,
                get is dict.__contains__, collections.Counter.__getitem__ is dict.__getitem__)

    check(f, ones(), {"a": 1}, fullgraph=True)


WRONG_SELF = {
    "method-no-self": (lambda: collections.OrderedDict.update(), TypeError),
    "method-wrong-type": (lambda: dict.update(1, {}), TypeError),
    "method-wrong-type-list": (lambda: list.append((), 1), TypeError),
    "wrapper-no-self": (lambda: dict.__setitem__(), TypeError),
    "wrapper-wrong-type": (lambda: collections.OrderedDict.__setitem__({}, 1, 2), TypeError),
    "wrapper-init-no-self": (lambda: object.__init__(), TypeError),
}


@pytest.mark.parametrize("name", list(WRONG_SELF))
def test_without_an_instance_first_raises_eagers_type_error(name):
    call, exc = WRONG_SELF[name]

    def f(x):
        try:
            call()
        except exc as e:
            return x + 1, str(e)
        return x

    check(f, ones(), fullgraph=True)


def test_descriptors_stored_passed_and_mapped():
    def apply(fn, *args):
        return fn(*args)

    def f(x):
        ops = [dict.__getitem__, dict.get, list.append, set.add]
        d, sub, s = D(a=1), L(), set()
        ops[2](sub, 1)
        ops[3](s, 2)
        return (x + 1, ops[0](d, "a"), ops[1](d, "b", 3), sub, s, ops[0] == dict.__getitem__, ops[1] is dict.get,
                list(map(str.upper, ["a", "b"])), sorted(["B", "a"], key=str.lower), list(map(dict.__len__, [{1: 2}, D()])),
                apply(dict.__contains__, D(a=1), "a"), apply(object.__init__, L()), apply(int.__add__, 1, 2),
                repr(dict.__getitem__), str(list.append), dict.__getitem__.__name__)

    check(f, ones(), fullgraph=True)
