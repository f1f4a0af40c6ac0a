"""An exception raised inside the ``with`` block of a ``contextlib.contextmanager``
made in Python: the context's ``__exit__`` throws it into the generator (on 3.11
as ``gen.throw(type, value, traceback)``, from 3.12 as ``gen.throw(value)``),
where the generator may let it through, catch it, or raise another; the
compiled function does what eager does, in one graph where eager catches it,
and an uncaught one is reported at the line that raised it."""
import contextlib
import inspect

import pytest
import torch

import bytegraph
import bytegraph.breaks
from tests.helpers import check


@contextlib.contextmanager
def passing():
    yield


@contextlib.contextmanager
def suppressing():
    try:
        yield
    except KeyError:
        pass


@contextlib.contextmanager
def translating():
    try:
        yield
    except KeyError as e:
        raise ValueError("translated") from e


@contextlib.contextmanager
def cleaning(log):
    try:
        yield
    finally:
        log.append("cleaned")


def test_an_exception_through_a_generator_context_is_caught_outside_it():
    def f(x):
        try:
            with passing():
                raise TypeError("boom")
        except TypeError:
            return x + 1

    check(f, torch.ones(2), fullgraph=True)


def test_a_generator_context_that_suppresses():
    def f(x):
        with suppressing():
            x = x * 2
            raise KeyError("k")
        return x + 1

    check(f, torch.ones(2), fullgraph=True)


def test_a_generator_context_that_raises_another_exception():
    def f(x):
        try:
            with translating():
                raise KeyError("k")
        except ValueError as e:
            return x - 1, str(e), type(e.__cause__).__name__

    check(f, torch.ones(2), fullgraph=True)


def test_a_generator_context_runs_its_finally_on_the_way_out():
    def f(x, log):
        try:
            with cleaning(log):
                log.append("body")
                raise IndexError("i")
        except IndexError:
            log.append("caught")
        return x * 3

    check(f, torch.ones(2), [], fullgraph=True)


def test_a_binding_error_in_a_generator_context_propagates_as_eagers():
    class NeedsArgument:
        def __init__(self, arg):
            self.arg = arg

    def f(x):
        with passing():
            NeedsArgument()
        return x

    # uncaught: the frame runs natively (the context's traced generator, live at the breaks
    # tried before it, cannot be rebuilt)
    check(f, torch.ones(2), raises=TypeError, graphs=0, breaks=3,
          gb_types=["uncaught exception", "cannot reconstruct", "cannot reconstruct"])


@pytest.mark.parametrize("through", ["with", "finally"])
def test_an_uncaught_exception_is_reported_where_it_was_raised(through):
    # the break's user frame is the raising line, not the with statement or finally the exception leaves by
    def f(x, log):
        y = x + 1
        if through == "with":
            with passing():
                raise KeyError("raised in a with block")
        try:
            raise KeyError("raised in a try block")
        finally:
            log.append("finally")
        return y

    with pytest.raises(bytegraph.breaks.Unsupported) as caught:
        bytegraph.compile(f, backend="eager", fullgraph=True)(torch.ones(2), [])
    assert caught.value.gb_type == "uncaught exception"
    lines, start = inspect.getsourcelines(f)
    marker = "raised in a with block" if through == "with" else "raised in a try block"
    raising = start + next(i for i, line in enumerate(lines) if marker in line)
    assert caught.value.user_stack[-1].lineno == raising
