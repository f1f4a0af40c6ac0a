"""What Python answers about user objects, named tuples and Counters, as
CPython's own semantics tests (test_class, test_collections, test_userdict)
use them inside a whole traced body: a replaced instance ``__dict__``,
``__slots__`` given as a list, ``vars()``/``dir()``/``repr()`` of instances,
namedtuple helpers, and the heapq code under ``Counter.most_common``. Each
test compiles with ``fullgraph=True`` (or counts its break) and compares with eager."""
import collections
import functools
import heapq
import typing

import torch

import bytegraph
from helpers import check, t

full = functools.partial(check, fullgraph=True)


class Plain:
    pass


class Slotted:
    __slots__ = ("a", "b")


class SlottedSub(Slotted):
    __slots__ = ["c"]


class Tally(collections.Counter):
    pass


Pair = collections.namedtuple("Pair", "a b")
Triple = collections.namedtuple("Triple", "a b c", defaults=[3])


class Point(typing.NamedTuple):
    x: int
    y: int = 5

    def total(self):
        return self.x + self.y


def _plain(**attrs):
    obj = Plain()
    obj.__dict__.update(attrs)
    return obj


# ---- an instance __dict__ replaced --------------------------------------------------------

def test_new_dict_of_an_object_made_in_the_trace():
    def f(x):
        o = Plain()
        o.a = 1
        o.__dict__ = {"b": 2}
        o.c = 3
        return x + 1, o.__dict__, hasattr(o, "a"), o.b, vars(o)

    full(f, t(2))


def test_new_dict_is_shared_with_its_other_names():
    def f(x):
        a, b = Plain(), Plain()
        d = {"q": 1}
        a.__dict__ = d
        b.__dict__ = a.__dict__
        a.z = 3
        del b.q
        return x + 1, b.z, d, a.__dict__ is d, b.__dict__ is d, hasattr(a, "q")

    full(f, t(2))


def test_object_with_new_dict_outlives_the_graph():
    def f(x):
        o, d = Plain(), {"k": 1}
        o.__dict__ = d
        o.m = 2
        return x + 1, o, d

    out = full(f, t(2))
    assert out[1].__dict__ is out[2] and out[2] == {"k": 1, "m": 2}


def test_new_dict_of_a_dict_subclass_breaks():
    def f(x):
        o = Plain()
        o.__dict__ = collections.OrderedDict(k=1)  # stores then skip OrderedDict's own order
        o.m = 2
        return x + 1, list(o.__dict__), o.m

    check(f, t(2), graphs=1, breaks=1, gb_types=["unsupported attribute store"])


def test_new_dict_must_be_a_dict():
    def f(x):
        o = Plain()
        try:
            o.__dict__ = [("a", 1)]
        except TypeError as e:
            return x + 1, str(e)

    full(f, t(2))


def test_new_dict_of_an_object_from_outside_breaks():
    def f(x, o):
        y = x + 1
        o.__dict__ = {"b": 2}
        return y * 2, o.b

    check(f, t(2), _plain(a=1), graphs=2, breaks=1, gb_types=["unsupported attribute store"])


# ---- __slots__ ----------------------------------------------------------------------------

def test_class_statement_with_slots_as_list_str_or_tuple():
    def f(x):
        class L:
            __slots__ = ["a", "b"]

        class S:
            __slots__ = "a"

        class T:
            __slots__ = ("a", "__dict__")

        s, u, w = L(), S(), T()
        s.a, u.a, w.a, w.extra = 1, 2, 3, 4
        try:
            s.c = 2
        except AttributeError as e:
            stored = str(e)
        try:
            s.b
        except AttributeError as e:
            unset = str(e)
        return x + 1, s.a, u.a, stored, unset, hasattr(s, "__dict__"), hasattr(s, "b"), w.__dict__, w.a

    full(f, t(2))


def test_slot_deletion():
    def f(x):
        class S:
            __slots__ = ("a",)

            def __init__(self):
                self.a = 4

        s = S()
        del s.a
        try:
            del s.a
        except AttributeError as e:
            again = (type(e).__name__, str(e))
        return x + 1, hasattr(s, "a"), again

    full(f, t(2))


