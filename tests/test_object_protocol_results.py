"""What Python makes of the results of a user class's special methods on
objects made in the trace (truth, hashing, membership, the sequence protocol,
integer conversion), and identity of values made in the trace, each compared
with eager with ``fullgraph=True`` (the kinds of issue 26, found with CPython's
semantics tests)."""
import functools

import pytest

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
