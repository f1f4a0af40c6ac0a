"""Kinds of plain Python found with CPython's own semantics tests (as PyTorch
ports them, see docs/peer_suite_cpython.md) that torch.compile traces whole:
what builtins answer about themselves, C functions folded on constants, dict
equality, regular expressions. Each test compiles with ``fullgraph=True`` and
compares with eager."""
import binascii
import cmath
import collections
import contextlib
import copy
import functools
import inspect
import itertools
import math
import operator
import re
import struct
import sys
import types
import zlib

import pytest
import torch

import bytegraph

from helpers import beside_tensor, check, t

full = functools.partial(check, fullgraph=True)


class DictSub(dict):
    pass


# ---- K05: names and documentation of builtins ------------------------------------------

def test_builtin_function_names():
    def f(x):
        return x + 1, (pow.__name__, len.__qualname__, len.__module__, operator.add.__name__,
                       math.sqrt.__qualname__, len.__doc__ == len.__doc__, divmod.__text_signature__)

    full(f, t(2))


def test_builtin_method_names_and_types():
    def f(x):
        d = DictSub(a=1)
        return x + 1, ([].append.__name__, [].append.__qualname__, "x".join.__qualname__, {}.get.__qualname__,
                       (1).__add__.__name__, (1).__add__.__qualname__, type([].append) is types.BuiltinMethodType,
                       type((1).__add__) is types.MethodWrapperType, type(d.pop) is types.BuiltinMethodType,
                       type(d.__getitem__) is types.MethodWrapperType)

    full(f, t(2))


# ---- K06: C functions that compute only from their arguments ---------------------------

fromhex = float.fromhex  # reached through a name, not through the type
from_bytes = int.from_bytes


def test_pure_c_functions_of_modules_fold():
    def f(x):
        return x + struct.unpack("<d", struct.pack("<d", 2.0))[0], (
            struct.calcsize("<i"), binascii.hexlify(b"a"), zlib.crc32(b"abc"), cmath.sqrt(-1), math.gcd(4, 6))

    full(f, t(2))


def test_classmethods_and_staticmethods_of_builtin_types_fold():
    def f(x):
        return x + fromhex("0x1p1"), (from_bytes(b"\x01\x02", "big"), int.from_bytes(b"\x01", "little"),
                                      bytes.fromhex("ff"), str.maketrans("a", "b"), float.__getformat__("double"))

    full(f, t(2))


def test_pure_c_function_error_is_the_users():
    def f(x):
        try:
            struct.unpack("<d", b"12")
        except struct.error as e:
            return x + 1, str(e)
        try:
            fromhex("zz")
        except ValueError as e:
            return x + 2, str(e)
        return x, ""

    full(f, t(2))


# ---- dict equality, Counter, regular expressions (reached from assertEqual/assertRaisesRegex)

D1, D2, OD = {"a": 1, "b": [2]}, {"b": [2], "a": 1}, collections.OrderedDict(a=1, b=[2])


def test_dict_equality():
    def f(x):
        made = {"a": 1, "b": [2]}
        o1, o2 = collections.OrderedDict(a=1, b=2), collections.OrderedDict(b=2, a=1)
        return x + 1, (D1 == D2, D1 != D2, made == D1, made != {"a": 1}, OD == D1, o1 == o2, o1 == dict(o2),
                       {1: x} == {1: x}, {1: 1} == {True: 1.0}, {} == {})

    full(f, t(2))


def test_counter_counts_in_the_trace():
    def f(x):
        c = collections.Counter("abracadabra")
        c.update(["a", "z"])
        return x + c["a"], sorted(c.items())

    full(f, t(2))


def test_regular_expressions_fold_on_constants():
    def f(x):
        pattern = re.compile(r"(\d+)-(\w)")
        m = pattern.search("id 12-x")
        return x + 1, (bool(m), m.group(1), m.span(), pattern.pattern, re.sub(r"\s+", " ", "a  b"),
                       re.split(",", "a,b"), re.escape("a.b"), re.fullmatch("a+", "b") is None)

    full(f, t(2))


