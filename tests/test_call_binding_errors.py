"""A call of a traced Python function whose arguments do not fit its signature
raises CPython's own TypeError inside the trace: the user's ``except
TypeError`` (or ``assertRaises``) catches it in the same graph, with eager's
message; uncaught, the frame runs natively and raises eager's error. Each
test compares with eager, with ``fullgraph=True`` where the error is caught."""
import collections
import functools
import unittest

import pytest
import torch

from helpers import beside_tensor, check, t

full = functools.partial(check, fullgraph=True)


def two_and_kwonly(a, b, c=1, *, k, m=2):
    return a


def positional_only(a, /, b):
    return a


def no_parameters():
    return 0


def with_var_keywords(a, **rest):
    return rest


class Stack:
    def push(self, item):
        return item

    def clear(self):
        return None


BAD_CALLS = {
    "missing_two": lambda: two_and_kwonly(),
    "missing_one": lambda: two_and_kwonly(1, k=0),
    "missing_three_names": lambda: (lambda p, q, r: p)(),
    "too_many_with_defaults": lambda: two_and_kwonly(1, 2, 3, 4, k=0),
    "too_many_and_kwonly_given": lambda: two_and_kwonly(1, 2, 3, 4, 5, k=1, m=2),
    "one_given_to_none": lambda: no_parameters(1),
    "two_given_to_none": lambda: no_parameters(1, 2),
    "exactly_one_expected": lambda: with_var_keywords(1, 2),
    "unexpected_keyword": lambda: two_and_kwonly(1, 2, k=1, z=3),
    "multiple_values": lambda: two_and_kwonly(1, 2, a=3, k=1),
    "missing_kwonly": lambda: two_and_kwonly(1, 2),
    "positional_only_by_keyword": lambda: positional_only(a=1, b=2),
    "positional_only_before_unknown": lambda: positional_only(1, z=2, a=3),
    "method_missing_item": lambda: Stack().push(),
    "method_extra_argument": lambda: Stack().clear(1),
    "nested_function": lambda: _outer()(),
    # builtin containers' C methods
    "list_append_no_argument": lambda: [].append(),
    "list_append_two": lambda: [].append(1, 2),
    "list_insert_one": lambda: [].insert(1),
    "list_copy_with_argument": lambda: [].copy(1),
    "list_getitem_no_argument": lambda: [1].__getitem__(),
    "list_pop_by_keyword": lambda: [1].pop(index=0),
    "list_append_by_keyword": lambda: [].append(item=1),
    "tuple_index_no_argument": lambda: (1,).index(),
    "dict_get_no_argument": lambda: {}.get(),
    "dict_get_by_keyword": lambda: {1: 2}.get(key=1),
    "dict_pop_by_keyword": lambda: {1: 2}.pop(key=1),
    "set_add_no_argument": lambda: set().add(),
    "deque_append_no_argument": lambda: collections.deque().append(),
}


def _outer():
    def inner(x):
        return x

    return inner


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_call_caught_in_the_trace_has_eager_message(name):
    full(beside_tensor(BAD_CALLS[name], TypeError), t(2))


def test_assert_raises_on_a_bad_call_is_one_graph():
    class Case(unittest.TestCase):
        def runTest(self):
            pass

    case = Case()

    def f(x):
        case.assertRaises(TypeError, Stack().push)
        with case.assertRaises(TypeError):
            two_and_kwonly(1)
        return x * 2

    full(f, t(3))


def test_uncaught_bad_call_runs_natively_with_eager_error():
    def f(x):
        y = x + 1
        return two_and_kwonly(y, k=1, z=2)

    check(f, t(3), raises=TypeError, graphs=1, breaks=1, gb_types=["uncaught exception"])


def test_good_calls_after_a_caught_bad_one_stay_in_the_graph():
    def f(x):
        out = []
        for args in ((x,), (x, x), (x, x, x)):
            try:
                out.append(positional_only(*args) * 2)
            except TypeError as e:
                out.append(str(e))
        return out

    full(f, torch.ones(2))


SORT_CALLS = {
    "positional": lambda: [2, 1].sort(42),
    "two_positional": lambda: [2, 1].sort(42, 42),
    "unknown_keyword": lambda: [2, 1].sort(x=1),
    "too_many_keywords": lambda: [2, 1].sort(key=None, reverse=False, x=1),
}


@pytest.mark.parametrize("name", sorted(SORT_CALLS))
def test_list_sort_takes_keywords_only(name):
    bad = SORT_CALLS[name]

    def f(x):
        items = [3, 1, 2]
        try:
            bad()
        except TypeError as e:
            items.sort(reverse=True)
            return x + 1, str(e), items
        return x, None, items

    full(f, t(2))


@pytest.mark.parametrize("kind", ["dict", "ordered", "default"])
def test_dict_clear_with_an_argument_raises_and_keeps_the_items(kind):
    def f(x):
        d = {"dict": dict, "ordered": collections.OrderedDict,
             "default": lambda: collections.defaultdict(int)}[kind]()
        d["a"] = x
        try:
            d.clear(1)
        except TypeError as e:
            return len(d), str(e), d["a"] + 1
        return len(d), None, x

    full(f, t(2))


def test_container_methods_taking_keywords_still_take_them():
    def f(x):
        d = {}
        d.update(a=1)
        items = [3, 1, 2]
        items.sort(key=lambda v: -v, reverse=True)
        return x + d["a"], items, sorted(items, reverse=True)

    full(f, t(2))
