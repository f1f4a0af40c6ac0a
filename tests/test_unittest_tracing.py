"""unittest's assertion methods are plain Python: a compiled function that calls
them is traced through them (as torch.compile traces CPython's own test suite),
and the parts of unittest that run tests or do I/O stay graph breaks. Each test
compares with eager, with ``fullgraph=True`` where torch.compile captures the
function whole."""
import functools
import re
import traceback
import types
import unittest
import warnings

import pytest
import torch

import bytegraph
from helpers import check, t

full = functools.partial(check, fullgraph=True)


class Case(unittest.TestCase):
    def runTest(self):  # so that Case() makes a usable instance
        pass

    def assertPositive(self, value):  # a test base class's own assertion helper
        self.assertGreater(value, 0, "not positive")


tc = Case()


# ---- K01: the assertion methods, passing and failing ----------------------------------

ASSERTIONS = [
    ("assertEqual", (3, 3)), ("assertEqual", ([1, 2], [1, 2])), ("assertEqual", ((1, "a"), (1, "a"))),
    ("assertEqual", ({"a": 1}, {"a": 1})), ("assertEqual", ("ab", "ab")), ("assertEqual", ({1, 2}, {2, 1})),
    ("assertNotEqual", (1, 2)), ("assertTrue", (1,)), ("assertFalse", ([],)), ("assertIs", (None, None)),
    ("assertIsNot", (1, None)), ("assertIsNone", (None,)), ("assertIsNotNone", (0,)), ("assertIn", (1, [1, 2])),
    ("assertNotIn", ("c", "ab")), ("assertIsInstance", (1, int)), ("assertNotIsInstance", (1, str)),
    ("assertAlmostEqual", (1.0, 1.0 + 1e-9)), ("assertNotAlmostEqual", (1.0, 1.1)), ("assertGreater", (2, 1)),
    ("assertGreaterEqual", (2, 2)), ("assertLess", (1, 2)), ("assertLessEqual", (2, 2)),
    ("assertSequenceEqual", ([1, 2], (1, 2))), ("assertListEqual", ([1], [1])), ("assertTupleEqual", ((1,), (1,))),
    ("assertDictEqual", ({1: 2}, {1: 2})), ("assertSetEqual", ({1}, frozenset({1}))),
    ("assertMultiLineEqual", ("a\nb", "a\nb")), ("assertCountEqual", ([1, 2, 2], [2, 1, 2])),
    ("assertRegex", ("abc", "b")), ("assertNotRegex", ("abc", "d")), ("assertPositive", (3,)),
]


@pytest.mark.parametrize("name,args", ASSERTIONS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(ASSERTIONS)])
def test_passing_assertion_is_traced(name, args):
    def f(x):
        getattr(tc, name)(*args)
        return x + 1

    full(f, t(2))


FAILING = [
    ("assertEqual", (3, 4)), ("assertEqual", ("ab", "ac")),
    ("assertTrue", (0,)), ("assertIs", (1, None)), ("assertIn", (3, [1, 2])), ("assertIsInstance", (1, str)),
    ("assertAlmostEqual", (1.0, 1.1)), ("assertGreater", (1, 2)), ("assertPositive", (-1,)),
]


@pytest.mark.parametrize("name,args", FAILING, ids=[f"{n}-{i}" for i, (n, _) in enumerate(FAILING)])
def test_failing_assertion_raises_eagers_assertion_error(name, args):
    def f(x):
        try:
            getattr(tc, name)(*args)
        except AssertionError:
            return x - 1
        return x + 1

    full(f, t(2))


def test_fail_and_the_message_argument():
    def f(x):
        try:
            tc.fail("stop here")
        except AssertionError as e:
            return x + len(e.args[0])
        return x

    full(f, t(2))


def test_unbound_and_subclass_assertion_calls():
    def f(x):
        unittest.TestCase.assertEqual(tc, [1], [1])
        Case.assertIn(tc, 1, (1,))
        return x + 1

    full(f, t(2))


def test_assertion_on_tensor_values():
    def f(x):
        tc.assertEqual(x.shape, (2,))
        tc.assertTrue(x.dim() == 1)
        return x + 1

    full(f, t(2))


def test_subtest_without_a_runner_is_traced():
    def f(x):
        for i in range(2):
            with tc.subTest(i=i):
                x = x + i
        return x

    full(f, t(2))


def test_skip_test_raises_skiptest():
    def f(x):
        try:
            tc.skipTest("no")
        except unittest.SkipTest as e:
            return x + len(str(e))
        return x

    full(f, t(2))


# ---- K02: test code wherever it is defined ---------------------------------------------

def _defined_in(module: str, fn: types.FunctionType) -> types.FunctionType:
    """``fn`` as if defined in ``module`` (a library a test base class borrows from)."""
    return types.FunctionType(fn.__code__, {"__name__": module, "__builtins__": __builtins__}, fn.__name__,
                              fn.__defaults__)


