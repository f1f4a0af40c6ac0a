"""What Python makes of the results of a user class's special methods on
objects made in the trace (truth, hashing, membership, the sequence protocol,
integer conversion), and identity of values made in the trace, each compared
with eager with ``fullgraph=True`` (the kinds of issue 26, found with CPython's
semantics tests)."""
import functools

import pytest

import bytegraph

from helpers import beside_tensor, check, t

full = functools.partial(check, fullgraph=True)


# ---- truth: bool() of an object made in the trace -------------------------------------------

class ReturnsSelf:
    def __bool__(self):
        return self


class ReturnsStr:
    def __bool__(self):
        return "yes"


class IntReturnsSelf(int):
    def __bool__(self):
        return self


class IntReturnsOne(int):
    def __bool__(self):
        return 1


class BoolBlocked:
    __bool__ = None


class BoolBlockedWithLen:
    __bool__ = None

    def __len__(self):
        return 3


class LenBlocked:
    __len__ = None


def _len_class(value):
    class Sized:
        def __len__(self):
            return value
    return Sized


@pytest.mark.parametrize("cls", [ReturnsSelf, ReturnsStr, IntReturnsSelf, IntReturnsOne, BoolBlocked,
                                 BoolBlockedWithLen, LenBlocked])
def test_bad_truth_method_raises_eagers_type_error(cls):
    full(beside_tensor(lambda: bool(cls()), TypeError), t(2))
    full(beside_tensor(lambda: not cls(), TypeError), t(2))


@pytest.mark.parametrize("value", [-1, "three", 2.0, 1 << 63, True, 0, 7])
def test_len_result_decides_truth_as_eager(value):
    cls = _len_class(value)
    full(beside_tensor(lambda: bool(cls()), (TypeError, ValueError, OverflowError)), t(2))
    full(beside_tensor(lambda: len(cls()), (TypeError, ValueError, OverflowError)), t(2))


# ---- hash() of user objects --------------------------------------------------------------------

def _hash_class(value):
    class Hashed:
        def __hash__(self):
            return value
    return Hashed


class IntSub(int):
    pass


@pytest.mark.parametrize("value", [7, -1, True, 1 << 64, -(1 << 70), 1 << 62, IntSub(-1), "7", None, 2.0])
def test_hash_result_is_checked_and_reduced_as_eager(value):
    cls = _hash_class(value)
    full(beside_tensor(lambda: hash(cls()), TypeError), t(2))


class EqOnly:
    def __eq__(self, other):
        return True


class ListSub(list):
    pass


class DictSub(dict):
    pass


class TupleSub(tuple):
    pass


class FrozenSub(frozenset):
    pass


@pytest.mark.parametrize("make", [EqOnly, ListSub, DictSub, lambda: TupleSub((1, [2])),
                                  lambda: TupleSub((1, "a")), lambda: FrozenSub({1, 2})])
def test_hash_of_unhashable_and_builtin_based_objects_is_eagers(make):
    full(beside_tensor(lambda: hash(make()), TypeError), t(2))


class Plain:
    pass


def test_identity_hash_of_an_object_made_in_the_trace_is_made_after_the_graph():
    def discarded(x):
        hash(Plain())
        return x + 1

    full(discarded, t(2))

    def returned(x):
        obj = Plain()
        return x + 1, obj, hash(obj)

    _, obj, h = bytegraph.compile(returned, backend="eager", fullgraph=True)(t(2))
    assert h == hash(obj)


def test_identity_hash_of_an_input_object_is_its_hash():
    obj = Plain()
    compiled = bytegraph.compile(lambda x, o: (x + 1, hash(o)), backend="eager", fullgraph=True)
    assert compiled(t(2), obj)[1] == hash(obj)
    other = Plain()
    assert compiled(t(2), other)[1] == hash(other)  # the identity guard sees another object


def test_reading_an_identity_hash_made_in_the_trace_breaks():
    def f(x):
        return x + 1, hash(Plain()) % 1 == 0

    check(f, t(2), graphs=1, breaks=1, gb_types=["unsupported builtin call"])
