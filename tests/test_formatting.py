"""``str.format``, ``format()`` and f-string fields of values not all known at
trace time: each field formatted in order as CPython does (a Python
``__format__`` inlined, object's own formatting ``str(value)``, a number's
or text's format with no spec ``str(value)``), and eager's errors."""
import collections

import pytest
import torch

from tests.helpers import check


class Fmt:
    def __init__(self, log):
        self.log = log

    def __format__(self, spec):
        self.log.append(spec)
        return "F" + spec

    def __repr__(self):
        return "Fmt!"


class Plain:
    def __repr__(self):
        return "Plain!"


class IntSub(int):
    def __str__(self):
        return "IntSub!"


class SetSub(set):
    pass


def ones():
    return torch.ones(2)


def test_str_format_of_objects_field_by_field():
    def f(x):
        log = []
        texts = ("{} and {!r:>6} {}".format(Fmt(log), "ab", Plain()), "{a:x}|{0}".format(Fmt(log), a=Fmt(log)),
                 "{1}{0!s}".format(Fmt(log), [Plain()]), "{}".format({1: Plain()}), "{} {}".format(SetSub([1]), SetSub()))
        return x + 1, texts, log

    check(f, ones(), fullgraph=True)


def test_format_and_f_strings_of_objects():
    def f(x):
        log = []
        return (x + 1, format(Fmt(log), "y"), format(IntSub(5), "03"), format(IntSub(5)), f"{IntSub(7)}",
                f"{IntSub(7):>4}", f"{Fmt(log)!r}", f"{[Plain()]}", format(Plain()), log)

    check(f, ones(), fullgraph=True)


ERRORS = {
    "index": lambda: "{0}{5}".format(Fmt([])),
    "key": lambda: "{a}".format(Plain()),
    "switch-to-manual": lambda: "{}{0}".format(Plain(), 1),
    "switch-to-automatic": lambda: "{0}{}".format(Plain(), 1),
    "conversion": lambda: "{!x}".format(Plain()),
    "object-spec": lambda: format(Plain(), "x"),
    "object-spec-field": lambda: "{:>3}".format(Plain()),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_eagers_errors(name):
    call = ERRORS[name]

    def f(x):
        try:
            call()
        except (IndexError, KeyError, ValueError, TypeError) as e:
            return x + 1, type(e).__name__, str(e)
        return x

    check(f, ones(), fullgraph=True)


def test_fields_with_attributes_or_nested_specs_break():
    def f(x):
        y = x + 1
        return y, "{0.log}".format(Fmt([]))

    check(f, ones(), graphs=1, breaks=1, gb_types=["builtin needs a user object"])
