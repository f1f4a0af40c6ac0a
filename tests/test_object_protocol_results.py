"""What Python makes of the results of a user class's special methods on
objects made in the trace (truth, hashing, membership, the sequence protocol,
integer conversion), and identity of values made in the trace, each compared
with eager with ``fullgraph=True`` (the kinds of issue 26, found with CPython's
semantics tests)."""
import contextlib
import functools
import sys

import pytest

import bytegraph

from helpers import beside_tensor, check, check_scenario, t

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


# ---- the sequence protocol: iterating an object with __getitem__ and no __iter__ --------------

class Indexed:
    """A sequence by ``__getitem__`` alone; counts the calls."""

    def __init__(self, n, stop=IndexError):
        self.n = n
        self.stop = stop
        self.asked = []

    def __getitem__(self, i):
        self.asked.append(i)
        if i >= self.n:
            raise self.stop(i)
        return i * 10


class IterBlocked(Indexed):
    __iter__ = None


class ContainsBlocked(Indexed):
    __contains__ = None


class Counted:
    """Iterable by a generator ``__iter__``; counts the items given."""

    def __init__(self):
        self.given = 0

    def __iter__(self):
        for i in range(5):
            self.given += 1
            yield i


def _unpack(s):
    a, b, c = s
    return a, b, c


@pytest.mark.parametrize("consume", [list, tuple, set, sorted, sum, _unpack, lambda s: [x + 1 for x in s],
                                     lambda s: list(enumerate(s)), lambda s: 20 in s, lambda s: 25 in s,
                                     lambda s: next(iter(s)), lambda s: dict.fromkeys(s)])
@pytest.mark.parametrize("stop", [IndexError, StopIteration])
def test_object_with_getitem_only_is_iterated_by_index(consume, stop):
    def f(x):
        s = Indexed(3, stop)
        return x + 1, consume(s), s.asked

    full(f, t(2))


def test_sequence_protocol_error_other_than_index_error_propagates():
    full(beside_tensor(lambda: list(Indexed(2, KeyError)), KeyError), t(2))


@pytest.mark.parametrize("make", [IterBlocked, Plain, EqOnly])
def test_iterating_a_non_iterable_object_raises_eagers_type_error(make):
    full(beside_tensor(lambda: list(make()), TypeError), t(2))
    full(beside_tensor(lambda: 1 in make(), TypeError), t(2))


def test_contains_blocked_raises_eagers_type_error():
    full(beside_tensor(lambda: 1 in ContainsBlocked(3), TypeError), t(2))


def test_membership_by_iteration_stops_at_the_first_match():
    def f(x):
        s = Indexed(5)
        c = Counted()
        return x + 1, 10 in s, s.asked, 1 in c, c.given

    full(f, t(2))


def test_sequence_iterator_left_part_way_is_rebuilt_at_its_position():
    def f(x):
        s = Indexed(4)
        it = iter(s)
        next(it)
        return x + 1, it, type(it).__name__

    _, it, name = full(f, t(2))
    assert list(it) == [10, 20, 30] and name == "iterator"


# ---- identity of values made in the trace: id() and `is` -----------------------------------

def _in_place(op):
    def f(x):
        made = {"list": [1, 2], "dict": {1: 2}, "set": {1}, "object": Plain()}
        ids = {k: id(v) for k, v in made.items()}
        made["list"] *= 2
        made["list"] += [3]
        made["dict"] |= {3: 4}
        made["set"] |= {2}
        made["set"] -= {1}
        return x + 1, {k: op(id(v), ids[k]) for k, v in made.items()}
    return f


@pytest.mark.parametrize("op", [lambda a, b: a == b, lambda a, b: a != b])
def test_in_place_operators_keep_the_identity_of_an_object_made_in_the_trace(op):
    full(_in_place(op), t(2))


def test_ids_of_distinct_live_objects_made_in_the_trace_differ():
    def f(x):
        a, b = [], []
        c, d = Plain(), Plain()
        return x + 1, id(a) == id(b), id(a) != id(b), id(c) == id(d), id(a) == id(a)

    full(f, t(2))


def test_id_of_an_object_made_in_the_trace_escapes_as_its_real_id():
    def f(x):
        made = [1]
        return x + 1, made, id(made)

    _, made, ident = bytegraph.compile(f, backend="eager", fullgraph=True)(t(2))
    assert ident == id(made)


def _id_order(x):
    a, b = [], [1]
    return x + 1, (id(a) < id(b)) in (True, False)  # the order of addresses


def _id_arithmetic(x):
    a = []
    return x + 1, id(a) % 1 == 0


def _id_key(x):
    a = []
    return x + 1, {id(a): 1}[id(a)] == 1


def _id_of_temporary(x):
    a = []
    return x + 1, id(a) == id([])  # the second list dies with the call: its address is free


