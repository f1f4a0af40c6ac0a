"""defaultdicts, dicts keyed by objects, and user subclasses of the builtin
containers, traced whole (``fullgraph=True``) and compared with eager (issue 17)."""
import collections
import operator
import typing

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter
from tests.helpers import check, t


# ---- defaultdict ---------------------------------------------------------------------------

@pytest.mark.parametrize("factory", [list, set, dict, tuple, lambda: [0]], ids=["list", "set", "dict", "tuple", "lambda"])
def test_defaultdict_keyed_by_a_parameter_is_mutated_in_place(factory):
    weight = torch.nn.Parameter(torch.ones(2))

    def make():
        d = collections.defaultdict(factory)
        d["a"], d[weight] = 1, 2
        return d

    def fn(d, x):
        d["a"] = x + 1
        d[weight] = d[weight] + 1
        return x * 2, d["missing"]

    # a factory: both sides' dicts are keyed by the same parameter; check compares them after the call
    check(fn, make=lambda: (make(), t(3)), fullgraph=True)


def test_dict_keyed_by_a_tensor_guards_the_key_by_identity():
    def fn(d, x):
        return sum(k.sum() * v for k, v in d.items() if isinstance(k, torch.Tensor)) + x * d["s"]

    keys, x = [t(2), t(2)], t(1)
    # an equal-shaped but different tensor key: a recompile, not a stale answer (factories: the keys are
    # the very tensors, by identity)
    check(fn, calls=[lambda: ({keys[0]: 2, "s": 0}, x), lambda: ({keys[1]: 2, "s": 0}, x)], graphs=2)


def test_defaultdict_made_in_the_trace_and_filled_through_a_closure():
    def fn(x):
        groups = collections.defaultdict(list)

        def add(key, value):
            groups[key].append(value)

        add("a", x)
        add("a", x + 1)
        add("b", 3)
        return groups, groups.default_factory, len(groups["a"])

    check(fn, t(2), fullgraph=True)


def test_default_factory_of_a_captured_defaultdict():
    table = collections.defaultdict(lambda: 5, z=1)

    def fn(x):
        factory = table.default_factory
        return x + table["q"] + factory()

    check(fn, t(2), fullgraph=True)
    assert dict(table) == {"z": 1, "q": 5}


def test_default_factory_stored_and_missing_called_directly():
    def fn(x):
        late = collections.defaultdict()
        late.default_factory = list  # stored after construction
        late["a"].append(x)
        counts = collections.defaultdict(int)
        made = counts.__missing__("k")  # the C __missing__ called as a method
        try:
            collections.defaultdict().__missing__(3)
        except KeyError as e:
            missing = e.args
        return x + 1, late, late.default_factory, counts, made, missing

    check(fn, t(2), fullgraph=True)


class Tally(collections.defaultdict):
    def total(self):
        return sum(self.values())


def test_defaultdict_subclass_attributes_are_no_custom_getattribute():
    tally = Tally(int, a=1, b=2)

    def fn(x):
        return x * tally.total(), tally.default_factory

    check(fn, t(2), fullgraph=True)


# ---- user subclasses of tuple and list ---------------------------------------------------------

class CheckedTuple(tuple):
    def doubled_length(self):
        return len(self) * 2

    def __contains__(self, value):
        self.checked = True  # the override runs (and its store is replayed on the real object)
        return super().__contains__(value)


class GuardedList(list):
    def doubled_length(self):
        return len(self) * 2

    def __contains__(self, value):
        self.checked = True
        return super().__contains__(value)

    def __getitem__(self, index):
        raise RuntimeError("guards and rebuilding must not call an overridden __getitem__")


def test_tuple_subclass_input_runs_its_overrides_and_base_methods():
    def fn(x, tup):
        y = x.cos() if 3 in tup else x.sin()
        return y * tup.doubled_length(), len(tup), bool(tup), list(tup)

    out = check(fn, make=lambda: (t(3), CheckedTuple([1, 2, 3])), fullgraph=True)  # and each side's tup.checked
    assert out[1] == 3