def test_regex_with_a_function_of_the_program_breaks():
    def f(x):
        return x + 1, re.sub("a", lambda m: "b", "aa")

    check(f, t(2), graphs=1, breaks=1, gb_types=["non-constant library call"])


# ---- K09: an error of a builtin folded at trace time is the program's ---------------------

def _catching(stmt: str, exc: str):
    """``def f(x)`` running ``stmt`` under ``try``, returning the message of ``exc``."""
    namespace = {"collections": collections, "operator": operator}
    exec(f"def f(x):\n    try:\n        {stmt}\n    except {exc} as e:\n        return x + 1, str(e)\n"
         f"    return x, ''\n", namespace)
    return namespace["f"]


@pytest.mark.parametrize("stmt,exc", [
    ("[1, 2].index(5)", "ValueError"), ("(1, 2).index(5)", "ValueError"), ("[3, 1].index(3, 1)", "ValueError"),
    ('"ab".index("z")', "ValueError"), ("sorted([1, (2,)])", "TypeError"), ("divmod(1, 0)", "ZeroDivisionError"),
    ("l = [1, 2, 3]; l[::0] = [1]", "ValueError"), ("l = [1, 2, 3]; l[::2] = [1]", "ValueError"),
    ("l = [1]; l[5] = 0", "IndexError"), ("l = []; del l[0]", "IndexError"), ("[].pop('a')", "TypeError"),
    ("[].insert('a', 1)", "TypeError"), ("bool(1, 2, 3)", "TypeError"), ("float(x='3')", "TypeError"),
    ("int(x=3)", "TypeError"), ("int('z', base=2)", "ValueError"),
])
def test_folding_error_is_raised_in_the_trace(stmt, exc):
    full(_catching(stmt, exc), t(2))


def test_builtin_keyword_argument_folds():
    def f(x):
        return x + int("11", base=2), int("z", 36), float("1.5")

    full(f, t(2))


# ---- K13: arguments eager rejects ---------------------------------------------------------

@pytest.mark.parametrize("stmt", ["set().update(1)", "[].extend(None)", "list(1)", "tuple(1, 2)", "len()", "len(1)",
                                  "abs('a')", "frozenset(2.0)"])
def test_wrong_argument_raises_eagers_type_error_in_the_trace(stmt):
    full(_catching(stmt, "TypeError"), t(2))


@pytest.mark.parametrize("stmt", ["{}.update([], [])", "collections.OrderedDict().update([('a', 1)], None)",
                                  "dict(1, 2)", "collections.OrderedDict(1, 2)"])
def test_too_many_arguments_to_update_raise_eagers_type_error_in_the_trace(stmt):
    """eager's words for these depend on the class and the caller (update or the constructor)."""
    full(_catching(stmt, "TypeError"), t(2))


def test_process_limits_are_read_and_guarded():
    import sys

    def f(x):
        return x + 1, sys.get_int_max_str_digits()

    full(f, t(2))
    previous = sys.get_int_max_str_digits()
    compiled = __import__("bytegraph").compile(f, backend="eager")
    try:
        assert compiled(t(2))[1] == previous
        sys.set_int_max_str_digits(previous + 1)
        assert compiled(t(2))[1] == previous + 1  # the guard sees the change
    finally:
        sys.set_int_max_str_digits(previous)


# ---- K11: generator.send / throw, and yield from delegating them -------------------------

def _echo():
    received = yield 1
    while received is not None:
        received = yield received * 2
    return "done"


def _guarded():
    try:
        yield 1
    except KeyError as e:
        yield ("caught", e.args)
    yield 3


def _delegating():
    result = yield from _echo()
    yield ("inner returned", result)


def test_generator_send():
    def f(x):
        it = _echo()
        first = next(it)
        second = it.send(5)
        try:
            it.send(None)
        except StopIteration as e:
            stopped = e.args
        try:
            it.send(1)
        except StopIteration as e:
            again = e.args
        return x + first + second, stopped, again

    full(f, t(2))


def test_generator_send_to_a_just_started_generator():
    def f(x):
        try:
            _echo().send(1)
        except TypeError as e:
            return x + 1, str(e)
        return x, ""

    full(f, t(2))


