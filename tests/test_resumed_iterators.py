"""Iterators live at a graph break inside a loop (``zip``, ``map``, ``filter``,
``enumerate`` of them, ``reversed``, ``itertools``, input iterators, exhausted
ones) reach the resume function as objects it models from their state
(``__reduce__``), so the resumed loop breaks only where the user's code does,
and the iterators end where eager's do. A dict's iterator is rebuilt as the
dict's own, stepped to its place (a resumed loop over it still breaks per step)."""
import itertools

import pytest
import torch

import bytegraph
from tests.helpers import check


def show(x):
    print("step", end="")
    return x


XS = [torch.full((2,), float(i)) for i in range(3)]
YS = [torch.full((2,), 2.0 + i) for i in range(3)]


def loop_enumerate_zip(xs, ys):
    out = xs[0] * 0
    for i, (x, y) in enumerate(zip(xs, ys)):
        out = out + show(x) * y + i
    return out


def loop_zip(xs, ys):
    out = xs[0] * 0
    for x, y in zip(xs, ys):
        out = out + show(x) * y
    return out


def loop_map(xs, ys):
    out = xs[0] * 0
    for x in map(torch.mul, xs, ys):
        out = out * 2 + show(x)
    return out


def loop_filter(xs, ys):
    out = xs[0] * 0
    for x in filter(lambda t: t is not None, [xs[0], None, xs[1], None, xs[2]]):
        out = out * 2 + show(x)
    return out


def loop_reversed(xs, ys):
    out = xs[0] * 0
    for x in reversed(xs):
        out = out * 2 + show(x)
    return out


def loop_zip_count(xs, ys):
    out = xs[0] * 0
    for x, y in zip(xs, itertools.chain(ys)):
        out = out * 2 + show(x) * y
    return out


def loop_enumerate_map(xs, ys):
    out = xs[0] * 0
    for i, x in enumerate(map(torch.neg, xs), 5):
        out = out * 2 + show(x) + i
    return out


@pytest.mark.parametrize("fn", [loop_enumerate_zip, loop_zip, loop_map, loop_filter, loop_reversed, loop_zip_count,
                                loop_enumerate_map], ids=lambda f: f.__name__)
def test_loop_over_a_combining_iterator_breaks_only_at_the_users_break(fn):
    # the prefix with the first iteration, one graph per later iteration, the tail; the second call
    # hits; one distinct break, the print in show (the loop's pieces and show's own frame meet it)
    check(fn, calls=[(XS, YS)] * 2, graphs=4, breaks=1, gb_types=["print"])


def test_zip_held_by_a_local_continues_where_eager_does():
    def f(xs, ys):
        pairs = zip(xs, ys)
        out = xs[0] * 0
        for x, y in pairs:
            out = out + show(x) * y
            if out.shape[0] == 2 and len(out) == 2:
                break
        rest = next(pairs, None)
        return out, rest, next(pairs, "done"), next(pairs, "done")

    check(f, calls=[(XS, YS)] * 2, graphs=2, breaks=1, gb_types=["print"])


def test_strict_zip_of_unequal_lengths_raises_after_the_break_as_eager():
    def f(xs, ys):
        out = xs[0] * 0
        for x, y in zip(xs, ys, strict=True):
            out = out + show(x) * y
        return out

    # the last resume function's trace meets the ValueError: it runs natively from there
    check(f, XS, YS[:2], raises=ValueError, graphs=3, breaks=2, gb_types=["print", "user error"])


def test_next_with_default_on_a_zip_across_a_break():
    def f(xs, ys):
        z = zip(xs, ys)
        a = next(z, None)
        show(a)
        b, c, d = next(z, None), next(z, None), next(z, None)
        return a[0] + b[0] + c[1], d

    check(f, calls=[(XS, YS)] * 2, graphs=1, breaks=1, gb_types=["print"])  # nothing to compute before it


@pytest.mark.parametrize("kind", [list, tuple])
def test_next_with_default_on_an_exhausted_input_iterator(kind):
    def f(it, x):
        return x + (1 if next(it, None) is None else 2), next(it, "end")

    for made in (lambda: iter(kind()), lambda: _exhausted(kind)):  # empty, and exhausted for good
        check(f, make=lambda: (made(), torch.ones(2)), fullgraph=True)
        eager_it, compiled_it = made(), made()
        bytegraph.compile(f, backend="eager", fullgraph=True)(compiled_it, torch.ones(2))
        f(eager_it, torch.ones(2))
        assert list(compiled_it) == list(eager_it) == []  # direct: the iterators' state after the call


def _exhausted(kind):
    it = iter(kind([1]))
    list(it)
    next(it, None)  # exhausted for good: CPython drops the sequence
    return it


def loop_dict_view(view):
    def f(d):
        out = torch.zeros(2)
        for item in getattr(d, view)() if view else d:
            t = item[1] if view == "items" else d[item] if view in ("keys", "") else item
            out = out * 2 + show(t)
        return out

    return f


@pytest.mark.parametrize("view", ["keys", "values", "items", ""])
@pytest.mark.parametrize("kind", [dict, __import__("collections").OrderedDict])
def test_a_dict_iterator_live_at_a_break_is_the_dicts_own(view, kind):
    # the first frame's graph runs (the iterator is rebuilt as the dict's own, stepped to its place);
    # the resumed loop over a dict iterator input then breaks at each step
    d = kind((f"k{i}", torch.full((2,), float(i))) for i in range(3))
    graphs = 3 if view == "values" else 4  # the others also read d[key] or unpack an item in the resumed loop
    check(loop_dict_view(view), d, graphs=graphs, breaks=2, gb_types=["print", "unsupported iteration"])


def test_a_dict_changed_after_the_break_raises_as_eager():
    def f(d):
        out = torch.zeros(2)
        for k in d:
            out = out + show(d[k])
            d[k + "x"] = out  # eager's iterator raises at its next step
        return out

    check(f, {"a": torch.ones(2), "b": torch.ones(2)}, raises=RuntimeError, graphs=2, breaks=2,
          gb_types=["print", "unsupported iteration"])
