"""The differential harness itself (tests/helpers.py) fails where the compiled
side differs from eager: each backend below breaks one promise, and check must
say so. A harness that cannot fail hides what it was written to find."""
import collections

import pytest
import torch

from tests.helpers import assert_same, check, check_module, check_scenario, fresh


def wrapping(transform):
    """A backend whose compiled graph passes its outputs through ``transform``."""
    def backend(gm, example_inputs):
        def run(*args):
            out = gm.forward(*args)
            return type(out)(transform(o) for o in out) if isinstance(out, (list, tuple)) else transform(out)
        return run
    return backend


def writes_first_input(gm, example_inputs):
    def run(*args):
        args[0].add_(1)
        return gm.forward(*args)
    return run


def draws_a_random_number(gm, example_inputs):
    def run(*args):
        torch.rand(1)
        return gm.forward(*args)
    return run


def double(x):
    return x * 2


@pytest.mark.parametrize("backend, message", [
    (wrapping(lambda o: o + 1), "values differ"),
    (wrapping(lambda o: o.double()), "dtype"),
    (wrapping(lambda o: o.detach()), "requires_grad"),
    (wrapping(lambda o: o.reshape(-1, 1)), "shape"),
    (writes_first_input, "arguments"),
    (draws_a_random_number, "random generators' states"),
])
def test_a_compiled_difference_fails_the_check(backend, message):
    # (an input that requires grad would make the in-place write raise, and the frame rerun natively)
    x = torch.ones(3, requires_grad=backend is not writes_first_input)
    with pytest.raises(AssertionError, match=message):
        check(double, x, backend=backend)


def test_wrong_counts_fail_the_check():
    with pytest.raises(AssertionError, match="expected graphs=2, breaks=0; got graphs=1, breaks=0"):
        check(double, torch.ones(3), graphs=2)

    def breaks(x):
        print("a graph break")
        return x + 1

    with pytest.raises(AssertionError, match="got graphs=1, breaks=1"):
        check(breaks, torch.ones(3))
    with pytest.raises(AssertionError, match="expected gb_types"):
        check(breaks, torch.ones(3), breaks=1, gb_types=["something else"])


def test_an_exception_must_be_eagers():
    def raises(x):
        raise ValueError("eager's message")

    check(raises, torch.ones(2), raises=ValueError, graphs=0, breaks=1, gb_types=["uncaught exception"])
    with pytest.raises(AssertionError, match="not KeyError"):
        check(raises, torch.ones(2), raises=KeyError, graphs=0, breaks=1)
    with pytest.raises(ValueError):  # eager raising where the test expects a value is the test's failure
        check(raises, torch.ones(2))


def test_each_side_gets_its_own_equal_arguments():
    seen = []

    def keep(x, items):
        seen.append((x, items))
        items.append(1)
        return x + 1

    x, items = torch.ones(2), []
    check(keep, x, items)
    (eager_x, eager_items), (compiled_x, compiled_items) = seen[0], seen[-1]
    assert eager_x is not compiled_x and eager_x is not x and eager_items is not compiled_items
    assert items == []  # the caller's arguments are never run on


def test_copies_keep_leaf_ness_subclass_sharing_and_versions():
    class Tagged(torch.Tensor):
        pass

    leaf = torch.ones(3, requires_grad=True)
    tagged = torch.ones(2).as_subclass(Tagged)
    tagged.note = "kept"
    base = torch.arange(4.0)
    copied = fresh((leaf * 2, tagged, base, base[1:], [base]))
    assert not copied[0].is_leaf and copied[0].requires_grad
    assert type(copied[1]) is Tagged and copied[1].note == "kept"
    assert copied[3].untyped_storage().data_ptr() == copied[2].untyped_storage().data_ptr()
    assert copied[4][0] is copied[2] and copied[2]._version == base._version


def test_a_copy_that_is_not_faithful_is_refused():
    class Reversed(collections.namedtuple("Reversed", "a b")):
        def __iter__(self):  # deepcopy rebuilds a tuple subclass through its __iter__
            return iter((self.b, self.a))

    with pytest.raises(AssertionError, match="factory"):
        check(lambda x, pair: x + 1, torch.ones(2), Reversed(1, 2))
    check(lambda x, pair: x + 1, make=lambda: (torch.ones(2), Reversed(1, 2)))


@pytest.mark.parametrize("actual, expected, message", [
    ((torch.ones(2), torch.ones(2)), (lambda t: (t, t))(torch.ones(2)), "aliasing"),
    ([1, 2], (1, 2), "type"),
    (True, 1, "type"),
    (2.0, 2, "type"),
    (-0.0, 0.0, "values differ"),
    (collections.deque([1], maxlen=3), collections.deque([1]), "maxlen"),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}, "key"),
    (ValueError("x"), (lambda e: (e, setattr(e, "__context__", KeyError()))[0])(ValueError("x")), "context"),
])
def test_assert_same_tells_apart_what_eager_tells_apart(actual, expected, message):
    with pytest.raises(AssertionError, match=message):
        assert_same(actual, expected)


def test_assert_same_compares_shared_memory_and_object_state():
    a, b = torch.arange(4.0), torch.arange(4.0)
    assert_same((a, a[1:]), (b, b[1:]))
    with pytest.raises(AssertionError, match="share memory"):
        assert_same((a, a[1:].clone()), (b, b[1:]))

    class Box:
        def __init__(self, v):
            self.v = v

    assert_same(Box([1]), Box([1]))
    with pytest.raises(AssertionError, match="attributes"):
        assert_same(Box([1]), Box([2]))


def test_module_state_is_compared_after_each_call():
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
    check_module(model, torch.randn(4, 3), backward=True)

    def writes_every_parameter(gm, example_inputs):
        def run(*args):
            for a in args:
                if isinstance(a, torch.nn.Parameter):
                    a.data.add_(1)
            return gm.forward(*args)
        return run

    with pytest.raises(AssertionError, match="module state"):
        check_module(model, torch.randn(4, 3), backend=writes_every_parameter)


def test_a_scenario_compares_what_each_run_saw():
    def run(compile):
        scale = [2.0]
        fn = compile(lambda x: x * scale[0])
        first = fn(torch.ones(1))
        scale[0] = 3.0
        return first, fn(torch.ones(1))

    check_scenario(run, graphs=2)  # the guard on scale[0] recompiles
    with pytest.raises(AssertionError, match="scenario"):
        check_scenario(run, backend=wrapping(lambda o: o * 0), graphs=2)