def test_generator_throw():
    def f(x):
        it = _guarded()
        next(it)
        caught = it.throw(KeyError("k"))
        after = next(it)
        fresh = _guarded()
        try:
            fresh.throw(ValueError)  # not started: raised as is, the generator is finished
        except ValueError:
            finished = list(fresh)
        return x + after, caught, finished

    full(f, t(2))


def test_generator_throw_uncaught_propagates():
    def f(x):
        it = _echo()
        next(it)
        try:
            it.throw(IndexError)
        except IndexError:
            return x + 1, list(it)
        return x, []

    full(f, t(2))


def test_yield_from_delegates_send():
    def f(x):
        it = _delegating()
        a = next(it)
        b = it.send(4)
        c = it.send(None)
        return x + a + b, c

    full(f, t(2))


# ---- K16: errors the containers raise themselves ---------------------------------------

def _dict_grown_in_loop(x):
    d = {1: 1}
    try:
        for k in d:
            d[k + 1] = 0
    except RuntimeError as e:
        return x + 1, str(e), d
    return x, "", d


def _set_grown_in_loop(x):
    s = {1}
    try:
        for k in s:
            s.add(k + 1)
    except RuntimeError as e:
        return x + 1, str(e), s
    return x, "", s


def _broken_iterator_stays_broken(x):
    d = {1: 1, 2: 2}
    it = iter(d.items())
    next(it)
    d[3] = 3
    try:
        next(it)
    except RuntimeError as e:
        first = str(e)
    del d[3]  # the size is back, the iterator still refuses
    try:
        next(it)
    except RuntimeError as e:
        return x + 1, first, str(e)
    return x, first, ""


@pytest.mark.parametrize("fn", [_dict_grown_in_loop, _set_grown_in_loop, _broken_iterator_stays_broken])
def test_container_changed_during_iteration_raises_in_the_trace(fn):
    full(fn, t(2))


@pytest.mark.parametrize("stmt", ["{}[[1]] = 2", "[1] in {}", "{[1]: 2}", "{}.get({})", "dict.fromkeys([[1]])"])
def test_unhashable_key_raises_in_the_trace(stmt):
    full(_catching(stmt, "TypeError"), t(2))


# ---- K07: sets of functions, classes and nested tuples read from the program ---------------

def _member(x):
    return x


MIXED = {0, "zero", operator.add}
NESTED = frozenset({(1, (2, (3, None))), (4,)})


@pytest.mark.parametrize("members", [{operator.add}, frozenset({len, None}), {_member, int, str}, {(1, (2,)), ()}])
def test_set_input_of_functions_classes_and_tuples(members):
    def f(x, s):
        return x + len(s), s == set(s), operator.add in s, len(s.copy()), s | {1} == {1, *s}

    full(f, t(2), members)


def test_set_globals_compared_and_copied():
    def f(x):
        return x + len(MIXED), MIXED == MIXED.copy(), 0 in MIXED, NESTED == frozenset(NESTED), (4,) in NESTED

    full(f, t(2))


def test_set_input_guard_sees_other_members():
    compiled = __import__("bytegraph").compile(lambda x, s: x + (operator.add in s), backend="eager")
    assert compiled(t(2) * 0, {operator.add}).tolist() == [1.0, 1.0]
    assert compiled(t(2) * 0, {operator.sub}).tolist() == [0.0, 0.0]


def test_method_of_an_unhashable_builtin_object_is_not_mistaken_for_a_type_method():
    def check(a, b=1):
        return a

    def f(x):
        return x + 1, list(inspect.signature(check).parameters.keys())

    full(f, t(2))


SHARED = [1, 2]


def test_operator_identity_functions_are_not_folded_on_copies():
    def f(x):
        mine = [1, 2]
        return x + 1, operator.is_(SHARED, SHARED), operator.is_not(mine, [1, 2]), operator.is_(mine, mine)

    full(f, t(2))


# ---- builtin types' own __new__ called on themselves ------------------------------------

