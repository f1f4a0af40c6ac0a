"""Exceptions made in the trace: stores to their attributes with CPython's type
checks, and their string forms, compared with eager."""
import pytest

from tests.helpers import check, t


def _store_each(x, name, values):
    out = []
    for value in values:
        e = ValueError("v")
        try:
            setattr(e, name, value)
            out.append(("stored", value is getattr(e, name) if name != "__suppress_context__" else getattr(e, name)))
        except TypeError as err:
            out.append(("TypeError", str(err)))
    return x + 1, out


@pytest.mark.parametrize("name, values", [
    ("__traceback__", [None, 5, "tb", (), 1.5]),
    ("__cause__", [None, 5, "c", (), KeyError]),  # a class is not an exception instance
    ("__context__", [None, 5, [], KeyError]),
    ("__suppress_context__", [True, False, 1, 0, None, "yes"]),  # only a bool: not even 1
])
def test_exception_attribute_store_type_checks(name, values):
    check(lambda x: _store_each(x, name, values), t(2), fullgraph=True)


def test_exception_attribute_store_of_a_traced_exception_or_traceback():
    def f(x):
        try:
            raise KeyError("k")
        except KeyError as caught:
            tb = caught.__traceback__
        e = ValueError("v")
        e.__cause__ = IndexError("i")
        errors = []
        for name, value in (("__traceback__", IndexError("i")), ("__cause__", tb), ("__context__", tb)):
            try:
                setattr(e, name, value)
            except TypeError as err:
                errors.append(str(err))
        e.__traceback__ = tb
        e.__traceback__ = None
        return x + 1, errors, type(e.__cause__).__name__, e.__suppress_context__, e.__traceback__ is None

    check(f, t(2), fullgraph=True)


def test_with_traceback_of_a_wrong_type_raises_eagers_type_error():
    def f(x):
        try:
            ValueError().with_traceback(3)
        except TypeError as err:
            return x + 1, str(err)
        return x, ""

    check(f, t(2), fullgraph=True)


def test_str_of_unicode_errors_with_positions_in_range_is_folded():
    def f(x):
        return (x + 1, str(UnicodeEncodeError("utf-8", "abc", 1, 2, "r")),
                str(UnicodeDecodeError("utf-8", b"abc", 0, 2, "r")), str(UnicodeTranslateError("abc", 2, 3, "r")))

    check(f, t(2), fullgraph=True)


@pytest.mark.parametrize("make", [
    lambda: UnicodeEncodeError("utf-8", "", -5, -4, ""),
    lambda: UnicodeTranslateError("", 3, 4, ""),
    lambda: UnicodeDecodeError("utf-8", b"", 0, 1, ""),
])
def test_str_of_unicode_errors_whose_builtin_str_fails_runs_natively(make):
    """CPython 3.11's UnicodeError.__str__ reads out of range on such positions and
    returns with an error set (3.13 gives text): folding it at trace time must not
    leave that error pending; the native run does what eager does."""
    try:
        str(make())
        eager_fails = False
    except SystemError:
        eager_fails = True

    def f(x):
        try:
            text = str(make())
        except SystemError as err:
            text = type(err.__cause__).__name__
        return x + 1, text

    check(f, t(2), breaks=1 if eager_fails else 0, graphs=0 if eager_fails else 1,  # a break in try: all native
          gb_types=["exception text failed"] if eager_fails else [])


# --- generators suspended inside try/except, and the exception state they see ---------------------

import sys  # noqa: E402


def _yields_handled_exception():
    try:
        yield 1
    except ZeroDivisionError:
        yield sys.exception()


def _yields_in_nested_except_bodies():
    try:
        raise KeyError("a")
    except Exception:
        try:
            yield sys.exception()
        except Exception as exc:
            yield type(exc).__name__, type(exc.__context__).__name__, exc.__context__.args, type(sys.exception())


def _yields_in_except_body_with_finally(log):
    try:
        raise KeyError("a")
    except KeyError:
        try:
            yield 1
        finally:
            log.append("finally")


def _yields_in_except_body_catching_base(log):
    try:
        raise KeyError("a")
    except KeyError:
        try:
            yield 1
        except BaseException as e:
            log.append(type(e).__name__)
            raise


def test_generator_thrown_into_while_the_caller_handles_an_exception():
    """gen.throw() saves and restores the caller's exception state; the generator
    is left suspended in its except body (closing it runs no code of it)."""
    def f(x):
        it = _yields_handled_exception()
        next(it)
        try:
            1 / 0
        except ZeroDivisionError as e:
            before = sys.exception() is e
            seen = it.throw(e)
            after = sys.exception() is e
            same = seen is e
        return x + 1, before, after, same, sys.exception() is None

    check(f, t(2), fullgraph=True)


def test_generator_suspended_in_nested_except_bodies_sees_its_own_context():
    def f(x):
        gen = _yields_in_nested_except_bodies()
        inside = type(gen.send(None)).__name__
        outside = sys.exception()
        thrown = gen.throw(ValueError)
        return x + 1, inside, outside, thrown, sys.exception()

    check(f, t(2), fullgraph=True)


@pytest.mark.parametrize("make", [_yields_in_except_body_with_finally, _yields_in_except_body_catching_base])
def test_generator_suspended_in_an_except_body_whose_close_runs_code_is_made_natively(make):
    def f(x, log):
        gen = make(log)
        return x + next(gen), sys.exception()

    check(f, calls=[(t(2), []), (t(2), [])], graphs=0, breaks=1, gb_types=["suspended generator"])


@pytest.mark.parametrize("value", [[1, 2], (), "ab", range(3), 5, None])
def test_exception_args_store_makes_a_tuple_or_raises_eagers_type_error(value):
    def f(x):
        e = KeyError("a")
        try:
            e.args = value
        except TypeError as err:
            return x + 1, str(err)
        return x + 1, e.args, str(e), repr(e), e

    check(f, t(2), fullgraph=True)


def test_exception_args_store_on_a_class_with_fields_of_its_own_breaks():
    def f(x):
        e = OSError(2, "missing")
        e.args = (3, "other")
        return x + 1, str(e), e.args

    # (the resume function meets str() of the real exception, a break of its own)
    check(f, t(2), graphs=1, breaks=2, gb_types=["unsupported attribute store", "str of traced value"])
