"""Wrong calls of the builtin containers raise what eager raises (type and
message), caught by the traced ``try``: bad default factories, too many
arguments, iterating what is not iterable (CPython suite kind K13). Each case
is compiled whole (``fullgraph=True``) and compared with eager."""
import collections

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same

CASES = {
    "defaultdict of a dict": lambda: collections.defaultdict({}),  # was accepted: silently wrong
    "defaultdict of an int": lambda: collections.defaultdict(1),
    "defaultdict of a class": lambda: collections.defaultdict(list, a=1)["b"],
    "defaultdict of a lambda": lambda: collections.defaultdict(lambda: 3)["b"],
    "defaultdict of None": lambda: collections.defaultdict(None, [(1, 2)]),
    "defaultdict of two mappings": lambda: collections.defaultdict(list, {}, {}),
    "dict.update of two": lambda: {}.update({}, {}),  # was accepted: silently wrong
    "OrderedDict.update of two": lambda: collections.OrderedDict().update([("a", 1)], None),
    "defaultdict.update of two": lambda: collections.defaultdict(int).update({}, {}),
    "dict of two": lambda: dict({}, {}),
    "OrderedDict of two": lambda: collections.OrderedDict(1, 2),
    "dict of an int": lambda: dict(1),
    "set.update of an int": lambda: set().update(1),
    "list.extend of None": lambda: [].extend(None),
    "tuple of an int": lambda: tuple(1),
    "frozenset of a float": lambda: frozenset(1.5),
    "deque of an int": lambda: collections.deque(1),
    "deque of a negative maxlen": lambda: collections.deque(maxlen=-1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_wrong_container_calls_raise_eagers_error(name):
    call = CASES[name]

    def f(x):
        try:
            result = call()
        except (TypeError, ValueError, KeyError) as e:
            return x + 1, type(e).__name__, str(e)
        return x * 2, result

    cnt = CompileCounter()
    actual = bytegraph.compile(f, backend=cnt, fullgraph=True)(torch.ones(1))
    expected = f(torch.ones(1))
    assert same(actual[0], expected[0]) and actual[1:] == expected[1:], f"{actual} != {expected}"
    assert cnt.frame_count == 1