NEW_CALLS = {
    "bool_no_argument": lambda: bool.__new__(bool),
    "bool_of_values": lambda: (bool.__new__(bool, 1), bool.__new__(bool, 0), bool.__new__(bool, "")),
    "int_of_string": lambda: int.__new__(int, "12"),
    "int_with_base": lambda: int.__new__(int, "ff", 16),
    "float_of_string": lambda: float.__new__(float, "2.5"),
    "complex": lambda: complex.__new__(complex, 1, 2),
    "str_of_int": lambda: str.__new__(str, 7),
    "bytes": lambda: bytes.__new__(bytes, 3),
    "frozenset": lambda: frozenset.__new__(frozenset, (1, 2)),
    "tuple": lambda: tuple.__new__(tuple, [1, 2]),
}


@pytest.mark.parametrize("name", sorted(NEW_CALLS))
def test_builtin_new_on_its_own_type(name):
    full(beside_tensor(NEW_CALLS[name]), t(2))


def test_builtin_new_bad_value_raises_eager_error():
    def f(x):
        try:
            int.__new__(int, "not a number")
        except ValueError as e:
            return x + 1, str(e)
        return x, None

    full(f, t(2))


# ---- names of builtin types' methods; iterating a builtin function or type --------------

def test_builtin_method_descriptor_names():
    def f(x):
        return x + 1, (set.issubset.__name__, set.issubset.__qualname__, list.append.__name__,
                       dict.get.__qualname__, str.join.__name__, int.__add__.__name__, int.__add__.__qualname__,
                       set.union.__doc__ == set.union.__doc__)

    full(f, t(2))


ITERATED_BUILTINS = {
    "set_update_with_operator": lambda: set([1]).update(operator.add),
    "list_of_len": lambda: list(len),
    "tuple_of_a_type": lambda: tuple(int),
    "for_loop_over_abs": lambda: [i for i in abs],
    "set_union_with_max": lambda: {1}.union(max),
}


@pytest.mark.parametrize("name", sorted(ITERATED_BUILTINS))
def test_iterating_a_builtin_raises_eager_type_error(name):
    full(beside_tensor(ITERATED_BUILTINS[name], TypeError), t(2))


# ---- slicing with a step of 0, by every way a sequence is sliced -----------------------------

Pair = collections.namedtuple("Pair", "a b")
SLICED = {
    "list": lambda: [1, 2, 3], "tuple": lambda: (1, 2, 3), "range": lambda: range(3), "str": lambda: "abc",
    "bytes": lambda: b"abc", "size": lambda: torch.Size([1, 2]), "namedtuple": lambda: Pair(1, 2),
    "list_subclass": lambda: ListSub([1, 2]),
}
SLICE_WAYS = {
    "subscript": lambda s, sl: s[sl],
    "dunder_getitem": lambda s, sl: s.__getitem__(sl),
    "operator_getitem": lambda s, sl: operator.getitem(s, sl),
}


class ListSub(list):
    pass


@pytest.mark.parametrize("way", sorted(SLICE_WAYS))
@pytest.mark.parametrize("kind", sorted(SLICED))
def test_slice_step_zero_raises_eager_value_error(kind, way):
    full(beside_tensor(lambda: SLICE_WAYS[way](SLICED[kind](), slice(0, 2, 0)), ValueError), t(2))


@pytest.mark.parametrize("args", [(0, 5, 0), (1, None, 2), (None, None, -1), (-3, 10, 3)])
@pytest.mark.parametrize("length", [0, 4, 10])
def test_slice_indices_folded(args, length):
    full(beside_tensor(lambda: slice(*args).indices(length), ValueError), t(2))


def test_slice_indices_negative_length_raises_eager_value_error():
    full(beside_tensor(lambda: slice(1, 2).indices(-1), ValueError), t(2))


# ---- sys.exception() / sys.exc_info(): the exception the trace handles -------------------------

def test_exception_state_when_nothing_is_handled():
    full(lambda x: (x + 1, sys.exc_info(), sys.exception()), t(2))


