"""Protocols a user class answers in Python, traced as CPython resolves them:
``!=`` from ``__eq__`` (object's own ``__ne__`` inverts it), ``repr()`` from
``__repr__``, ``reversed()`` from ``__reversed__``, and a list's or tuple's
``index``/``count`` comparing each item with the user's ``__eq__``. Each test
compares with eager, with ``fullgraph=True``."""
import collections
import collections.abc
import functools

import pytest

from helpers import beside_tensor, check, t

full = functools.partial(check, fullgraph=True)


class Money:
    def __init__(self, cents):
        self.cents = cents

    def __eq__(self, other):
        if not isinstance(other, Money):
            return NotImplemented
        return self.cents == other.cents

    __hash__ = None

    def __repr__(self):
        return f"Money({self.cents})"


class AlwaysEqual:
    def __eq__(self, other):
        return True


class NeverEqual:
    def __eq__(self, other):
        return False


class Truthy:  # __eq__ returning a non-bool: != inverts its truth
    def __eq__(self, other):
        return [1]


class OwnNe(Money):
    def __ne__(self, other):
        return "own"


class Plain:
    pass


class BadRepr:
    def __repr__(self):
        return 42


class OnlyRepr:
    def __repr__(self):
        return "only-repr"


class Countdown(collections.abc.Sequence):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.n - i


class OwnReversed:
    def __reversed__(self):
        yield "b"
        yield "a"


NE_CASES = {
    "from_eq_equal": lambda: Money(1) != Money(1),
    "from_eq_different": lambda: Money(1) != Money(2),
    "eq_not_implemented_then_identity": lambda: (Money(1) != 3, 3 != Money(1)),
    "reflected_from_list": lambda: [1] != AlwaysEqual(),
    "never_equal": lambda: (NeverEqual() != 1, 1 != NeverEqual()),
    "non_bool_eq_inverted": lambda: Truthy() != 0,
    "own_ne_wins": lambda: OwnNe(1) != OwnNe(1),
    "userlist_against_list": lambda: (collections.UserList([1]) != [1], [2] != collections.UserList([1])),
    "plain_identity": lambda: (lambda p: (p != p, p != Plain()))(Plain()),
}


@pytest.mark.parametrize("name", sorted(NE_CASES))
def test_not_equal_of_user_objects(name):
    full(beside_tensor(NE_CASES[name]), t(2))


REPR_CASES = {
    "own_repr": lambda: repr(Money(5)),
    "str_falls_back_to_repr": lambda: str(OnlyRepr()),
    "userlist": lambda: repr(collections.UserList([1, "a"])),
    "userdict": lambda: repr(collections.UserDict(a=1)),
    "in_an_fstring": lambda: f"{Money(2)!r}",
}


@pytest.mark.parametrize("name", sorted(REPR_CASES))
def test_repr_of_user_objects(name):
    full(beside_tensor(REPR_CASES[name]), t(2))


def test_repr_returning_non_string_raises_eager_type_error():
    def f(x):
        try:
            repr(BadRepr())
        except TypeError as e:
            return x + 1, str(e)
        return x, None

    full(f, t(2))


def test_default_repr_is_made_after_the_graph():
    def f(x, p):
        return x + 1, repr(p) == object.__repr__(p)

    check(f, t(2), Plain(), graphs=1, breaks=1)  # comparing the runtime repr is the break


REVERSED_CASES = {
    "userlist": lambda: list(reversed(collections.UserList([1, 2, 3]))),
    "sequence_abc": lambda: list(reversed(Countdown(3))),
    "own_generator": lambda: "".join(reversed(OwnReversed())),
    "loop": lambda: [i * 2 for i in reversed(collections.UserList([4, 5]))],
}


@pytest.mark.parametrize("name", sorted(REVERSED_CASES))
def test_reversed_of_user_objects(name):
    full(beside_tensor(REVERSED_CASES[name]), t(2))


SEARCH_CASES = {
    "list_count": lambda: [Money(1), Money(2), Money(1)].count(Money(1)),
    "list_index": lambda: [Money(1), Money(2)].index(Money(2)),
    "tuple_index_and_count": lambda: ((Money(3), 4).index(4), (Money(3), Money(3)).count(Money(3))),
    "index_with_bounds": lambda: [Money(1), Money(2), Money(1)].index(Money(1), 1),
    "index_negative_bounds": lambda: [Money(1), Money(2), Money(1), 7].index(Money(1), -3, -1),
    "always_equal_matches_first": lambda: ([3, 4].index(AlwaysEqual()), [3, 4].count(AlwaysEqual())),
    "never_equal_but_identical": lambda: (lambda n: [1, n].index(n))(NeverEqual()),
    "never_equal_count": lambda: [NeverEqual(), 1].count(NeverEqual()),
}


@pytest.mark.parametrize("name", sorted(SEARCH_CASES))
def test_index_and_count_compare_with_user_eq(name):
    full(beside_tensor(SEARCH_CASES[name]), t(2))


@pytest.mark.parametrize("container", ["list", "tuple", "list_bounds"])
def test_index_not_found_raises_eager_value_error(container):
    def f(x):
        items = [Money(1), Money(2)]
        try:
            if container == "tuple":
                tuple(items).index(Money(9))
            elif container == "list_bounds":
                items.index(Money(1), 1)
            else:
                items.index(Money(9))
        except ValueError as e:
            return x + 1, str(e)
        return x, None

    full(f, t(2))