def test_slotted_objects_from_outside_and_their_subclasses():
    def f(x, s, sub):
        s.a = 1
        del s.a
        sub.c = 3
        try:
            sub.z = 1
        except AttributeError as e:
            msg = str(e)
        return x + 1, hasattr(s, "a"), sub.c, msg, SlottedSub.__slots__

    full(f, t(2), Slotted(), SlottedSub())


def _slotted(**values):
    s = Slotted()
    for name, value in values.items():
        setattr(s, name, value)
    return s


def test_whether_a_slot_of_an_object_from_outside_is_set_is_guarded():
    def f(x, s):
        try:
            return x + s.a, hasattr(s, "b")
        except AttributeError as e:
            return x - 1, str(e), hasattr(s, "b")

    check(f, calls=[(t(2), _slotted()), (t(2), _slotted(a=1.5)), (t(2), _slotted(a=2.5, b=0))], graphs=3)


def test_deleting_a_slot_of_an_object_from_outside():
    def f(x, s):
        del s.a
        return x + 1, hasattr(s, "a")

    check(f, calls=[(t(2), _slotted(a=1)), (t(2), _slotted(a=2))], graphs=1)
    check(f, t(2), _slotted(), graphs=0, breaks=1, gb_types=["attribute delete"], raises=AttributeError)


def test_slotted_object_made_in_the_trace_outlives_the_graph():
    def f(x):
        s = SlottedSub()
        s.a, s.c = 1, 2
        return x + 1, s

    out = full(f, t(2))
    assert (out[1].a, out[1].c, hasattr(out[1], "b")) == (1, 2, False)


# ---- vars, dir, repr, hash ----------------------------------------------------------------

def test_vars_of_objects():
    def f(x, o):
        n = Plain()
        n.p = 1
        v = vars(n)
        v["w"] = 2
        try:
            vars(1)
        except TypeError as e:
            of_int = str(e)
        try:
            vars(Slotted())
        except TypeError as e:
            of_slotted = str(e)
        return x + 1, n.w, vars(n), vars(o), of_int, of_slotted

    full(f, t(2), _plain(a=1, b=[2]))


def test_dir_of_objects_and_classes():
    def f(x, o):
        n = Plain()
        n.zz = 1
        return x + 1, dir(n), dir(o), dir(Plain), dir(SlottedSub())

    full(f, t(2), _plain(a=1))


def test_default_repr_and_hash_of_an_object_from_outside():
    def f(x, o):
        r = repr(o)
        return x + 1, r.startswith("<test_object_semantics.Plain object at 0x"), str(o) == r, hash(o) == hash(o)

    full(f, t(2), Plain())
    o = Plain()
    assert bytegraph.compile(f, fullgraph=True, backend="eager")(t(2), o)[1:] == f(t(2), o)[1:]

    def g(x, o):
        return x + 1, repr(o), hash(o)

    assert bytegraph.compile(g, fullgraph=True, backend="eager")(t(2), o)[1:] == (repr(o), hash(o))


def test_default_repr_of_an_object_made_in_the_trace_is_not_guessed():
    def f(x):
        o = Plain()
        r = repr(o)  # its address is known only once the object exists
        return x + 1, r.startswith("<")

    check(f, t(2), graphs=1, breaks=1, gb_types=["unsupported method call"])


def test_object_sentinels():
    def f(x):
        s, u = object(), object()
        try:
            object(1)
        except TypeError as e:
            msg = str(e)
        try:
            s.a = 1
        except AttributeError as e:
            store = str(e)
        return x + 1, s is s, s is u, s == u, {s: 1}[s], max([], default=s) is s, msg, store

    full(f, t(2))


# ---- named tuples -------------------------------------------------------------------------

def test_namedtuple_helpers():
    def f(x):
        p = Pair(1, 2)
        return (x + 1, p._asdict(), p._replace(a=5), Pair._make([3, 4]), Pair._fields, p.__getnewargs__(),
                Triple(1, 2), Triple._field_defaults, Point(1).total(), Point(1, 2).__getnewargs__())

    full(f, t(2))