def test_exception_state_inside_except():
    def f(x):
        try:
            raise KeyError("k")
        except KeyError:
            kind, value, tb = sys.exc_info()
            return x + 1, kind, value.args, tb is not None, sys.exception() is value

    full(f, t(2))


def test_exception_state_after_the_handler_and_in_a_callee():
    def callee():
        return sys.exc_info()[0], sys.exception()

    def f(x):
        try:
            {}["missing"]
        except KeyError:
            inside = callee()
        return x + 1, inside[0], type(inside[1]), sys.exc_info()

    full(f, t(2))


def test_exit_stack_suppressing_an_exception():
    def f(x):
        with contextlib.ExitStack() as stack:
            stack.push(lambda *details: True)
            1 / 0
        return x + 1

    full(f, t(2))


def test_exception_state_of_a_caller_handling_one():
    # compiled where nothing is handled (guarded), then called inside an except block: eager's answer
    def f(x):
        return x + 1, sys.exc_info()[0]

    compiled = bytegraph.compile(f, backend="eager")
    assert compiled(t(2))[1] is None
    try:
        raise ValueError("outer")
    except ValueError:
        got, want = compiled(t(2)), f(t(2))
    assert got[1] is want[1] is ValueError
    assert compiled(t(2))[1] is None


def test_exception_state_with_arguments_raises_eager_type_error():
    full(beside_tensor(lambda: sys.exc_info(1), TypeError), t(2))


# ---- dict views: repr, reversed, and keys/items views as sets ------------------------------------

def _views():
    d = {1: "a", 3: "b"}
    d[2] = "c"
    return d, {1: "a", 5: "e"}


VIEW_CASES = {
    "repr_items": lambda d, e: repr(d.items()),
    "repr_values": lambda d, e: repr(d.values()),
    "reversed_items": lambda d, e: list(reversed(d.items())),
    "reversed_values": lambda d, e: list(reversed(d.values())),
    "keys_lt_keys": lambda d, e: ({1: 0}.keys() < d.keys(), d.keys() < e.keys()),
    "items_gt_items": lambda d, e: (d.items() > {1: "a"}.items(), d.items() >= d.items()),
    "items_eq_set": lambda d, e: (d.items() == {(1, "a"), (3, "b"), (2, "c")}, d.items() != set()),
    "set_eq_keys": lambda d, e: ({1, 2, 3} == d.keys(), frozenset({1}) < d.keys()),
    "keys_eq_list_is_false": lambda d, e: (d.keys() == [1, 3, 2], d.items() != [(1, "a")]),
    "keys_or_set": lambda d, e: d.keys() | {7},
    "keys_and_list": lambda d, e: d.keys() & [3, 5, 1],
    "items_sub_set": lambda d, e: d.items() - {(1, "a")},
    "keys_xor_keys": lambda d, e: d.keys() ^ e.keys(),
    "set_sub_keys": lambda d, e: {1, 2, 9} - d.keys(),
    "list_or_keys": lambda d, e: [7] | d.keys(),
    "tuple_and_items": lambda d, e: ((1, "a"), (8, "h")) & d.items(),
    "isdisjoint": lambda d, e: (d.keys().isdisjoint([8, 9]), d.items().isdisjoint(e.items())),
    "items_with_unhashable_value_or": lambda d, e: {1: []}.items() | set(),
    # an OrderedDict's views are set-like views too (their types subclass dict's)
    "odict_items_eq_items": lambda d, e: (collections.OrderedDict(d).items() == d.items(),
                                          e.items() != collections.OrderedDict(e).items()),
    "odict_keys_le_set": lambda d, e: (collections.OrderedDict(e).keys() <= {1, 5, 9},
                                       collections.OrderedDict(d).items() > {(1, "a")}),
}


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_dict_view_kinds(name):
    full(beside_tensor(lambda: VIEW_CASES[name](*_views()), TypeError), t(2))


# ---- iterators the trace makes have eager's type; len() of an iterator is eager's TypeError --------

