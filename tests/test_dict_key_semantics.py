"""Keys as CPython's dicts and sets find them (test_dict, test_set,
test_ordered_dict, test_collections and test_userdict exercise these kinds):
keys whose class has its own ``__eq__``/``__hash__`` (traced: a lookup hashes
the key, then compares it with each held key of that hash), ``in`` on dict
views, frozenset and set-subclass methods, and ``reversed``/``update``/
``move_to_end``/``popitem``/``|`` on OrderedDict, dict subclasses and ChainMap.
Each test compiles with ``fullgraph=True`` and compares with eager."""
import collections
import math
import functools

import pytest

import bytegraph

from helpers import beside_tensor, check, t

full = functools.partial(check, fullgraph=True)


class Key:
    """Equal when the values are equal, hashed by value."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, Key) and self.v == other.v

    def __hash__(self):
        return hash(self.v)


class Collides(Key):
    """Every instance hashes alike: lookups compare with each held key."""

    def __hash__(self):
        return 7


class LikeInt(Key):
    """Equal to the int of its value (and hashed as it): found by, and finds, an int key."""

    __hash__ = Key.__hash__

    def __eq__(self, other):
        return other == self.v


class HashRaises:
    def __hash__(self):
        raise ValueError("no hash")


class EqRaises:
    def __hash__(self):
        return 1

    def __eq__(self, other):
        raise RuntimeError("no eq")


class EqOnly:
    """``__eq__`` without ``__hash__``: unhashable."""

    def __eq__(self, other):
        return True


class Declines:
    """An ``__eq__`` that returns NotImplemented: identity decides."""

    def __hash__(self):
        return 1

    def __eq__(self, other):
        return NotImplemented


class HashedSet(set):
    """A set subclass made hashable (by a constant): usable as a key or member."""

    def __hash__(self):
        return 5


class FrozenSub(frozenset):
    pass


class AlwaysEqualFrozen(frozenset):
    __hash__ = frozenset.__hash__

    def __eq__(self, other):
        return True


class DictSub(dict):
    pass


class OrderedSub(collections.OrderedDict):
    pass


class TupleSub(tuple):
    pass


def values_of(keys):
    """The values of Key objects (and constants), sorted: what a test compares."""
    return sorted(k.v if isinstance(k, Key) else k for k in keys)


# ---- keys with their own __eq__ and __hash__ ----------------------------------------------------------

#: dict and set operations with keys equal to, but distinct from, the held ones
KEY_CASES = {
    "dict lookups": lambda cls: (lambda d: (d[cls(1)], cls(2) in d, cls(3) in d, d.get(cls(3), 0)))(
        {cls(1): "a", cls(2): "b"}),
    "dict store keeps the held key": lambda cls: _store_keeps(cls),
    "dict del, pop, setdefault": lambda cls: (lambda d: (d.__delitem__(cls(1)), d.pop(cls(2)), d.pop(cls(9), "no"),
                                                         d.setdefault(cls(3), "c"), d.setdefault(cls(3), "x"),
                                                         len(d)))({cls(1): "a", cls(2): "b"}),
    "defaultdict missing key": lambda cls: (lambda d: (d[cls(1)], d[cls(2)], len(d)))(
        collections.defaultdict(int, {cls(1): 4})),
    "OrderedDict move_to_end and pop": lambda cls: (lambda d: (d.move_to_end(cls(1)), values_of(d), d.pop(cls(2)),
                                                               len(d)))(collections.OrderedDict({cls(1): 0, cls(2): 1})),
    "dict display and fromkeys merge equal keys": lambda cls: (len({cls(1): 1, cls(1): 2}),
                                                               len(dict.fromkeys([cls(1), cls(1), cls(2)]))),
    "dict equality": lambda cls: ({cls(1): 1} == {cls(1): 1}, {cls(1): 1} == {cls(2): 1},
                                  collections.OrderedDict([(cls(1), 1), (cls(2), 2)]) == collections.OrderedDict(
                                      [(cls(1), 1), (cls(2), 2)]),
                                  collections.OrderedDict([(cls(1), 1), (cls(2), 2)]) == collections.OrderedDict(
                                      [(cls(2), 2), (cls(1), 1)])),
    "set membership": lambda cls: (lambda s: (s.add(cls(1)), len(s), cls(2) in s, cls(5) in s, s.discard(cls(1)),
                                              len(s), s.remove(cls(2)), len(s)))({cls(1), cls(2)}),
    "set built from an iterable": lambda cls: (len(set([cls(1), cls(1), cls(2)])), len({cls(1), cls(1)}),
                                               len(frozenset([cls(1), cls(1)]))),
    "set operators": lambda cls: (lambda a, b: (values_of(a | b), values_of(a & b), values_of(a - b),
                                                values_of(a ^ b), a <= b, {cls(2)} <= a, a == {cls(1), cls(2), 3}))(
        {cls(1), cls(2), 3}, {cls(2), cls(3)}),
    "set methods with iterables": lambda cls: (lambda s: (values_of(s.union([cls(1), cls(4)])),
                                                          values_of(s.intersection(iter([cls(2)]))),
                                                          s.issubset([cls(1), cls(2), cls(3)]),
                                                          s.isdisjoint((cls(7),)),
                                                          s.update([cls(2), cls(8)]), values_of(s)))({cls(1), cls(2)}),
    "frozenset methods": lambda cls: (lambda f: (values_of(f.union([cls(1), cls(4)])), f.issuperset([cls(1)]),
                                                 values_of(f.difference({cls(1)}))))(frozenset([cls(1), cls(2)])),
}


def _store_keeps(cls):
    first = cls(1)
    d = {first: "a"}
    d[cls(1)] = "b"
    return len(d), d[cls(1)], next(iter(d)) is first


@pytest.mark.parametrize("cls", [Key, Collides, LikeInt], ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", list(KEY_CASES))
def test_keys_with_their_own_eq_are_matched_by_traced_hash_and_eq(name, cls):
    full(beside_tensor(lambda: KEY_CASES[name](cls), KeyError), t(2))


#: lookups of a key whose __hash__ or __eq__ raises, or that is unhashable
RAISING = {
    "dict store": lambda k: {}.__setitem__(k, 1),
    "dict display": lambda k: {k: 1, EqRaises(): 2},
    "dict in": lambda k: k in {1: 2, EqRaises(): 3},
    "dict get": lambda k: {EqRaises(): 1}.get(k),
    "dict pop": lambda k: {EqRaises(): 1}.pop(k, None),
    "set display": lambda k: {k, EqRaises()},
    "set in": lambda k: k in {EqRaises()},
    "set add": lambda k: {EqRaises()}.add(k),
    "set from a list": lambda k: set([k, EqRaises()]),
}


@pytest.mark.parametrize("key", [HashRaises, EqRaises, EqOnly], ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", list(RAISING))
def test_a_raising_hash_or_eq_raises_eagers_error(name, key):
    full(beside_tensor(lambda: RAISING[name](key()), (ValueError, RuntimeError, TypeError)), t(2))


def test_eq_that_clears_the_dict_restarts_the_lookup():
    def f(x):
        d = {}

        class Clears:
            def __hash__(self):
                return 1

            def __eq__(self, other):
                d.clear()
                return False

        d[Clears()] = 1
        d[Clears()] = 2
        return x + 1, len(d), list(d.values())

    full(f, t(2))


def test_eq_that_clears_the_set_restarts_the_lookup():
    def f(x):
        s = set()

        class Clears:
            def __hash__(self):
                return 1

            def __eq__(self, other):
                s.clear()
                return False

        s.add(Clears())
        s.add(Clears())
        return x + 1, len(s)

    full(f, t(2))


def test_eq_declining_falls_back_to_identity():
    def f(x):
        a = Declines()
        return x + 1, a in {a}, Declines() in {a}, len({Declines(), Declines()}), {a: 1}.get(Declines())

    full(f, t(2))


def test_a_key_whose_hash_changed_is_not_found():
    class Mutable:
        def __init__(self):
            self.h = 1

        def __hash__(self):
            return self.h

        def __eq__(self, other):
            return self is other

    def f(x):
        m = Mutable()
        d = {m: 1}
        m.h = 2
        return x + 1, m in d, len(d)

    full(f, t(2))


def test_set_subclass_with_a_hash_as_key_and_member():
    def f(x):
        a, b = HashedSet([1]), HashedSet([1])
        return x + 1, {a: 1}.get(b), a in {b}, len({a, b}), {a: 1}.get(HashedSet([2]))

    full(f, t(2))


def test_frozenset_subclasses_as_keys():
    def f(x):
        d = {frozenset([1]): "a"}
        return (x + 1, d[FrozenSub([1])], d.get(AlwaysEqualFrozen([1])), d.get(AlwaysEqualFrozen([2])),
                AlwaysEqualFrozen([1]) in {frozenset([1])}, FrozenSub([2]) in d)

    full(f, t(2))


def test_iteration_order_of_keys_hashed_by_their_own_hash():
    def f(x):
        s = {Collides(1), Collides(2), Key(5), Key(3), Key(12)}
        d = {Key(i): 0 for i in (4, 1, 9)}
        return x + 1, [k.v for k in s], [k.v for k in d]

    full(f, t(2))


def test_frozenset_of_objects_with_their_own_eq_as_a_key_breaks():
    def f(x):
        return x + 1, frozenset([LikeInt(1)]) in {frozenset([1])}

    check(f, t(2), graphs=1, breaks=1, gb_types=["unsupported dict key"])


# ---- `in` on dict views ---------------------------------------------------------------------------------

DICTS = {
    "dict": lambda: {"a": 1, Key(2): 2},
    "OrderedDict": lambda: collections.OrderedDict([("a", 1), (Key(2), 2)]),
    "defaultdict": lambda: collections.defaultdict(int, [("a", 1), (Key(2), 2)]),
    "dict subclass": lambda: DictSub([("a", 1), (Key(2), 2)]),
    "OrderedDict subclass": lambda: OrderedSub([("a", 1), (Key(2), 2)]),
}


@pytest.mark.parametrize("kind", list(DICTS))
def test_in_items_view_looks_the_key_up_then_compares_the_value(kind):
    def call():
        d = DICTS[kind]()
        items = d.items()
        return (("a", 1) in items, ("a", 2) in items, ("z", 1) in items, (Key(2), 2) in items,
                (Key(2), 3) in items, ("a", 1.0) in items, TupleSub(("a", 1)) in items, ("a", 1, 2) in items,
                "a" in items, 1 in items, items.__contains__(("a", 1)), len(d))

    full(beside_tensor(call), t(2))


@pytest.mark.parametrize("kind", list(DICTS))
def test_in_items_view_with_an_unhashable_key_raises(kind):
    full(beside_tensor(lambda: (["a"], 1) in DICTS[kind]().items(), TypeError), t(2))


@pytest.mark.parametrize("kind", list(DICTS))
def test_in_keys_and_values_views(kind):
    def call():
        d = DICTS[kind]()
        return "a" in d.keys(), Key(2) in d.keys(), "z" in d.keys(), 1 in d.values(), 3 in d.values(), len(d)

    full(beside_tensor(call), t(2))


def test_items_view_compares_the_value_identity_first():
    class NeverEqual:
        def __eq__(self, other):
            return False

    def f(x):
        v = NeverEqual()
        d = {"a": v}
        return x + 1, ("a", v) in d.items(), ("a", NeverEqual()) in d.items()

    full(f, t(2))


# ---- frozenset and set methods, set.__init__ again ------------------------------------------------------

@pytest.mark.parametrize("cls", [set, frozenset, FrozenSub, HashedSet], ids=lambda c: c.__name__)
def test_set_methods_take_any_iterable(cls):
    def call():
        s = cls("abc")
        return (s.union("d", ["e"]), type(s.union("d")), s.intersection(iter("ab"), {"a": 0}),
                s.difference(("a",)), s.symmetric_difference("az"), s.issubset("abcd"), s.issuperset(iter("a")),
                s.isdisjoint(x for x in "yz"), s.copy(), type(s.copy()))

    full(beside_tensor(call), t(2))


@pytest.mark.parametrize("cls", [set, HashedSet], ids=lambda c: c.__name__)
def test_set_init_called_again_refills(cls):
    def call():
        s = cls("abc")
        s.__init__("xy")
        t_ = cls("q")
        t_.__init__()
        return s, type(s), t_

    full(beside_tensor(call), t(2))


# ---- OrderedDict subclasses, reversed, ChainMap | -------------------------------------------------------

@pytest.mark.parametrize("cls", [collections.OrderedDict, OrderedSub], ids=lambda c: c.__name__)
def test_ordered_dict_update_move_to_end_popitem(cls):
    def call():
        d = cls(a=1, b=2, c=3)
        d.update(d=4)
        d.update([("e", 5)], f=6)
        d.move_to_end("a")
        d.move_to_end("f", last=False)
        return d.popitem(), d.popitem(last=False), d.popitem(False), list(d.items())

    full(beside_tensor(call), t(2))


class IterOverridden(dict):
    def __iter__(self):
        return iter(["not", "these"])


@pytest.mark.parametrize("cls", [dict, DictSub, collections.OrderedDict, OrderedSub, IterOverridden],
                         ids=lambda c: c.__name__)
def test_reversed_of_dicts_and_their_views(cls):
    def call():
        d = cls(a=1, b=2, c=3)
        its = [reversed(d), reversed(d.keys()), reversed(d.values()), reversed(d.items())]
        return [type(i).__name__ for i in its], [list(i) for i in its]

    full(beside_tensor(call), t(2))


def test_reversed_of_a_list_subclass():
    class ListSub(list):
        pass

    full(beside_tensor(lambda: (list(reversed(ListSub([1, 2, 3]))), type(reversed(ListSub())).__name__)), t(2))


@pytest.mark.parametrize("other", [dict, DictSub, collections.OrderedDict], ids=lambda c: c.__name__)
def test_chain_map_or_with_dicts(other):
    def call():
        c = collections.ChainMap({"a": 1}, {"b": 2})
        right, left = c | other(c=3), other(c=3) | c
        c |= other(d=4)
        return type(right), dict(right), right.maps, type(left), dict(left), dict(c), c.maps

    full(beside_tensor(call, TypeError), t(2))


def test_chain_map_or_with_a_non_mapping_raises():
    full(beside_tensor(lambda: collections.ChainMap({"a": 1}) | 1, TypeError), t(2))


# ---- containers passed in, whose keys were hashed before the call ---------------------------------------

def test_a_dict_passed_in_keyed_by_objects_with_their_own_eq_breaks():
    def f(x, d):
        return x + 1, d.get(Key(1)), Key(2) in d, len(d)

    check(f, t(2), {Key(1): 1, "a": 2}, graphs=1, breaks=2, gb_types=["unsupported dict key"] * 2)


def test_a_dict_passed_in_of_constant_keys_is_looked_up_by_objects_with_their_own_eq():
    def f(x, d):
        return x + 1, d.get(LikeInt(1)), d.get(Key(1)), LikeInt(5) in d, d["a"]

    full(f, t(2), {"a": 2, 1: 3})


@pytest.mark.parametrize("cls", [set, frozenset, HashedSet], ids=lambda c: c.__name__)
def test_a_set_passed_in_of_objects_with_their_own_eq_breaks(cls):
    def f(x, s):
        return x + 1, Key(1) in s, len(s)

    check(f, make=lambda: (t(2), cls([Key(1), Key(2)])), graphs=1, breaks=2,
          gb_types=["unsupported set input"] * 2)


# ---- ``x in {1, 2}``: a set display of constants is a hash lookup, not a scan ----------------

class EqualsAnything(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class HashedAlike:
    def __hash__(self):
        return 99

    def __eq__(self, other):
        return True


class Unhashable:
    __hash__ = None


class HashRaises:
    def __hash__(self):
        raise ValueError("no hash")


CONSTANT_SET_LOOKUPS = {
    "int subclass equal to anything": lambda: [EqualsAnything(9) in {1, 2}, EqualsAnything(2) in {1, 2}],
    "object of another hash": lambda: [HashedAlike() in {1, 2}, HashedAlike() in {"a"}, HashedAlike() in {99}],
    "unhashable": lambda: Unhashable() in {1, 2},
    "hash raises": lambda: HashRaises() in {1, 2},
    "not in": lambda: HashedAlike() not in {1, 99},
}


@pytest.mark.parametrize("lookup", CONSTANT_SET_LOOKUPS.values(), ids=CONSTANT_SET_LOOKUPS)
def test_membership_in_a_constant_set_hashes_first_like_eager(lookup):
    full(beside_tensor(lookup, (TypeError, ValueError)), t(2))


@pytest.mark.parametrize("cls", [EqualsAnything, HashRaises, Unhashable], ids=lambda c: c.__name__)
def test_membership_of_an_input_object_in_a_constant_set_is_eagers(cls):
    def f(x, key):
        try:
            return x + 1, key in {1, 2}
        except (TypeError, ValueError) as e:
            return x, type(e).__name__, str(e)

    full(f, make=lambda: (t(2), cls(9) if cls is EqualsAnything else cls()))


class CollidingDivisor:
    """Keys of one hash, equal when they share a divisor: which one a lookup finds depends on
    the order CPython compares them in."""

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return 0

    def __eq__(self, other):
        return self.value == other.value or math.gcd(self.value, other.value) > 1


def test_a_lookup_order_a_delete_changed_breaks_instead_of_guessing():
    def f(x):
        d = {CollidingDivisor(1): "a", CollidingDivisor(2): "b"}
        del d[CollidingDivisor(1)]
        d[CollidingDivisor(3)] = "c"  # takes the deleted key's slot: CPython compares it first
        return x * 2, d.get(CollidingDivisor(6))

    assert f(t(2))[1] == "c"
    with pytest.raises(bytegraph.Unsupported) as info:
        bytegraph.compile(f, backend="eager", fullgraph=True)(t(2))
    assert info.value.gb_type == "lookup order after a delete"


def test_a_lookup_among_colliding_keys_without_deletes_is_traced():
    def f(x):
        d = {CollidingDivisor(1): "a", CollidingDivisor(2): "b", CollidingDivisor(3): "c"}
        return x * 2, d.get(CollidingDivisor(6)), d.get(CollidingDivisor(9))

    full(f, t(2))


class Rehashable:
    """A key whose hash follows a field the program changes after storing it."""

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return self.value

    def __eq__(self, other):
        return isinstance(other, Rehashable) and self.value == other.value


COPIES = {
    "dict()": lambda d, s: dict(d).get(Rehashable(5), "missing"),
    "set() of a dict": lambda d, s: Rehashable(5) in set(d),
    "dict display": lambda d, s: Rehashable(5) in {**d},
    "dict update": lambda d, s: (lambda e: (e.update(d), Rehashable(5) in e))({})[1],
    "set union": lambda d, s: Rehashable(5) in (s | s),
    "set copy": lambda d, s: Rehashable(5) in s.copy(),
    "set of a set": lambda d, s: Rehashable(5) in set(s),
}


@pytest.mark.parametrize("copy", COPIES.values(), ids=COPIES)
def test_a_copy_keeps_the_hash_each_key_was_stored_under(copy):
    def f(x):
        key = Rehashable(1)
        d, s = {key: "found"}, {key}
        key.value = 5  # eager's copies keep hash 1: a lookup by hash 5 misses
        return x + 1, copy(d, s)

    full(f, t(2))