def _sequence_equal(self_, seq1, seq2, msg=None, seq_type=None):
    return self_.assertTrue(seq1 == seq2, msg)


class PolyfilledCase(Case):
    """A test base class that installs a library's function as an assertion method."""
    assertSequenceEqual = _defined_in("torch._dynamo.polyfills", _sequence_equal)


@pytest.mark.parametrize("module", ["torch._dynamo.polyfills", "unittest.mock", "logging"])
def test_assertion_method_installed_from_a_skipped_module_is_test_code(module):
    class Installed(Case):
        assertSequenceEqual = _defined_in(module, _sequence_equal)

    case = Installed()

    def f(x):
        case.assertEqual([1, 2], [1, 2])  # assertListEqual -> the installed assertSequenceEqual
        case.assertSequenceEqual((1,), (1,))
        return x + 1

    full(f, t(2))


def test_the_same_function_called_plainly_keeps_its_modules_rule():
    fn = _defined_in("logging", _sequence_equal)

    def f(x):
        y = x * 2
        fn(tc, [1], [1])
        return y + 1

    check(f, t(2), graphs=2, breaks=1, gb_types=["call to skipped function"])


# ---- K03: assertRaises / assertRaisesRegex, and the traceback they clear ----------------

def test_assert_raises_as_a_call():
    def f(x):
        tc.assertRaises(KeyError, {}.__getitem__, "a")
        tc.assertRaises((KeyError, IndexError), [].pop)
        tc.assertRaisesRegex(ValueError, "invalid literal", int, "x")
        return x + 1

    full(f, t(2))


def test_assert_raises_as_a_context_manager():
    def f(x):
        with tc.assertRaises(KeyError) as cm:
            {}["a"]
        with tc.assertRaisesRegex(ZeroDivisionError, "division"):
            1 / 0
        return x + 1, cm.exception.args, cm.exception.__traceback__ is None

    full(f, t(2))


def test_assert_raises_that_nothing_raised_fails():
    def f(x):
        try:
            with tc.assertRaises(KeyError):
                x = x + 1
        except AssertionError as e:
            return x, str(e)
        return x, ""

    full(f, t(2))


def test_assert_raises_lets_another_exception_through():
    def f(x):
        try:
            with tc.assertRaises(KeyError):
                raise ValueError("other")
        except ValueError as e:
            return x + 1, e.args
        return x, ()

    full(f, t(2))


def test_assert_raises_regex_mismatch_fails():
    def f(x):
        try:
            with tc.assertRaisesRegex(ValueError, "^nope$"):
                raise ValueError("other")
        except AssertionError as e:
            return x + 1, str(e)
        return x, ""

    full(f, t(2))


def test_traceback_of_a_raised_exception_exists_and_is_cleared():
    def f(x):
        try:
            raise ValueError("a")
        except ValueError as e:
            tb = e.__traceback__
            traceback.clear_frames(tb)
            traceback.clear_frames(None)
            cleared = e.with_traceback(None)
            return x + 1, tb is not None, cleared is e, e.__traceback__ is None

    full(f, t(2))


def test_traceback_of_an_exception_never_raised_is_none():
    def f(x):
        e = KeyError("k")
        e.__traceback__ = None
        return x + 1, e.__traceback__ is None

    full(f, t(2))


def test_exit_of_a_context_manager_receives_the_traceback():
    class Seen:
        def __enter__(self):
            return self

        def __exit__(self, typ, value, tb):
            self.got = (typ, tb is not None, value.__traceback__ is tb)
            return True

    def f(x):
        seen = Seen()
        with seen:
            raise KeyError("a")
        return x + 1, seen.got

    full(f, t(2))


def test_reading_a_frame_of_the_traceback_breaks():
    def f(x):
        try:
            raise KeyError("a")
        except KeyError as e:
            line = e.__traceback__.tb_lineno
        return x + 1, line

    check(f, t(2), graphs=0, breaks=1, gb_types=["exception traceback"])


# ---- what still breaks: the runner's machinery and I/O ---------------------------------

def test_assert_warns_breaks():
    def f(x):
        with tc.assertWarns(UserWarning):
            warnings.warn("w")
        return x + 1

    # __enter__, then __exit__ in the resume function; the graph is the one after the break
    check(f, t(2), graphs=1, breaks=2, gb_types=["call to skipped function"] * 2)


def test_assert_logs_breaks():
    def f(x):
        with tc.assertLogs("some.logger"):
            __import__("logging").getLogger("some.logger").warning("w")
        return x + 1

    check(f, t(2), graphs=1, breaks=4, gb_types=["call to skipped function", "call to skipped function",
                                                 "unsupported builtin call", "call to skipped function"])