ITERATOR_CASES = {
    "reversed_list": lambda: reversed([1, 2]),
    "reversed_tuple": lambda: reversed((1, 2)),
    "reversed_range": lambda: reversed(range(3)),
    "reversed_str": lambda: reversed("ab"),
    "reversed_dict": lambda: reversed({1: 2}),
    "reversed_items": lambda: reversed({1: 2}.items()),
    "reversed_values": lambda: reversed({1: 2}.values()),
    "iter_tuple": lambda: iter((1, 2)),
    "iter_ascii_str": lambda: iter("ab"),
    "iter_str": lambda: iter("\u00e9t\u00e9"),
    "iter_bytes": lambda: iter(b"ab"),
    "iter_list_of_tensors": lambda: iter([torch.ones(1)]),
    "iter_tuple_of_tensors": lambda: iter((torch.ones(1),)),
    "chain_from_iterable": lambda: itertools.chain.from_iterable([[1], [2]]),
    "repeat": lambda: itertools.repeat(1, 2),
    "accumulate": lambda: itertools.accumulate([1, 2]),
    "islice": lambda: itertools.islice([1, 2, 3], 2),
    "zip": lambda: zip([1], [2]),
    "enumerate": lambda: enumerate([1]),
}


@pytest.mark.parametrize("name", sorted(ITERATOR_CASES))
def test_iterator_has_eager_type(name):
    def f(x):
        made = type(ITERATOR_CASES[name]())
        return x + 1, [made is cls for cls in ITERATOR_TYPES]

    full(f, t(2))


ITERATOR_TYPES = (type(iter([])), type(reversed([])), type(iter(())), reversed, type(iter(range(0))),
                  type(reversed(range(0))), type(iter("")), type(iter("\u00e9")), type(iter(b"")),
                  type(reversed({})), type(reversed({}.items())), type(reversed({}.values())), itertools.chain,
                  itertools.repeat, itertools.accumulate, itertools.islice, zip, enumerate)


@pytest.mark.parametrize("name", ["reversed_list", "iter_tuple", "reversed_range", "repeat", "zip"])
def test_len_of_an_iterator_raises_eager_type_error(name):
    full(beside_tensor(lambda: len(ITERATOR_CASES[name]()), TypeError), t(2))


# ---- an exception thrown into a generator is chained to what the generator handles; throw through yield from

def _thrown_context(gen_fn):
    def f(x):
        gen = gen_fn()
        gen.send(None)
        try:
            gen.throw(ValueError)
        except ValueError as e:
            context = e.__context__
            return x + 1, type(context), None if context is None else context.args
        return x, None, None

    return f


def _suspended_in_except():
    try:
        raise KeyError("a")
    except Exception:
        yield


def _inner():
    yield


def _delegating_in_except():
    try:
        raise KeyError("a")
    except Exception:
        yield from _inner()


def _plain():
    yield


@pytest.mark.parametrize("gen_fn", [_suspended_in_except, _delegating_in_except, _plain])
def test_thrown_exception_context(gen_fn):
    full(_thrown_context(gen_fn), t(2))


def test_thrown_exception_seen_inside_the_generator():
    def f(x):
        def g():
            try:
                raise KeyError("a")
            except Exception:
                try:
                    yield
                except Exception as exc:
                    yield type(exc), type(exc.__context__), exc.__context__.args

        gen = g()
        gen.send(None)
        got = gen.throw(ValueError)
        gen.close()
        return x + 1, got

    full(f, t(2))


def test_throw_through_yield_from_caught_by_the_inner_generator():
    def f(x):
        def inner():
            try:
                yield 1
            except ValueError as e:
                yield ("inner caught", e.args)

        def outer():
            yield from inner()
            yield "after"

        gen = outer()
        first = next(gen)
        caught = gen.throw(ValueError("v"))
        return x + 1, first, caught, list(gen)

    full(f, t(2))


def test_throw_through_yield_from_caught_by_the_outer_generator():
    def f(x):
        def inner():
            yield 1

        def outer():
            try:
                yield from inner()
            except ValueError as e:
                yield ("outer caught", e.args, type(e.__context__))

        gen = outer()
        next(gen)
        caught = gen.throw(ValueError("v"))
        return x + 1, caught, list(gen)

    full(f, t(2))