def test_list_subclass_input_is_mutated_in_place_without_its_getitem():
    def fn(x, lst):
        y = x.cos() if 3 in lst else x.sin()
        lst.append(4)
        lst.extend([5])
        return y * lst.doubled_length(), lst

    # the result is each side's own list; the second call's guards read the items through list.copy,
    # not the override
    x = t(3)
    check(fn, calls=[lambda: (x, GuardedList([1, 2, 3]))] * 2, fullgraph=True)


def test_list_subclass_slice_is_a_plain_list():
    class Numbers(list):
        pass

    def fn(x, lst):
        lst.append(4)
        part = lst[1:3]
        return x * sum(part), type(part) is list, lst + [0], lst * 2

    check(fn, t(2), Numbers([1, 2, 3]), fullgraph=True)


class Pair(tuple):
    pass


class Fixed(tuple):
    def __new__(cls, *args, **kwargs):
        return super().__new__(cls, [1, 2, 3])


@pytest.mark.parametrize("make", [lambda: Pair([1, 2, 3]), lambda: Fixed(), lambda: Fixed(7, key=8)],
                         ids=["plain", "custom_new", "custom_new_with_args"])
def test_tuple_subclass_made_in_the_trace_is_rebuilt(make):
    def fn(x):
        tup = make()
        y = x.cos() if 3 in tup else x.sin()
        return y, tup, tup[0] + tup[-1]

    out = check(fn, t(3), fullgraph=True)
    assert type(out[1]) is type(make())


@pytest.mark.parametrize("base", ["tuple", "list"])
def test_base_new_of_a_class_argument(base):
    class Mine(tuple if base == "tuple" else list):
        pass

    def fn(x, klass):
        x = x * 2
        if base == "tuple":
            made = tuple.__new__(klass, [x, 1])
        else:
            made = list.__new__(klass)
            made.append(x)
        if isinstance(made, Mine):
            made.tag = 3
        return made

    for klass in (Mine, tuple if base == "tuple" else list):
        out = check(fn, t(2), klass, fullgraph=True)
        assert type(out) is klass
        assert getattr(out, "tag", None) == (3 if klass is Mine else None)


def test_tuple_subclass_equality_and_operators_follow_tuple():
    class Row(tuple):
        def __new__(cls, items):
            return super().__new__(cls, items)

    def fn(x, a, b):
        joined = a + b
        return (x + 1 if a != b else x - 1, a == b, a == (1, -1), a < Row([2]), type(joined) is tuple,
                joined, a * 2, 2 * a)

    check(fn, t(1), Row([1, -1]), Row([1, -1]), fullgraph=True)
    check(fn, t(1), Row([1, -1]), Row([1, 5]), fullgraph=True)


# ---- namedtuple subclasses -----------------------------------------------------------------

class Fields(typing.NamedTuple):
    a: torch.Tensor
    b: torch.Tensor


class Summed(Fields):
    def __new__(cls, a, b):
        return super().__new__(cls, a, b)

    def __add__(self, other):
        return Summed(self.a + other.a, self.b + other.b)


T = typing.TypeVar("T")


class GenericFields(typing.NamedTuple, typing.Generic[T]):
    first: T
    second: T


class PlainSub(Fields):
    pass


class GenericSub(GenericFields[T]):
    pass


def test_namedtuple_subclass_with_new_and_add_reads_fields_through_tuplegetters():
    def fn(p, q):
        return p + q

    out = check(fn, Summed(t(4), t(2, 8)), Summed(t(1), t(2, 1)), fullgraph=True)
    assert type(out) is Summed


def test_namedtuple_helpers_on_a_subclass_with_its_own_new():
    def fn(x, p):
        return (p._replace(b=x), p._asdict(), p._fields, len(p), p[0] * 2, Summed._make([x, x]), Summed(x, x),
                p.a + p.b)

    out = check(fn, t(1), Summed(t(2), t(2)), fullgraph=True)
    assert type(out[0]) is type(out[5]) is Summed


@pytest.mark.parametrize("cls", [PlainSub, GenericSub])
def test_attributes_on_a_namedtuple_subclass_instance(cls):
    def fn(a, b):
        p = cls(a, b)
        p.x = a
        p.y = b
        p.z = b
        p.z = a
        return hasattr(p, "x"), hasattr(p, "w"), p.x + p.y, p.z, p

    out = check(fn, t(2), t(2), fullgraph=True)
    assert out[4].z is not None and type(out[4]) is cls


