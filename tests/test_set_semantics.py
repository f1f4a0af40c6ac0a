"""Sets and frozensets as CPython's own set tests exercise them (see
docs/peer_suite_cpython.md, test_set): operators neither operand supports,
frozenset methods with arguments not known at trace time, lookups of sets and
set subclasses, ``__init__`` called again, hashing, and the identity a frozenset
keeps when it is rebuilt or copied. Each test compiles with ``fullgraph=True``
and compares with eager (``beside_tensor`` catches what eager raises)."""
import copy
import functools
import operator

import pytest

from helpers import beside_tensor, check, t

full = functools.partial(check, fullgraph=True)


class SetSub(set):
    pass


class FrozenSub(frozenset):
    pass


class Members:
    """An iterable user object: no operators of its own."""

    def __iter__(self):
        return iter("ab")


class Plain:
    pass


class WithInit:
    def __init__(self):
        object.__init__(self, 1)


def _generator():
    yield "a"


#: operands set operators decline: a dict, a keys-less mapping's items, a generator, a user
#: iterable, a plain user object, a number, a tuple, a string
DECLINED = {
    "dict": lambda: {"a": 1, "z": 2},
    "generator": _generator,
    "user iterable": Members,
    "user object": Plain,
    "int": lambda: 19,
    "tuple": lambda: ("a", "q"),
    "str": lambda: "abc",
}
#: (set type, operand kind) pairs: a constant operand meets a set subclass (a plain set of constants folds)
PAIRS = [(c, k) for c in (set, frozenset, SetSub) for k in DECLINED if k not in ("int", "tuple", "str") or c is SetSub]
PAIR_IDS = [f"{c.__name__}-{k}" for c, k in PAIRS]
BINARY = [operator.or_, operator.and_, operator.sub, operator.xor, operator.lt, operator.le, operator.gt,
          operator.ge]
INPLACE = [operator.ior, operator.iand, operator.isub, operator.ixor]


def _operands(set_cls, kind):
    """A set of ``set_cls`` and an operand of ``kind``, read from the arguments (not known at trace time)."""
    return lambda: (t(2), set_cls("abc"), DECLINED[kind]())


def _neither_supports(op, reflected):
    """``op(s, other)`` (``op(other, s)`` when ``reflected``), eager's TypeError caught."""
    def f(x, s, other):
        try:
            return x + 1, op(other, s) if reflected else op(s, other)
        except TypeError as e:
            return x, str(e)
    return f


