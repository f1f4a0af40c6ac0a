"""Wrong calls of the builtin containers raise what eager raises (type and
message), caught by the traced ``try``: bad default factories, too many
arguments, iterating what is not iterable (CPython suite kind K13). Each case
is compiled whole (``fullgraph=True``) and compared with eager."""
import collections

import pytest
import torch

from tests.helpers import check

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


def caught(call):
    """A function that runs ``call`` under a traced ``try`` and returns what it
    raised (type and message) or its result."""
    def f(x):
        try:
            result = call()
        except (TypeError, ValueError, KeyError, RuntimeError) as e:
            return x + 1, type(e).__name__, str(e)
        return x * 2, result

    return f


@pytest.mark.parametrize("name", list(CASES))
def test_wrong_container_calls_raise_eagers_error(name):
    check(caught(CASES[name]), torch.ones(1), fullgraph=True)


# ---- errors the container raises itself: changed during iteration, unhashable keys (K16) -----

def _grow_while_iterating(make, view):
    def run():
        d = make()
        for k in view(d):
            d[len(d) + 10] = 0
    return run


def _grow_set():
    s = {1, 2}
    for item in s:
        s.add(item + 10)


def _shrink_dict_then_step_again():
    d = {1: 1, 2: 2}
    it = iter(d)
    next(it)
    del d[2]
    try:
        next(it)
    except RuntimeError:
        pass
    return next(it)  # still raises: the iterator's error is sticky


RAISED_BY_THE_CONTAINER = {
    "dict": _grow_while_iterating(lambda: {1: 1}, lambda d: d),
    "dict.keys()": _grow_while_iterating(lambda: {1: 1}, lambda d: d.keys()),
    "dict.values()": _grow_while_iterating(lambda: {1: 1}, lambda d: d.values()),
    "dict.items()": _grow_while_iterating(lambda: {1: 1}, lambda d: d.items()),
    "defaultdict": _grow_while_iterating(lambda: collections.defaultdict(int, a=1), lambda d: d),
    "set": _grow_set,
    "dict, sticky": _shrink_dict_then_step_again,
    "unhashable dict key": lambda: {[1]: 2},
    "unhashable store": lambda: {}.__setitem__({}, 1),
    "unhashable get": lambda: {}.get([1]),
    "unhashable in dict": lambda: [1] in {1: 2},
    "unhashable set member": lambda: {1, 2}.add([3]),
    "unhashable frozenset member": lambda: frozenset([[1]]),
    "unhashable in set": lambda: {1} in {frozenset(), 2},
}


ORDERED_CHANGES = {
    "key added": lambda d, k: d.__setitem__(len(d) + 10, 0),
    "key deleted": lambda d, k: d.__delitem__(k),
    "key moved": lambda d, k: d.move_to_end(k),
    "key popped": lambda d, k: d.popitem(last=False),
    "value replaced": lambda d, k: d.__setitem__(k, 5),
}


@pytest.mark.parametrize("change", list(ORDERED_CHANGES))
@pytest.mark.parametrize("size", [1, 3])
def test_an_ordered_dict_changed_while_iterated_raises_eagers_error(change, size):
    """A C OrderedDict's iterator: "mutated during iteration" at the step after a
    key is added, deleted or moved, unless it already returned the last key
    (one key: the loop ends first); replacing a value is no change."""
    def f(x, d):
        seen = []
        try:
            for k in d:
                seen.append(k)
                ORDERED_CHANGES[change](d, k)
        except RuntimeError as e:
            return x + 1, str(e), seen, list(d.items())
        return x * 2, seen, list(d.items())

    check(f, torch.ones(1), collections.OrderedDict.fromkeys(range(size)), fullgraph=True)


def test_an_ordered_dict_cleared_while_iterated_runs_natively():
    def f(x, d):
        y = x + 1
        try:
            for k in d:
                d.clear()
        except RuntimeError as e:
            return y, str(e)
        return y * 2, list(d)

    # the break falls at the loop's FOR_ITER, first reached before any step: the graph before it
    # runs, then the loop runs natively over the dict's own iterator, rebuilt there
    check(f, torch.ones(1), collections.OrderedDict.fromkeys(range(2)), breaks=1, gb_types=["user error"])


@pytest.mark.parametrize("name", list(RAISED_BY_THE_CONTAINER))
def test_errors_raised_by_the_container_are_caught_by_the_traced_try(name):
    check(caught(RAISED_BY_THE_CONTAINER[name]), torch.ones(1), fullgraph=True)


# ---- sorting: a comparison that raises is the program's TypeError (test_sort) -----------------

@pytest.mark.parametrize("data", [[(1, 2), 1], [1, (1, 2)], [None, 1], [1, "a"], [3, 1, 2, (0,)],
                                  [(1.0, 1.0), (False, "A"), 6], [("a", 1), (1, "a")]],
                         ids=["tuple-int", "int-tuple", "None", "str", "partly sorted", "mixed tuples",
                              "tuple items"])
@pytest.mark.parametrize("how", ["sorted", "list.sort", "key and reverse"])
def test_sorting_values_that_do_not_compare_raises_eagers_type_error(data, how):
    def f(x):
        items = list(data)
        try:
            if how == "sorted":
                sorted(items)
            elif how == "list.sort":
                items.sort()
            else:
                items.sort(key=lambda v: v, reverse=True)
        except TypeError as e:
            return x + 1, str(e), items  # list.sort leaves the list as far as it got
        return x * 2, None, items

    check(f, torch.ones(1), fullgraph=True)


class _Key:
    def __hash__(self):
        return 1


KEY_ERRORS = {
    "dict[tuple]": (lambda: (1, 2), lambda k: {}[k]),
    "dict[tuple] of a dict of constants": (lambda: (1, (2,)), lambda k: {"a": 1}[k]),
    "dict.pop(frozenset)": (lambda: frozenset([1]), lambda k: {}.pop(k)),
    "dict.pop(object)": (_Key, lambda k: {}.pop(k)),
    "set.remove(set)": (lambda: frozenset([3, 4]), lambda k: {1}.remove(k)),
    "set.remove(tuple)": (lambda: (3, 4), lambda k: set().remove(k)),
    "del dict[tuple]": (lambda: (5,), lambda k: {}.__delitem__(k)),
    "OrderedDict[tuple]": (lambda: (1, 2), lambda k: collections.OrderedDict()[k]),
}


@pytest.mark.parametrize("name", list(KEY_ERRORS))
def test_key_error_holds_the_key_object_itself(name):
    make, lookup = KEY_ERRORS[name]

    def f(x):
        key = make()
        try:
            lookup(key)
        except KeyError as e:
            return x + 1, e.args[0] is key, len(e.args)
        return x

    check(f, torch.ones(2), fullgraph=True)
