"""An exception raised inside the ``with`` block of a ``contextlib.contextmanager``
made in Python: the context's ``__exit__`` throws it into the generator (on 3.11
as ``gen.throw(type, value, traceback)``, from 3.12 as ``gen.throw(value)``),
where the generator may let it through, catch it, or raise another; the
compiled function does what eager does, in one graph where eager catches it."""
import contextlib

import pytest
import torch

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