@pytest.mark.parametrize("set_cls, kind", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("op", BINARY + INPLACE, ids=lambda op: op.__name__)
def test_operator_neither_operand_supports_raises_eagers_type_error(op, set_cls, kind):
    full(_neither_supports(op, reflected=False), make=_operands(set_cls, kind))


@pytest.mark.parametrize("kind", [k for c, k in PAIRS if c is set])
@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
def test_reflected_operator_neither_operand_supports_raises_eagers_type_error(op, kind):
    full(_neither_supports(op, reflected=True), make=_operands(set, kind))


@pytest.mark.parametrize("set_cls, kind", PAIRS, ids=PAIR_IDS)
def test_equality_with_a_value_of_another_kind_is_identity(set_cls, kind):
    def f(x, s, other):
        return x + 1, s == other, other == s, s != other, other != s

    full(f, make=_operands(set_cls, kind))


def test_inplace_operator_with_a_keys_view_rebinds_to_a_new_set():
    def f(x):
        s = {"a"}
        alias = s
        s |= {"b": 1}.keys()
        s ^= {"a": 1}.keys()
        return x + 1, s, alias, s is alias

    full(f, t(2))


FROZEN = frozenset("abc")


@pytest.mark.parametrize("name", ["union", "intersection", "difference", "symmetric_difference", "issubset",
                                  "issuperset", "isdisjoint"])
def test_constant_frozenset_methods_take_arguments_not_known_now(name):
    def f(x):
        obj = Plain()
        holding = {obj, "a"}
        result = getattr(FROZEN, name)(holding)
        several = getattr(FROZEN, name)(holding, SetSub("bq"), {"c": 1}, iter("cz")) if name in (
            "union", "intersection", "difference") else getattr(FROZEN, name)(SetSub("bq"))
        if isinstance(result, frozenset):
            result = type(result), len(result), obj in result, "a" in result, result - {obj}
        if isinstance(several, frozenset):
            several = type(several), len(several), obj in several, several - {obj}
        return x + 1, result, several

    full(f, t(2))


def test_set_operators_with_a_constant_frozenset_and_a_set_holding_objects():
    def f(x):
        obj = Plain()
        s = {obj, "a"}
        union, reflected = s | FROZEN, FROZEN | s
        return (x + 1, type(union), type(reflected), len(union), obj in reflected, s - FROZEN == {obj},
                FROZEN - s == frozenset("bc"), s & FROZEN, FROZEN ^ s == {obj, "b", "c"}, FROZEN <= s, s < FROZEN)

    full(f, t(2))


@pytest.mark.parametrize("make", [set, SetSub, FrozenSub], ids=lambda c: c.__name__)
def test_set_looked_up_as_frozenset_of_its_members(make):
    def f(x, key):
        s = {frozenset("ab"), 1}
        found = key in s, key in {frozenset("xy")}, make("ab") in s
        s.discard(make("xy"))
        s.remove(key)
        try:
            s.remove(make("q"))
        except KeyError as e:
            missing = e.args
        return x + 1, found, s, type(missing[0]), missing[0] == {"q"}

    full(f, t(2), make("ab"))


def test_set_init_again_refills_and_checks_its_arguments():
    def call():
        s = set("ab")
        s.__init__("xyz")
        refilled = sorted(s)
        errors = []
        for args, kwargs in (((s, 2), {}), ((), {"iterable": "a"}), ((1,), {})):
            try:
                s.__init__(*args, **kwargs)
            except TypeError as e:
                errors.append(str(e))
        return refilled, errors, sorted(s)

    full(beside_tensor(call), t(2))


def test_frozenset_subclass_init_does_nothing():
    def f(x, given):
        made = FrozenSub("ab")
        made.__init__("xy")
        given.__init__("xy", 1, key=2)
        return x + 1, made, given, type(made)

    full(f, t(2), FrozenSub("ab"))


def test_object_init_of_a_class_without_one_checks_extra_arguments():
    def call():
        errors = []
        for make in (lambda: Plain().__init__(1), WithInit, lambda: Plain().__init__()):
            try:
                errors.append(make() is None)
            except TypeError as e:
                errors.append(str(e))
        return errors

    full(beside_tensor(call), t(2))


class EqOnly:
    def __eq__(self, other):
        return self is other


@pytest.mark.parametrize("make", [lambda: SetSub("ab"), EqOnly], ids=["set subclass", "eq only"])
def test_hash_of_an_unhashable_type_raises_eagers_type_error(make):
    def f(x, given):
        try:
            return x + 1, hash(make())
        except TypeError as e:
            first = str(e)
        try:
            return x + 2, hash(given)
        except TypeError as e:
            return x, first, str(e)

    full(f, t(2), make())


def test_frozenset_of_a_frozenset_is_the_same_object():
    def f(x, given):
        made = frozenset(["a", "b"])
        sub = FrozenSub("ab")
        return (x + 1, frozenset(made) is made, copy.copy(made) is made, made.copy() is made,
                frozenset(given) is given, frozenset(sub) is sub, type(frozenset(sub)),
                made.union() is made, frozenset(made) == made)

    full(f, t(2), frozenset("xy"))


def test_set_operator_with_a_user_object_defining_it_is_not_a_type_error():
    class Ror:
        def __ror__(self, other):
            return "ror"

        def __rsub__(self, other):
            return NotImplemented

    def call():
        try:
            declined = {1} - Ror()
        except TypeError as e:
            declined = str(e)
        return {1} | Ror(), declined

    full(beside_tensor(call), t(2))
