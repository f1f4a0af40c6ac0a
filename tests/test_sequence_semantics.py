"""Lists, tuples and sorting as CPython's own sequence tests exercise them
(test_list, test_tuple, test_sort, list_tests/seq_tests; see
docs/peer_suite_cpython.md): the identity of objects a folded operation gives
back, ``id()`` of objects made in the trace, ``list.sort``'s protocol (the list
is empty while it sorts; keys and comparisons that raise or write to it), the
old sequence protocol of user objects, and the edge cases of list and tuple
methods. Each test compiles with ``fullgraph=True`` (unless it counts a break)
and compares with eager."""
import collections
import copy
import functools

import pytest

from helpers import check, t

full = functools.partial(check, fullgraph=True)


def outcome(call):
    """``call()``'s result, or the type and message of what it raised."""
    try:
        return call()
    except Exception as e:  # noqa: BLE001 - compared with eager's
        return type(e).__name__, str(e)


# ---- identity: what a folded operation gives back is the operand's item ---------------

def test_items_of_a_list_of_tuples_keep_their_identity():
    def f(x):
        lst = [(1, 2), (3, 4), (1, 2)]
        a = list(lst)
        return x + 1, (lst[0] is lst[0], lst[0] is not lst[1], a[1] is lst[1], max(lst) is lst[1],
                       tuple(lst)[0] is lst[0], lst[0:2][1] is lst[1], sorted(lst)[2] is lst[1])

    full(f, t(2))


def test_members_of_a_set_of_tuples_keep_their_identity():
    def f(x):
        s = {(1, 2), (3, 4)}
        dup = s.copy()
        a, b = sorted(dup, key=repr), sorted(s, key=repr)
        return x + 1, (a[0] is b[0], a[1] is b[1], a[0] is b[1], list(s)[0] is list(s)[0])

    full(f, t(2))


def test_items_of_dicts_deques_and_named_tuples_keep_their_identity():
    pair = collections.namedtuple("pair", "a b")

    def f(x):
        d, q, nts = {"a": (1, 2), "b": (3,)}, collections.deque([(1, 2), (3, 4)]), [pair((1,), 2)]
        return x + 1, (d["a"] is d["a"], d.get("a") is d["a"], list(d.values())[1] is d["b"], q[0] is q[0],
                       q[0] is not q[-1], max(q) is q[1], nts[0] is nts[0], nts[0][0] is nts[0].a)

    full(f, t(2))


def test_identity_preserving_operations_of_immutables():
    def f(x):
        tup, fs, empty = (1, [2]), frozenset("ab"), ()
        return x + 1, (tuple(tup) is tup, tup[:] is tup, tup[0:2] is tup, tup * 1 is tup, tup + () is tup,
                       copy.copy(tup) is tup, frozenset(fs) is fs, fs.copy() is fs, copy.copy(fs) is fs,
                       tuple([]) is empty, empty[:] is (), tup[1:1] is empty, (1,) * 0 is empty)

    full(f, t(2))


def test_copies_of_mutables_and_subclasses_are_new_objects():
    class Tup(tuple):
        pass

    def f(x):
        lst, s, sub = [1], {1}, Tup((1, 2))
        return x + 1, (lst[:] is lst, list(lst) is lst, lst * 1 is lst, copy.copy(lst) is lst, set(s) is s,
                       s.copy() is s, tuple(sub) is sub, sub[:] is sub, type(sub[:]))

    full(f, t(2))


def test_ids_of_objects_made_in_the_trace_compare_as_their_identities():
    class Obj:
        pass

    def f(x):
        lst, tup, d, s, o = [1], (1, 2), {1: 2}, {1}, Obj()
        copies = list(lst), tuple(tup), dict(d), set(s), Obj()
        old = id(lst)
        lst *= 3
        return x + 1, ([id(a) == id(a) for a in (lst, tup, d, s, o)],
                       [id(a) != id(b) for a, b in zip((lst, d, s, o), copies[:1] + copies[2:])],
                       id(tup) == id(copies[1]), old == id(lst))

    full(f, t(2))


def test_id_of_a_temporary_breaks_its_address_is_free_after_the_call():
    def f(x):
        a = [1]
        return x + 1, id(a) == id(list(a))

    check(f, t(2), graphs=1, breaks=1, gb_types=["id of traced value"])


# ---- sorting ---------------------------------------------------------------------

class Ordered:
    """Ordered by ``<`` only; each comparison is logged in ``log``."""

    log: list = []

    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        Ordered.log.append((self.v, other.v))
        return self.v < other.v

    def __repr__(self):
        return f"O{self.v}"


class Greater:
    """Ordered by ``>`` only: ``a < b`` is ``b > a``, the reflected operator."""

    def __init__(self, v):
        self.v = v

    def __gt__(self, other):
        return self.v > other.v

    def __repr__(self):
        return f"G{self.v}"


