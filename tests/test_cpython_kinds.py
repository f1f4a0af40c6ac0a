"""Kinds of plain Python found with CPython's own semantics tests (as PyTorch
ports them, see docs/peer_suite_cpython.md) that torch.compile traces whole:
what builtins answer about themselves, C functions folded on constants, dict
equality, regular expressions. Each test compiles with ``fullgraph=True`` and
compares with eager."""
import binascii
import cmath
import collections
import functools
import math
import operator
import re
import struct
import types
import zlib

import pytest
import torch

from helpers import check_fullgraph, t

full = functools.partial(check_fullgraph, clone=False)


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
                                      bytes.fromhex("ff"), str.maketrans("a", "b"), bool.__new__(bool),
                                      int.__new__(int, "3"), float.__getformat__("double"))

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


def test_new_of_a_builtin_type_for_a_user_subclass_is_not_folded():
    class MyInt(int):
        pass

    def f(x):
        return x + 1, int.__new__(MyInt, 3)

    with pytest.raises(Exception, match="Graph break"):
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

    with pytest.raises(Exception, match="non-constant library call"):
        full(f, t(2))