def test_namedtuple_fields_are_read_only():
    def f(x):
        p = Pair(1, 2)
        try:
            p.a = 3
        except AttributeError as e:
            store = str(e)
        try:
            del p.b
        except AttributeError as e:
            delete = str(e)
        try:
            p.other = 1
        except AttributeError as e:
            other = str(e)
        return x + 1, store, delete, other

    full(f, t(2))


def test_namedtuple_methods_know_their_module():
    def f(x):
        g = Pair.__new__.__globals__
        return x + 1, "Pair" in g, Pair._make.__globals__["__name__"], Pair._make.__module__, Pair.__module__

    full(f, t(2))


# ---- Counter ------------------------------------------------------------------------------

def test_counter_most_common_and_friends():
    def f(x):
        c = collections.Counter("abracadabra")
        return x + 1, c.most_common(1), c.most_common(2), c.most_common(), sorted(c.elements()), c.total()

    full(f, t(2))


def test_counter_arithmetic_and_updates():
    def f(x):
        a, b = collections.Counter(a=3, b=1), collections.Counter(a=1, b=2, c=-1)
        c = collections.Counter("abc")
        c.subtract("ab")
        c.subtract({"c": 3})
        c.update({"z": 2}, y=1)
        c.update("zz")
        return x + 1, a + b, a - b, a | b, a & b, +b, -b, c, a <= b, a == b

    full(f, t(2))


def test_counter_subclass():
    def f(x):
        a, b = Tally(a=2), Tally(a=1, z=3)
        a.update("b")
        return x + 1, a + b, type(a - b).__name__, a.most_common(1), b.most_common(2)

    full(f, t(2))


# ---- heapq ------------------------------------------------------------------------------------

def test_heapq_functions():
    def f(x, data):
        h = list(data)
        heapq.heapify(h)
        heapq.heappush(h, 4)
        popped, replaced, pushed = heapq.heappop(h), heapq.heapreplace(h, 7), heapq.heappushpop(h, -1)
        return (x + 1, h, popped, replaced, pushed, heapq.nsmallest(3, data), heapq.nlargest(3, data),
                heapq.nsmallest(2, data, key=lambda v: -v), list(heapq.merge([1, 4], [2, 3])))

    full(f, t(2), [5, 1, 9, 3, 3, 8, 0, 7, 2, 6, 4])


def test_heapq_errors():
    def f(x):
        out = []
        for call in (lambda: heapq.heappop([]), lambda: heapq.heapify(3), lambda: heapq.heappush((), 1),
                     lambda: heapq.heapreplace([], 1)):
            try:
                call()
            except (IndexError, TypeError) as e:
                out.append((type(e).__name__, str(e)))
        return x + 1, out

    full(f, t(2))


def test_heapq_compares_like_eager():
    class Item:
        def __init__(self, v, log):
            self.v, self.log = v, log

        def __lt__(self, other):
            self.log.append((self.v, other.v))
            return self.v < other.v

    def f(x, values):
        log = []
        h = [Item(v, log) for v in values]
        heapq.heapify(h)
        heapq.heappop(h)
        return x + 1, [i.v for i in h], log

    full(f, t(2), [4, 2, 2, 8, 1, 5])


class _Name(str):
    pass


class _Plain:
    pass


class _Hooked:
    def __getattr__(self, name):
        return type(name).__name__


def test_str_subclass_instances_as_attribute_names():
    def f(x, outside):
        a = _Plain()
        a.x, a.y = 1, 2
        found = (getattr(a, _Name("x")), hasattr(a, _Name("z")), getattr(a, _Name("q"), 5), a.__dict__[_Name("y")],
                 getattr(outside, _Name("msg")), outside.__dict__[_Name("msg")])
        delattr(a, _Name("x"))
        return x + 1, found, a.__dict__

    outside = _Plain()
    outside.msg = "123"
    check(f, t(2), outside, fullgraph=True)


def test_str_subclass_name_handed_to_python_hooks_or_stored_breaks():
    def hooked(x):
        return x + 1, getattr(_Hooked(), _Name("nope"))

    def stored(x):
        a, y = _Plain(), x + 1
        setattr(a, _Name("k"), 1)
        return y

    check(hooked, t(2), graphs=1, breaks=1, gb_types=["non-constant value"])
    check(stored, t(2), graphs=1, breaks=1, gb_types=["str subclass attribute name"])
