"""A dict iterator over a dict whose keys are deleted and inserted at the same
size answers as CPython's: where bytegraph knows the dict's entry table (a small
dict display, or any dict after ``clear()``) it walks it in the trace, meeting
new keys in their places and raising eager's "keys changed" RuntimeError;
where it does not, the loop runs natively. An iterator that has ended stays
ended whatever the dict does next. Each case is compared with eager."""
import collections

import pytest
import torch

from tests.helpers import check


def caught(body):
    def f(x):
        try:
            result = body()
        except RuntimeError as e:
            return x + 1, str(e)
        return x * 2, result
    return f


VIEWS = {"dict": lambda d: d, "keys": lambda d: d.keys(), "values": lambda d: d.values(),
         "items": lambda d: d.items()}


@pytest.mark.parametrize("view", list(VIEWS))
def test_the_only_key_deleted_and_put_back_raises_keys_changed(view):
    def body():
        d = {}
        d[0] = 0
        seen = []
        for item in VIEWS[view](d):
            seen.append(item)
            del d[0]
            d[0] = len(seen)
        return seen
    check(caught(body), torch.ones(1), fullgraph=True)


LAYOUTS = {
    # a str-keyed table takes an int key by resizing: packed, the new key is simply next
    "str keys, int key added": lambda: _step({"a": 1, "b": 2}, "a", 0),
    # an int-keyed table keeps the hole: the old key, then the new one is one too many
    "int keys": lambda: _step({1: 1, 2: 2}, 1, 0),
    "str keys, str key added": lambda: _step({"a": 1, "b": 2}, "a", "c"),
    "a later key replaced": lambda: _step({1: 1, 2: 2, 3: 3}, 3, 4),
}


def _step(d, old, new):
    it = iter(d)
    seen = [next(it)]
    del d[old]
    d[new] = 0
    seen.extend(it)
    return seen


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_a_small_display_is_walked_as_cpython_lays_it_out(name):
    check(caught(LAYOUTS[name]), torch.ones(1), fullgraph=True)


def test_an_ended_iterator_stays_ended_when_the_dict_grows():
    def body():
        d = {0: 0}
        it = iter(d)
        first = list(it)
        d[1] = 1
        return first, list(it)
    check(caught(body), torch.ones(1), fullgraph=True)


def test_clear_makes_the_layout_of_any_dict_known():
    def f(x, d):
        d.clear()
        d[0] = 0
        try:
            for k in d:
                del d[0]
                d[0] = 1
        except RuntimeError as e:
            return x + 1, str(e), d
        return x * 2, d
    check(f, torch.ones(1), dict.fromkeys(range(8)), fullgraph=True)


@pytest.mark.parametrize("make", ["argument", "six-key display", "defaultdict"])
def test_keys_changed_at_the_same_size_where_the_layout_is_unknown_runs_natively(make):
    def f(x, d):
        y = x + 1
        if make == "six-key display":
            d = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5}
        seen = []
        try:
            for k in d:
                seen.append(k)
                del d[k]
                d[10 + len(seen)] = 0
        except RuntimeError as e:
            return y, str(e), seen
        return y * 2, seen

    arg = collections.defaultdict(int, {0: 0, 1: 1}) if make == "defaultdict" else dict.fromkeys(range(3))
    # the break falls at the loop's FOR_ITER: the graph before it runs, the loop natively
    check(f, torch.ones(1), arg, breaks=1, gb_types=["user error"])


def test_room_used_by_keys_popped_is_not_given_back():
    """Five insertions fill the small table even though one key was popped: the
    sixth resizes it, packing the hole away (the walk meets the next key at once)."""
    def body():
        d = {0: 0, 1: 1}
        d.popitem()
        d[2], d[3], d[4] = 2, 3, 4
        it = iter(d)
        seen = [next(it)]
        del d[0]
        d[5] = 5
        seen.extend(it)
        return seen
    check(caught(body), torch.ones(1), fullgraph=True)


class _Dict(dict):
    pass


class _Ordered(collections.OrderedDict):
    pass


class _Default(collections.defaultdict):
    pass


SUBCLASSES = {"dict": lambda: _Dict.fromkeys("abc"), "OrderedDict": lambda: _Ordered.fromkeys("abc"),
              "defaultdict": lambda: _Default(int, dict.fromkeys("abc"))}


@pytest.mark.parametrize("cls", list(SUBCLASSES))
@pytest.mark.parametrize("change", ["delete", "grow", "replace value", "none"])
def test_a_dict_subclass_made_in_the_trace_is_iterated_by_its_base_iterator(cls, change):
    """iter() of an instance that leaves __iter__ to its base sees the instance's
    changes as the base's own iterator does (not a list of the keys taken at the start)."""
    def body():
        d = SUBCLASSES[cls]()
        it = iter(d)
        seen = [next(it)]
        if change == "delete":
            del d[seen[0]]
        elif change == "grow":
            d["z"] = 1
        elif change == "replace value":
            d["b"] = 2
        seen.extend(it)
        return seen, sorted(d.items())
    check(caught(body), torch.ones(1), fullgraph=True)