def test_setting_a_namedtuple_field_raises_as_eager():
    def fn(a, b):
        p = PlainSub(a, b)
        try:
            p.a = b
        except AttributeError as e:
            return a, type(e), str(e)
        return b, None

    # the field's property has no setter: eager's AttributeError is raised in the trace (no break)
    check(fn, t(1), t(1), graphs=0, breaks=0)


def test_namedtuple_keyword_fields_and_defaults():
    Triple = collections.namedtuple("Triple", ["x", "y", "xy"], defaults=(None, 1, None))

    def fn(a, b):
        tmp = Triple(a, xy=b)
        return Triple(tmp.x, tmp[1], tmp.xy + b), Triple._fields, Triple._field_defaults, Triple(y=2)

    check(fn, t(2), t(2), fullgraph=True)


def test_namedtuple_construction_errors_are_eager_type_errors():
    Two = collections.namedtuple("Two", "a b")

    def fn(x, which):
        try:
            Two(x, c=1) if which else Two(x)
        except TypeError:
            return x + 1
        return x

    for which in (True, False):
        _ = check(fn, t(1), which, fullgraph=True)


def test_fx_immutable_list_mutation_raises_type_error_in_the_trace():
    def fn(inputs, x):
        frozen = torch.fx.immutable_collections.immutable_list(inputs)
        try:
            frozen.append(x)
        except TypeError as e:
            return [v * 2 for v in frozen], type(frozen), "mutation" in str(e)
        return None

    check(fn, [t(2), t(2)], t(2), fullgraph=True)


def test_tuple_subclass_with_its_own_iter_unpacks_in_its_order():
    Pt = collections.namedtuple("Pt", "a b")

    class Swapped(Pt):
        __slots__ = ()

        def __iter__(self):
            return iter((self.b, self.a))

    def fn(x, given):
        first, second = given
        return first, second * 2, given[0], given.a

    check(fn, make=lambda: (t(1), Swapped(t(2), 3)), fullgraph=True)  # deepcopy rebuilds it through its __iter__


# ---- builtins on user objects ----------------------------------------------------------------

def test_str_of_an_object_with_its_own_str():
    class Named:
        def __str__(self):
            return "ok"

    def fn(x):
        return x + 1, str(Named()), f"{Named()}!"

    check(fn, t(2), fullgraph=True)


class Plain:
    pass


def test_str_of_an_object_with_the_default_repr_names_its_address():
    def fn(x):
        made = Plain()
        return x + 1, made, str(made)

    # not check: the string holds the object's address, which differs between two runs by design
    cnt = CompileCounter()
    _, made, text = bytegraph.compile(fn, backend=cnt, fullgraph=True)(t(2))
    assert text == object.__repr__(made) and cnt.frame_count == 1  # eager's string for that very object


def test_reading_a_default_repr_string_in_the_trace_breaks_instead_of_guessing():
    def fn(x):
        a = Plain()
        return x + 1, str(a) == str(a), str(a).startswith("<")

    # after the break the object exists: the resumed frame reads eager's string of it
    check(fn, calls=[(t(2),), (t(2),)], graphs=1, breaks=1, gb_types=["unsupported builtin call"])


class Shadowing(type):
    @property
    def __dict__(cls):
        return {"shadow": 1}

    @property
    def __mro__(cls):
        return ("shadow",)


class Shadowed(metaclass=Shadowing):
    marker = 7


def test_metaclass_shadowing_mro_and_dict_is_read_as_eager_reads_it():
    def fn(x):
        return x + Shadowed.__dict__["shadow"] + len(Shadowed.__mro__) + Shadowed.marker

    check(fn, torch.tensor(1.0), fullgraph=True)


def test_type_descriptors_called_directly_bypass_a_metaclass_shadow():
    def fn(x):
        namespace = type.__dict__["__dict__"].__get__(Shadowed)
        mro = type.__dict__["__mro__"].__get__(Shadowed)
        return x + namespace["marker"] + len(mro)

    check(fn, torch.tensor(1.0), fullgraph=True)


class CGetter:
    value = property(operator.attrgetter("_value"))  # a getter written in C, like a pybind11 property's

    def __init__(self, v):
        self._value = v