@pytest.mark.parametrize("f, breaks", [(_id_order, 1), (_id_arithmetic, 1), (_id_of_temporary, 1),
                                       (_id_key, 2)])  # (after the break, the second id() is of an input list)
def test_reading_an_id_the_trace_cannot_know_breaks(f, breaks):
    check(f, t(2), graphs=1, breaks=breaks)


def test_tuple_identities_follow_cpython():
    def f(x):
        t = tuple(range(3))
        u = (x, 1)
        e = tuple()
        return x + 1, (t * 1 is t, t + () is t, () + t is t, t[:] is t, t[0:10] is t, tuple(t) is t,
                       id(t) == id(t * 1), t[:2] is t, e is tuple(), t * 0 is e, t[3:] is e, t * -1 is e,
                       u * 1 is u, u + () is u, u[:] is u, (u + (2,)) is not u, t is not t + (3,),
                       t + (3,) is not t + (4,))

    full(f, t(2))


def test_tuples_of_equal_items_made_in_the_trace_break_on_identity():
    def f(x):
        a = (1, 2)
        b = tuple([1, 2])
        return x + 1, a is b

    check(f, t(2), graphs=1, breaks=1)


# ---- int() of user objects, and unary operators of builtin-based objects ---------------------

def _converting(dunder, value):
    return type("Converting", (), {dunder: lambda self: value})


class IndexedInt(int):
    def __index__(self):
        return 42


class BadIndexInt(int):
    def __index__(self):
        return 42.0


class OwnInt(int):
    def __int__(self):
        return 42


class StrSub(str):
    pass


class IntBlocked:
    __int__ = None


@pytest.mark.parametrize("make", [
    _converting("__int__", 3), _converting("__index__", -4), _converting("__int__", 2.5),
    _converting("__index__", "7"),
    lambda: IndexedInt(7), lambda: BadIndexInt(), lambda: OwnInt(7), lambda: StrSub("12"), lambda: StrSub("x"),
    Plain, IntBlocked,
])
def test_int_of_a_user_object_is_eagers(make):
    full(beside_tensor(lambda: int(make()), (TypeError, ValueError)), t(2))


class Neg(int):
    pass


class FloatSub(float):
    pass


@pytest.mark.parametrize("op", [lambda v: -v, lambda v: +v, abs, lambda v: ~v if isinstance(v, int) else v])
@pytest.mark.parametrize("make", [lambda: Neg(5), lambda: Neg(-3), lambda: FloatSub(-2.5)])
def test_unary_operator_of_a_builtin_based_object_is_its_bases(op, make):
    def f(x):
        r = op(make())
        return x + 1, r, type(r)

    full(f, t(2))


# ---- a list's in-place operators called as methods -------------------------------------------

@pytest.mark.parametrize("call", [
    lambda u: u.__iadd__([1, 2]) is u, lambda u: u.__iadd__("ab") is u, lambda u: u.__iadd__(None),
    lambda u: u.__imul__(3) is u, lambda u: u.__imul__(0) is u, lambda u: u.__imul__("x"),
    lambda u: list.__iadd__(u, (5,)) is u,
])
def test_list_in_place_dunder_called_as_a_method(call):
    def f(x, u):
        made = [7]
        try:
            return x + 1, call(u), u, call(made), made
        except TypeError as e:
            return x, str(e), u, made

    full(f, t(2), [0, 9])


# ---- eval() of a constant string ----------------------------------------------------------------

@pytest.mark.parametrize("text", ["False", "True", "None", " 42", "-2.5", "1+2j", "(1, 'a', b'b')", "[1, [2]]",
                                  "{'a': 1, 'a': 2}", "{1, 2}", "()", "...", "-0.0", repr("é\n")])
def test_eval_of_a_literal_string_is_its_value(text):
    def f(x):
        value = eval(text)
        return x + 1, value, type(value)

    full(f, t(2))


@pytest.mark.parametrize("text", ["~False", "len([])", "set()", "x", "f'{1}'", "1 +", "[i for i in ()]"])
def test_eval_of_code_breaks(text):
    def f(x):
        try:
            return x + 1, eval(text)
        except (NameError, SyntaxError) as e:
            return x, type(e).__name__

    check(f, t(2), graphs=1, breaks=1, gb_types=["eval of code"])


# ---- sys.set_int_max_str_digits: the interpreter's limit switched in the trace ----------------

@contextlib.contextmanager
def _int_digits(n):
    previous = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(n)
        yield
    finally:
        sys.set_int_max_str_digits(previous)


def _switching_limit(x):
    out = [sys.get_int_max_str_digits()]
    with _int_digits(0):
        out.append(sys.get_int_max_str_digits())
        out.append(len(str(int("1" * 5000))))
    out.append(sys.get_int_max_str_digits())
    try:
        int("1" * 5000)
    except ValueError as e:
        out.append(str(e))
    sys.set_int_max_str_digits(3000)  # left set: the code after the graph sets it too
    out.append(sys.get_int_max_str_digits())
    try:
        sys.set_int_max_str_digits(5)
    except ValueError as e:
        out.append(str(e))
    return x + 1, out