class Fragile(Ordered):
    """A comparison with the value 2 raises."""

    def __lt__(self, other):
        if 2 in (self.v, other.v):
            raise KeyError("fragile")
        return self.v < other.v


def test_sort_of_user_objects_makes_eagers_comparisons_in_eagers_order():
    def f(x):
        Ordered.log.clear()
        got = repr(sorted([Ordered(3), Ordered(1), Ordered(2), Ordered(5), Ordered(4)]))
        lst = [Ordered(2), Ordered(9), Ordered(1)]
        lst.sort(reverse=True)
        return x + 1, got, repr(lst), list(Ordered.log), repr(sorted([Greater(2), Greater(1), Greater(3)]))

    full(f, t(2))


def test_sort_is_stable_also_reversed():
    def f(x):
        pairs = [(1, "b"), (0, "a"), (1, "a"), (0, "b")]
        objs = [Ordered(1), Ordered(0), Ordered(1)]
        by_v = sorted(objs, key=lambda o: o.v, reverse=True)
        return x + 1, (sorted(pairs, key=lambda p: p[0]), sorted(pairs, key=lambda p: p[0], reverse=True),
                       [o is p for o, p in zip(by_v, (objs[0], objs[2], objs[1]))],
                       repr(sorted([(1, Ordered(2)), (1, Ordered(1)), (0, Ordered(5))])))

    full(f, t(2))


def test_a_raising_comparison_leaves_eagers_partial_order():
    def f(x):
        lst = [Fragile(5), Fragile(1), Fragile(3), Fragile(2), Fragile(0)]
        return x + 1, outcome(lst.sort), repr(lst), outcome(lambda: sorted([1, "a"])), outcome(
            lambda: sorted([Ordered(1), 2]))

    full(f, t(2))