def test_property_with_a_c_getter_is_read_natively_and_guarded():
    def fn(x, obj):
        return x.cos() if obj.value else x.sin()

    x = t(3)  # the value read is guarded: False recompiles
    check(fn, calls=[(x, CGetter(flag)) for flag in (True, False, True)], fullgraph=True, graphs=2)


# ---- dict subclasses -----------------------------------------------------------------------------

class CountingDict(dict):
    def total(self):
        return sum(self.values())

    def __setitem__(self, key, value):
        self.stores = getattr(self, "stores", 0) + 1  # replaying the items must not run this again
        super().__setitem__(key, value)


def test_dict_subclass_input_is_mutated_through_its_override_once():
    def fn(x, d):
        d["z"] = 5
        dict.__setitem__(d, "w", 1)
        return x * d.total(), "z" in d, d == {"a": 1, "z": 5, "w": 1}, d != {}, len(d), sorted(d.items())

    check(fn, make=lambda: (t(2), CountingDict(a=1)), fullgraph=True)  # check compares d and d.stores


def test_dict_subclass_made_in_the_trace_compares_as_a_dict():
    class Totals(dict):
        def total(self):
            return sum(self.values())

    def fn(x):
        d = Totals(a=1, b=2)
        d["c"] = 3
        return x * d.total(), "a" in d, d == {"a": 1, "b": 2, "c": 3}, len(d), list(d), d

    out = check(fn, t(2), fullgraph=True)
    assert type(out[-1]) is Totals


class Window(collections.deque):
    def last(self):
        return self[-1]


def test_library_objects_with_a_generic_c_getattribute_are_traced():
    import types

    settings = types.SimpleNamespace(scale=2, name="n")
    window = Window([1, 2, 3], maxlen=5)

    def fn(x):
        return x * settings.scale, settings.name, window.maxlen, hasattr(settings, "missing")

    check(fn, t(2), fullgraph=True)


class Bag(list):
    pass


class Accumulator:
    def __init__(self):
        self.v = 0

    def __iadd__(self, other):
        self.v += other
        return self


class Plus:
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return Plus(self.v + other)


def test_augmented_assignment_on_user_objects_and_container_subclasses():
    def fn(x, bag, row, table):
        bag += [x]
        bag *= 2
        row += (1,)  # a tuple subclass has no __iadd__: a plain tuple, as eager gives
        table |= {"k": 1}
        acc = Accumulator()
        acc += 3
        plus = Plus(1)
        plus += 2  # no __iadd__: __add__ makes a new object
        return x + 1, row, type(row) is tuple, acc.v, plus.v

    check(fn, make=lambda: (t(1), Bag([1]), Pair((0,)), CountingDict(a=1)), fullgraph=True)


# ---- torch.fx.node.map_aggregate (a C function with a traced twin) ----------------------------------

FieldPair = collections.namedtuple("FieldPair", "left right")


def _double(leaf):
    return leaf if leaf is None else leaf * 2


def _map_aggregate(aggregate):
    return torch.fx.node.map_aggregate(aggregate, _double)


@pytest.mark.parametrize("make", [
    lambda: [t(3), [t(3), t(3)]],
    lambda: {"a": t(3), "b": [t(3), (t(2), 4)]},
    lambda: (t(2), FieldPair(t(2), 3), slice(1, 5, None)),
], ids=["list", "dict", "tuple-namedtuple-slice"])
def test_map_aggregate_keeps_eagers_values_and_container_types(make):
    def types(value):
        if isinstance(value, (list, tuple)):
            return (type(value), [types(v) for v in value])
        if isinstance(value, dict):
            return (type(value), {k: types(v) for k, v in value.items()})
        return type(value)

    aggregate = make()
    result = check(_map_aggregate, aggregate, fullgraph=True)
    assert types(result) == types(_map_aggregate(aggregate))


def test_immutable_list_refuses_append_and_maps_in_one_graph():
    def f(items, x):
        frozen = torch.fx.immutable_collections.immutable_list(items)
        try:
            frozen.append(x)
        except TypeError:
            pass
        return torch.fx.node.map_aggregate(frozen, _double), len(frozen)

    check(f, [t(3), [t(3), t(3)]], t(3), fullgraph=True)
