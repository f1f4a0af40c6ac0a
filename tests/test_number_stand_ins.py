"""User objects read as numbers by C code: builtins, ``math``, methods of constants
and sequence indices given an object whose class defines ``__index__``,
``__int__``, ``__float__``, ``__complex__`` or a rounding dunder in Python (the
kind of CPython's ``test_int``/``test_float``/``test_math`` conversions), and
a bare ``object()`` sentinel returned from the trace (its use in the trace:
``test_object_semantics``). Each compared with eager with ``fullgraph=True``."""
import functools
import math
import operator

import pytest

import bytegraph

from helpers import beside_tensor, check, t

full = functools.partial(check, fullgraph=True)
ERRORS = (TypeError, ValueError, OverflowError, IndexError, AttributeError)


class Index:
    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


class Floaty:
    def __float__(self):
        return 2.5


class Inty:
    def __int__(self):
        return 7


class Complexy:
    def __complex__(self):
        return 1 + 2j


class Rounded:
    def __round__(self, ndigits=None):
        return ("rounded", ndigits)

    def __floor__(self):
        return -4

    def __ceil__(self):
        return 5

    def __trunc__(self):
        return 3


class IndexReturnsFloat:
    def __index__(self):
        return 1.5


class IndexRaises:
    def __index__(self):
        raise KeyError("no index")


class Plain:
    pass


BUILTIN_CALLS = {
    "int base": lambda: int("10", Index(8)),
    "range": lambda: list(range(Index(1), Index(7), Index(2))),
    "hex oct bin": lambda: (hex(Index(255)), oct(Index(8)), bin(Index(5))),
    "chr": lambda: chr(Index(65)),
    "round ndigits": lambda: round(3.14159, Index(2)),
    "bytes": lambda: bytes(Index(3)),
    "operator.index": lambda: operator.index(Index(4)),
    "math": lambda: (math.factorial(Index(4)), math.comb(Index(5), Index(2)), math.isqrt(Index(17)),
                     math.gcd(Index(12), 8)),
    "float()": lambda: (float(Floaty()), float(Index(3))),
    "math of __float__": lambda: (math.sqrt(Floaty()), math.floor(Floaty()), math.isnan(Floaty())),
    "int()": lambda: int(Inty()),
    "complex()": lambda: (complex(Complexy()), complex(Floaty()), complex(Index(2))),
    "rounding dunders": lambda: (round(Rounded()), round(Rounded(), 2), math.floor(Rounded()),
                                 math.ceil(Rounded()), math.trunc(Rounded())),
    "repeat": lambda: ("ab" * Index(2), [0] * Index(3), (1,) * Index(2), Index(2) * [1]),
    "percent": lambda: "%x|%d" % (Index(255), Inty()),
    "str methods": lambda: ("abc".center(Index(7)), "abcdef".split("c", Index(1)), "abc"[Index(1)],
                            b"abc"[Index(1)], "abcdef"[Index(1):Index(4)]),
    "range index": lambda: range(10)[Index(3)],
    "slice.indices": lambda: slice(Index(1), Index(3)).indices(Index(10)),
}

BAD_CALLS = {
    "no __index__": lambda: int("10", Plain()),
    "no __float__": lambda: float(Plain()),
    "index returns float": lambda: operator.index(IndexReturnsFloat()),
    "index raises": lambda: hex(IndexRaises()),
    "math of no number": lambda: math.sqrt(Plain()),
    "repeat by no index": lambda: "ab" * Plain(),
    "list index by no index": lambda: [1, 2][Plain()],
    "tuple index by bad index": lambda: (1, 2)[IndexReturnsFloat()],
    "chr out of range": lambda: chr(Index(-1)),
}


@pytest.mark.parametrize("call", BUILTIN_CALLS.values(), ids=BUILTIN_CALLS)
def test_c_code_reads_a_user_object_through_its_number_protocols(call):
    full(beside_tensor(call), t(2))


@pytest.mark.parametrize("call", BAD_CALLS.values(), ids=BAD_CALLS)
def test_a_user_object_c_code_cannot_read_raises_eagers_error(call):
    full(beside_tensor(call, ERRORS + (KeyError,)), t(2))


def _sequence_ops(x):
    items = [1, 2, 3, 4, 5]
    items[Index(0)] = 9
    del items[Index(1)]
    items.insert(Index(0), 7)
    popped = items.pop(Index(-1))
    items[Index(1):Index(3)] = [0]
    found = items.index(0, Index(0))
    items *= Index(2)
    return x + 1, items, popped, found, (1, 2, 3)[Index(2)], (1, 2, 3)[Index(0):Index(2)]


def test_list_and_tuple_take_user_indices_where_eager_does():
    full(_sequence_ops, t(2))


def test_the_index_is_read_once_per_use_like_eager():
    class Counted:
        reads = 0

        def __index__(self):
            Counted.reads += 1
            return 1

    def f(x):
        i = Counted()
        return x + 1, [5, 6, 7][i], "abc"[i], hex(i), i.reads

    full(f, t(2))


def test_a_tensor_valued_dunder_breaks_instead_of_guessing():
    class TensorIndex:
        def __init__(self, x):
            self.x = x

        def __index__(self):
            return int(self.x.sum() > 0)

    def f(x):
        return [10, 20][TensorIndex(x)] + x

    check(f, t(3), graphs=1, breaks=1)  # the graph after the break; the index is read natively


def test_c_code_that_needs_more_of_the_object_breaks():
    class Iterable:
        def __index__(self):
            return 2

        def __iter__(self):
            return iter([1.5, 2.5])

    def f(x):
        return x + 1, math.fsum(Iterable())

    check(f, t(2), graphs=1, breaks=1)


def test_an_object_sentinel_made_in_the_trace_is_returned():
    compiled = bytegraph.compile(lambda x: (x + 1, object()), backend="eager", fullgraph=True)
    first, second = compiled(t(2))[1], compiled(t(2))[1]
    assert type(first) is object and type(second) is object and first is not second