# ---- itertools.starmap: fn called on each item's unpacked values, lazily ------------------------

def test_starmap_of_constants_and_tensors():
    def f(x):
        products = list(itertools.starmap(operator.mul, [(1, 2), (3, 4)]))
        return sum(itertools.starmap(torch.mul, [(x, x), (x, 2)])), products

    full(f, t(2))


def test_starmap_calls_only_for_items_consumed():
    def f(x):
        calls = []

        def record(a, b):
            calls.append(a)
            return a - b

        it = itertools.starmap(record, zip([5, 6, 7], [1, 2, 3]))
        first = next(it)
        return x + first, calls, type(it) is itertools.starmap

    full(f, t(2))


def test_starmap_left_partly_consumed_after_the_graph():
    def f(x):
        it = itertools.starmap(operator.add, [(1, 2), (3, 4), (5, 6)])
        next(it)
        return x + 1, it

    out = check(f, t(2))
    assert list(out[1]) == [7, 11]


# ---- copy.copy of an object whose class has a __copy__ written in Python -------------------------

class _CopyHook:
    def __init__(self):
        self.v = [1]

    def __copy__(self):
        made = _CopyHook.__new__(_CopyHook)
        made.v = self.v + [99]
        return made


@pytest.mark.parametrize("make", [lambda: collections.UserDict({1: 2}), lambda: collections.UserList([1, 2]),
                                  _CopyHook], ids=["UserDict", "UserList", "own_hook"])
def test_copy_calls_the_class_copy_hook(make):
    def f(x):
        original = make()
        original.extra = 5
        made = copy.copy(original)
        contents = [list(o) if isinstance(o, collections.UserList) else dict(o) if isinstance(
            o, collections.UserDict) else o.v for o in (made, original)]
        return x + 1, type(made).__name__, made.extra if hasattr(made, "extra") else None, contents, made is original

    full(f, t(2))


# ---- a sequence indexed by something that is neither an int nor a slice: eager's TypeError ----------

@pytest.mark.parametrize("kind", ["list", "tuple", "size", "namedtuple", "list_subclass"])
@pytest.mark.parametrize("index", ["a", 1.5, None, (0,)], ids=["str", "float", "none", "tuple"])
def test_sequence_bad_index_raises_eager_type_error(kind, index):
    full(beside_tensor(lambda: SLICED[kind]()[index], TypeError), t(2))


# ---- a builtin subclass with an __init__ of its own takes keywords its base's __new__ refuses ------------

class _ListWithInit(list):
    def __init__(self, seq, newarg=None):
        super().__init__(seq)
        self.newarg = newarg


class _ListIgnoringSeq(list):
    def __init__(self, seq, newarg=None):
        self.newarg = newarg


class _TupleWithInit(tuple):
    def __init__(self, seq, newarg=None):
        self.newarg = newarg


class _PlainTuple(tuple):
    pass


class _PlainList(list):
    pass


class _FloatWithInit(float):
    def __init__(self, value, newarg=None):
        self.newarg = newarg


MADE = {
    "list_init": lambda: _ListWithInit([1, 2], newarg=3),
    "list_init_ignoring_seq": lambda: _ListIgnoringSeq([1, 2], newarg=3),
    "tuple_init": lambda: _TupleWithInit([1, 2], newarg=3),
    "float_init": lambda: _FloatWithInit(2.5, newarg=3),
    "plain_tuple_keyword": lambda: _PlainTuple([1], newarg=3),
    "plain_tuple_two_args": lambda: _PlainTuple([1], [2]),
    "plain_list_two_args": lambda: _PlainList([1], [2]),
    "plain_list_keyword": lambda: _PlainList([1], newarg=2),
    "tuple_init_two_args": lambda: _TupleWithInit([1], [2]),
}


@pytest.mark.parametrize("name", sorted(MADE))
def test_builtin_subclass_construction_arguments(name):
    def made():
        obj = MADE[name]()
        return type(obj).__name__, obj.newarg, obj + obj if not isinstance(obj, float) else obj == 2.5

    full(beside_tensor(made, TypeError), t(2))