def test_int_max_str_digits_switched_in_the_trace_is_seen_by_folds_and_replayed():
    def run(compile):
        compiled = compile(_switching_limit)
        results = []
        for limit in (2048, 2048, 4000):  # a changed entry value recompiles
            with _int_digits(limit):
                results.append((compiled(t(2))[1], sys.get_int_max_str_digits()))
        return results

    check_scenario(run, graphs=2, breaks=0, fullgraph=True)


# ---- str()/repr() of builtin-based objects, hashes made of ids ----------------------------------

class ListSubRepr(list):
    pass


@pytest.mark.parametrize("make", [lambda: Neg(5), lambda: Neg(-10 ** 30), lambda: FloatSub(2.5), lambda: StrSub("a"),
                                  lambda: ListSubRepr([1, "b"]), lambda: TupleSub((1,)), lambda: Neg(10 ** 5000)])
@pytest.mark.parametrize("fn", [str, repr])
def test_str_and_repr_of_a_builtin_based_object_are_its_bases(make, fn):
    full(beside_tensor(lambda: fn(make()), ValueError), t(2))


class HashedById:
    def __hash__(self):
        return hash(id(self))


def test_hash_computed_from_an_id_is_made_after_the_graph():
    def f(x):
        obj = HashedById()
        hash(obj)  # discarded, as in a test of the call
        return x + 1, obj, hash(obj), hash(hash(obj))

    _, obj, h, hh = bytegraph.compile(f, backend="eager", fullgraph=True)(t(2))
    assert h == hash(obj) and hh == h


# ---- ordering of lists and tuples, item by item as list_richcompare runs --------------------------

class ClearsOther:
    def __lt__(self, other):
        other.clear()
        return NotImplemented


class Ordered:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, Ordered) and self.v == other.v

    def __lt__(self, other):
        return self.v < other.v


@pytest.mark.parametrize("compare", [
    lambda x: [x, 1] < [x, 2], lambda x: (x, 3) >= (x, 3), lambda x: [x] <= [x, 0], lambda x: (1, x) > (0,),
    lambda x: [Ordered(1), Ordered(2)] < [Ordered(1), Ordered(3)], lambda x: [Ordered(1)] > [Ordered(1)],
    lambda x: [Plain()] < [Plain()], lambda x: [1, "a"] < [1, 2], lambda x: [x] < (x,),
    lambda x: Plain() < [1], lambda x: [1] >= Plain(),
])
def test_list_and_tuple_ordering_compares_item_by_item(compare):
    def f(x):
        try:
            return x + 1, compare(x)
        except TypeError as e:
            return x, str(e)

    full(f, t(2))


def test_ordering_whose_item_clears_the_operand_raises_eagers_type_error():
    def f(x):
        a = [[ClearsOther()]]
        try:
            a[0] < a
        except TypeError as e:
            return x + 1, str(e), a
        return x, a

    full(f, t(2))


# ---- list.index of a value whose repr holds its address -----------------------------------------

NEVER = type("NeverEqual", (), {"__eq__": lambda self, other: False})()


def test_index_not_found_of_an_object_with_the_default_repr_raises_in_the_trace():
    def f(x):
        try:
            [NEVER, Plain()].index(Plain())
        except ValueError:
            return x + 1
        return x

    full(f, t(2))


def test_reading_the_message_of_such_a_value_error_breaks():
    def f(x):
        never = type(NEVER)()  # made in the trace: its address is known only when it exists
        try:
            [Plain()].index(never)
        except ValueError as e:
            return x + 1, str(e) == repr(never) + " is not in list"
        return x, None

    check(f, t(2), graphs=0, breaks=1, gb_types=["str of traced value"])  # (inside the try: all natively)


def test_the_message_of_such_a_value_error_of_an_object_from_outside_is_eagers():
    def f(x):
        try:
            [Plain()].index(NEVER)
        except ValueError as e:
            return x + 1, str(e) == repr(NEVER) + " is not in list"
        return x, None

    full(f, t(2))  # NEVER's address is guarded by its identity


class ClearsVictim:
    def __init__(self, victim):
        self.victim = victim

    def __eq__(self, other):
        del self.victim[:]
        return False


@pytest.mark.parametrize("method", ["index", "count"])
def test_search_whose_eq_empties_the_list_stops_as_eager(method):
    def f(x):
        a = []
        a[:] = [ClearsVictim(a) for _ in range(5)]
        try:
            return x + 1, getattr(a, method)(None), a
        except ValueError as e:
            return x, str(e), a

    full(f, t(2))