def test_a_raising_key_leaves_the_list_unsorted():
    def f(x):
        lst = [3, 1, 2]
        return x + 1, outcome(lambda: lst.sort(key=lambda v: 1 // (v - 2))), lst, outcome(
            lambda: sorted([3, 1], key=lambda v: v.missing))

    full(f, t(2))


def test_a_list_is_empty_while_it_sorts():
    def f(x):
        lst, seen = [3, 1, 2], []
        lst.sort(key=lambda v: (seen.append(list(lst)), v)[1])
        return x + 1, lst, seen

    full(f, t(2))


@pytest.mark.parametrize("write", ["append", "extend", "insert", "setitem"])
def test_a_list_grown_by_its_sort_raises_eagers_value_error(write):
    def grow(lst, v):
        if write == "append":
            lst.append(v)
        elif write == "extend":
            lst += [v, v]
        elif write == "insert":
            lst.insert(0, v)
        else:
            lst[:] = [v]
        return v

    def f(x):
        lst = [3, 1, 2]
        return x + 1, outcome(lambda: lst.sort(key=lambda v: grow(lst, v))), lst

    full(f, t(2))


def test_a_list_grown_by_a_comparison_raises_eagers_value_error():
    class Grows(Ordered):
        def __lt__(self, other):
            box.append(self)
            return self.v < other.v

    box = []

    def f(x):
        box[:] = [Grows(2), Grows(1)]
        return x + 1, outcome(box.sort), repr(box)

    full(f, t(2))


def test_a_list_written_by_its_sort_but_empty_again_breaks():
    def f(x):
        lst = [3, 1, 2]
        lst.sort(key=lambda v: (lst.clear(), v)[1])  # eager: no error (clear allocates nothing)
        return x + 1, lst

    check(f, t(2), graphs=1, breaks=1, gb_types=["list modified during sort"])


def test_cmp_to_key_breaks():
    def f(x):
        return x + 1, sorted([3, 1, 2], key=functools.cmp_to_key(lambda a, b: b - a))

    # (a C function's result: the sort, resumed after the break, meets its key objects)
    check(f, t(2), graphs=1, breaks=2, gb_types=["unsupported call"] * 2)


# ---- the sequence protocols of user objects -----------------------------------------

class OldSequence:
    """Iterable by ``__getitem__`` alone: iteration ends at IndexError."""

    def __getitem__(self, i):
        if i < 3:
            return i * 10
        raise IndexError(i)


class Sized:
    def __len__(self):
        return 3

    def __getitem__(self, i):
        if i >= 3:
            raise IndexError(i)
        return "abc"[i]


class Counter:
    def __init__(self):
        self.i = 0

    def __iter__(self):
        return self

    def __next__(self):
        self.i += 1
        if self.i > 3:
            raise StopIteration
        return self.i


class Iterable:
    def __iter__(self):
        return Counter()


class BadIter:
    def __iter__(self):
        raise ZeroDivisionError("iter")


class BadItem:
    def __getitem__(self, i):
        raise ZeroDivisionError("item")


class Plain:
    pass


@pytest.mark.parametrize("cls", [OldSequence, Sized, Iterable])
def test_user_sequences_everywhere_an_iterable_is_taken(cls):
    def f(x):
        lst = [0]
        lst.extend(cls())
        a, b, c = cls()
        return x + 1, ([v for v in cls()], list(cls()), tuple(cls()), sorted(cls(), reverse=True),
                       sorted(set(cls())), 10 in cls(), 2 in cls(), "b" in cls(), lst, (a, b, c),
                       (0,) + tuple(cls()), "-".join(map(str, cls())), list(enumerate(cls())),
                       list(zip(cls(), cls())), [*cls(), *cls()])

    full(f, t(2))


@pytest.mark.parametrize("cls", [BadIter, BadItem, Plain])
def test_user_objects_that_cannot_be_iterated_raise_eagers_error(cls):
    def f(x):
        return x + 1, [outcome(lambda: list(cls())), outcome(lambda: [v for v in cls()]),
                       outcome(lambda: 1 in cls()), outcome(lambda: tuple(cls())), outcome(lambda: sorted(cls()))]

    full(f, t(2))


class Hinted:
    """Iterable, with a length hint of ``hint``'s kind; each call is logged in ``log``."""

    log: list = []

    def __init__(self, hint):
        self.hint = hint

    def __iter__(self):
        Hinted.log.append("iter")
        return iter([1, 2])

    def __length_hint__(self):
        Hinted.log.append("hint")
        if self.hint == "raises":
            raise KeyError("hint")
        return -1 if self.hint == "negative" else 2


class BadLength(list):
    def __len__(self):
        raise KeyError("len")


@pytest.mark.parametrize("hint", ["fine", "negative", "raises"])
def test_list_tuple_sorted_and_extend_ask_the_length_hint_after_iter(hint):
    def f(x):
        Hinted.log.clear()
        lst = [0]
        got = [outcome(lambda: list(Hinted(hint))), outcome(lambda: tuple(Hinted(hint))),
               outcome(lambda: sorted(Hinted(hint))), outcome(lambda: lst.extend(Hinted(hint))),
               outcome(lambda: [*Hinted(hint)]), outcome(lambda: list(BadLength([1])))]
        return x + 1, got, lst, list(Hinted.log)

    full(f, t(2))


# ---- list and tuple methods at their edges ---------------------------------------------

def test_index_and_count_with_bounds():
    def f(x):
        lst, tup = [1, 2, 1, 3], (1, 2, 1)
        return x + 1, (lst.index(1, 1), lst.index(1, -2), lst.index(1, -100, 100), lst.index(1, 2, 10 ** 30),
                       tup.index(1, 1), tup.index(1, -1), lst.count(1), [1, 1.0, True, 2].count(1),
                       outcome(lambda: lst.index(2, 2)), outcome(lambda: lst.index(3, 0, -1)),
                       outcome(lambda: tup.index(2, 2)), outcome(lambda: [1].index(1, "a")))

    full(f, t(2))


def test_insert_and_pop_at_any_index():
    def f(x):
        lst = [1, 2]
        lst.insert(100, "end")
        lst.insert(-100, "start")
        lst.insert(-1, "before end")
        return x + 1, lst, outcome(lambda: lst.insert(10 ** 30, 0)), outcome(lambda: lst.pop(10 ** 30)), outcome(
            lambda: lst.pop(10)), outcome(lambda: [].pop()), outcome(lambda: lst.insert("a", 0))

    full(f, t(2))


def test_extended_slices():
    def f(x):
        lst = [1, 2, 3, 4, 5]
        lst[::2] = "abc"
        wrong = outcome(lambda: lst.__setitem__(slice(None, None, 2), "ab"))
        gone = list(range(6))
        del gone[::2]
        return x + 1, lst, wrong, gone, lst[::-2], outcome(lambda: lst[::0])

    full(f, t(2))


def test_repetition_and_ordering_of_mixed_items():
    def f(x):
        return x + 1, ([1, 2] * -1, (1,) * -3, -2 * [1], (1, 2) == (1, "a"), [1] < [1, "a"],
                       outcome(lambda: [1, 2] < [1, "a"]), outcome(lambda: (1, 2) >= (1, "a")))

    full(f, t(2))


def test_list_init_called_again():
    def f(x):
        a, b, c = [1, 2, 3], [1, 2, 3], [1, 2, 3]
        a.__init__([5, 6])
        b.__init__()
        c.__init__(c)
        return x + 1, a, b, c, outcome(lambda: a.__init__(1))

    full(f, t(2))
