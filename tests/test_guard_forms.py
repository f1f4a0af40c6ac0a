"""The cheaper forms the guard function uses check exactly what the plain forms
did: identity through a weak reference, a class's method checked once per
distinct class, float zero/NaN constants by their sign, a parameter's
requires_grad by its truth, an empty container by its truth, a constant that is
still the traced object by identity. Constants, dict keys, set items and slice
bounds are checked by exact type, items too ((2.0, 3) == (2, 3) but is another
constant for a trace). Every change recompiles, with a reason naming what
changed (or the read that raised); nothing else does.

Each test changes what one compiled function read between its calls, which
check's copies per call cannot do: they call one compiled function directly and
count its entries."""
import cmath
import gc
import math
import weakref

import pytest
import torch
from torch import nn

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter, same


def all_reasons():
    return [r for stats in metrics.FRAMES.values() for r in stats.recompile_reasons]


class Compiled:
    """A module compiled, each call compared with eager."""

    def __init__(self, module):
        self.module = module
        self.cnt = CompileCounter()
        self.compiled = bytegraph.compile(module, backend=self.cnt)

    def __call__(self, *args):
        actual = self.compiled(*args)
        expected = self.module(*args)
        assert same(actual, expected), f"{actual!r} != {expected!r}"
        return actual

    @property
    def graphs(self):
        return self.cnt.frame_count


class Configured(nn.Module):
    """A module whose forward reads constant attributes of several types, as
    a convolution reads padding_mode/stride/padding/dilation/groups."""

    def __init__(self):
        super().__init__()
        self.mode = "zeros"
        self.stride = (1, 2)
        self.groups = 1
        self.eps = 1e-5
        self.flag = False

    def forward(self, x):
        y = x * self.groups + self.eps
        y = y + len(self.mode) + self.stride[1]
        return -y if self.flag else y


@pytest.mark.parametrize("attr, value", [
    ("mode", "reflect"),       # value change, first attribute
    ("stride", (1, 3)),        # value change inside a tuple
    ("stride", [1, 2]),        # type change, equal items
    ("groups", 1.0),           # int -> equal float
    ("groups", True),          # int -> equal bool
    ("groups", 2),             # value change
    ("eps", 1e-3),             # value change, float
    ("flag", True),            # bool flip, last attribute
    ("flag", 0),               # bool -> falsy int
])
def test_each_constant_attribute_recompiles_when_it_alone_changes(attr, value):
    module = Configured()
    reason = recompile_reason(module, lambda: setattr(module, attr, value))
    # (a tuple read item by item names the item read: 'module.stride[1]')
    assert reason.startswith((f"'module.{attr}' ", f"'module.{attr}[")), reason


def recompile_reason(module, change):
    """Compile ``module``, call it, ``change()`` it: one recompile, whose
    reason is returned; the changed module then stays compiled."""
    run = Compiled(module)
    x = torch.randn(3)
    run(x)
    run(x)
    assert run.graphs == 1
    change()
    run(x)
    run(x)
    assert run.graphs == 2
    (reason,) = all_reasons()
    return reason


class Scale(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


class Scaled2x(Scale):
    def forward(self, x):
        return x * self.factor * 2


class Chain(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Scale(2.0)
        self.b = Scale(3.0)
        self.c = Scale(5.0)

    def forward(self, x):
        return self.c(self.b(self.a(x)))


@pytest.mark.parametrize("which", ["a", "b", "c"])
def test_module_of_a_shared_class_given_another_class_recompiles(which):
    """The modules share one class, whose forward is checked once; one of them
    getting another class (any position) is still seen."""
    model = Chain()
    reason = recompile_reason(model, lambda: setattr(getattr(model, which), "__class__", Scaled2x))
    assert reason.startswith(f"'module.{which}.__class__.forward' is no longer the same object"), reason


def test_method_of_a_shared_class_replaced_recompiles():
    model = Chain()
    run = Compiled(model)
    x = torch.randn(3)
    run(x)
    saved = Scale.forward
    try:
        Scale.forward = lambda self, x: x - self.factor
        run(x)
    finally:
        Scale.forward = saved
    assert run.graphs == 2
    assert "forward" in all_reasons()[0]
    run(x)
    assert run.graphs == 2  # the first entry matches again


@pytest.mark.parametrize("first, second, recompiles", [
    (0.0, -0.0, True),
    (-0.0, 0.0, True),
    (0.0, float("0"), False),     # another zero object
    (math.nan, float("nan"), False),   # another NaN object: still NaN
    (math.nan, -math.nan, True),        # the sign of a NaN tells it apart, as for zero
    (math.nan, 0.0, True),
    (0.0, math.nan, True),
    (0.0, 0, True),                     # int zero: another type
])
def test_float_zero_and_nan_constants(first, second, recompiles):
    module = Scale(first)
    run = Compiled(module)
    x = torch.randn(3)
    run(x)
    module.factor = second
    run(x)
    assert run.graphs == (2 if recompiles else 1)
    if recompiles:
        (reason,) = all_reasons()
        assert reason.startswith("'module.factor' value mismatch"), reason


def test_parameter_requires_grad_change_recompiles():
    module = nn.Linear(3, 2)
    run = Compiled(module)
    x = torch.randn(4, 3)
    assert run(x).requires_grad
    module.weight.requires_grad_(False)
    module.bias.requires_grad_(False)
    assert not run(x).requires_grad
    assert run.graphs == 2
    (reason,) = all_reasons()
    assert "requires_grad" in reason and "weight" in reason, reason
    module.weight.requires_grad_(True)
    module.bias.requires_grad_(True)
    assert run(x).requires_grad
    assert run.graphs == 2


class Box:
    pass


def test_identity_guard_on_a_dead_object_does_not_match_none():
    """An argument guarded by identity dies, so the weak reference the guard
    compares with gives None, and None is passed next: the call answers
    id(None) as eager does (the entry died with the object, and its type
    guard would refuse None too)."""
    def f(x, box):
        return x + 1, id(box)

    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3)
    box = Box()
    assert same(compiled(x, box), f(x, box))
    alive = weakref.ref(box)
    del box
    assert alive() is None  # nothing bytegraph keeps holds it
    for arg in (None, None):
        assert same(compiled(x, arg), f(x, arg))


@pytest.mark.parametrize("empty, filled, why", [
    ([], [1], "length mismatch: expected 0, got 1"),
    ({}, {"a": 1}, "length mismatch: expected 0, got 1"),
    ((), (1,), "value mismatch: expected (), got (1,)"),  # a tuple of constants is a constant
])
def test_empty_container_argument_guarded_by_length(empty, filled, why):
    """An empty list/dict is checked by its truth; gaining an item recompiles."""
    def f(x, items):
        return x + len(items)

    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3)
    for items in (empty, type(empty)(), filled, empty, filled):
        assert same(compiled(x, items), f(x, items))
    assert cnt.frame_count == 2
    (reason,) = all_reasons()
    assert reason == f"'items' {why}", reason


def test_empty_container_of_a_subclass_keeps_len():
    """A subclass's own __len__ decides, as eager's len() does."""
    class Counted(list):
        def __len__(self):
            return 5

    def f(x, items):
        return x + len(items)

    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3)
    for items in ([], Counted(), Counted([1])):
        assert same(compiled(x, items), f(x, items))


def scale_by_first(x, t):
    return x * t[0][0] if type(t[0]) is tuple else x * t[0]


@pytest.mark.parametrize("first, second", [
    ((2, 3), (2.0, 3)),            # an item equal but a float: an int tensor times 2.0 is a float tensor
    ((1, 3), (True, 3)),           # an item equal but a bool
    ((2, 3), (2, 3.0)),            # an item the trace never read: no recompile
    ((2, None), (2, 0)),
    (((2, 5), 3), ((2.0, 5), 3)),  # an item of a nested tuple
    (((0.0,), 3), ((-0.0,), 3)),   # the sign of a nested float zero
])
def test_tuple_constant_items_are_checked_by_type(first, second):
    cnt = CompileCounter()
    compiled = bytegraph.compile(scale_by_first, backend=cnt)
    x = torch.arange(3)
    for t in (first, second, first):
        actual, expected = compiled(x, t), scale_by_first(x, t)
        assert same(actual, expected) and actual.dtype == expected.dtype
        assert torch.equal(torch.signbit(actual), torch.signbit(expected))
    read_item_changed = type(first[0]) is not type(second[0]) or repr(first[0]) != repr(second[0])
    assert cnt.frame_count == (2 if read_item_changed else 1)
    # (the tuple is guarded item by item as read: the reason names the item)
    assert all_reasons() == ([f"'t[0]' value mismatch: expected {first[0]!r}, got {second[0]!r}"]
                             if read_item_changed else [])


def test_constant_attribute_assigned_an_equal_object_does_not_recompile():
    """A new object equal to the constant, of the same types, still matches
    (the same object passes with one `is`; an equal one by value)."""
    module = Configured()
    run = Compiled(module)
    x = torch.randn(3)
    run(x)
    module.mode = "".join(["ze", "ros"])
    module.stride = tuple([1, 2])
    module.eps = float("1e-5")
    run(x)
    assert run.graphs == 1
    assert all_reasons() == []


def multiply_by_each(x, items):
    out = x
    for item in items:
        out = out * (item[0] if type(item) is tuple else item)
    return out


@pytest.mark.parametrize("first, second", [
    ({2: "a"}, {2.0: "a"}),                  # dict keys: equal, another type
    ({(2,): "a"}, {(2.0,): "a"}),            # an item of a tuple key
    ({0.0: "a"}, {-0.0: "a"}),               # the sign of a float zero key
    ({2}, {2.0}),                            # set items
    ({(2, 1)}, {(2.0, 1)}),
    ({-0.0}, {0.0}),
    (frozenset({2}), frozenset({2.0})),      # a frozenset is a constant
    (frozenset({(2,)}), frozenset({(2.0,)})),
    (frozenset({0.0}), frozenset({-0.0})),
])
def test_keys_and_set_items_are_checked_by_type(first, second):
    cnt = CompileCounter()
    compiled = bytegraph.compile(multiply_by_each, backend=cnt)
    x = torch.arange(3)
    for items in (first, second, first, second):
        actual, expected = compiled(x, items), multiply_by_each(x, items)
        assert same(actual, expected) and actual.dtype == expected.dtype
        assert torch.equal(torch.signbit(actual), torch.signbit(expected))
    assert cnt.frame_count == 2


def test_equal_keys_of_the_same_types_do_not_recompile():
    cnt = CompileCounter()
    compiled = bytegraph.compile(multiply_by_each, backend=cnt)
    x = torch.arange(3)
    for items in ({2: "a", 1000: 1}, {2: "a", int("1000"): 1}, {(2, 1)}, {tuple([2, 1])}):  # equal new objects
        assert same(compiled(x, items), multiply_by_each(x, items))
    assert cnt.frame_count == 2  # one per container type


def index_with(x, s):
    return x[s]


def test_slice_constant_items_are_checked_by_type():
    """slice(1, 3) == slice(1.0, 3), but eager indexing raises for the float."""
    cnt = CompileCounter()
    compiled = bytegraph.compile(index_with, backend=cnt)
    x = torch.arange(5)
    assert same(compiled(x, slice(1, 3)), index_with(x, slice(1, 3)))
    with pytest.raises(TypeError):
        index_with(x, slice(1.0, 3))
    with pytest.raises(TypeError):
        compiled(x, slice(1.0, 3))
    assert same(compiled(x, slice(1, 3)), index_with(x, slice(1, 3)))


def test_recompile_reason_names_the_guard_whose_read_raised():
    """A value read from the arguments raises on the new ones (a set has no
    items by key): the reason names that read, not the guard before it."""
    cnt = CompileCounter()
    compiled = bytegraph.compile(multiply_by_each, backend=cnt)
    x = torch.arange(3)
    for items in ({2: "a"}, {2}):
        assert same(compiled(x, items), multiply_by_each(x, items))
    assert cnt.frame_count == 2
    (reason,) = all_reasons()
    assert reason == "'items[2]' could not be read: TypeError: 'set' object is not subscriptable", reason


# --- objects that die while guards run; weak references as guarded objects -----------------

class CollectOnceWhenArmed(torch.overrides.TorchFunctionMode):
    """Runs one cycle collection at the first native tensor-attribute read after
    arming: an automatic collection, which any allocation in a guard can start."""

    armed = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if CollectOnceWhenArmed.armed and not torch.compiler.is_compiling():
            CollectOnceWhenArmed.armed = False
            gc.collect()
        return func(*args, **(kwargs or {}))


marker = None


def uses_marker(x):
    if marker is None:
        return x + 100
    return x * 3 if isinstance(x, marker) else x * 2


def test_object_dying_while_an_earlier_entry_is_checked_never_matches_none():
    """The guarded class dies inside the first entry's guard (a collection),
    after the cache loop has already listed the second entry: that entry's
    weak identity check must not take the None at the source for the dead
    class."""
    global marker

    class Marker:  # a class sits in reference cycles: only the collector frees it
        pass

    marker = Marker
    del Marker
    died = weakref.ref(marker)
    cnt = CompileCounter()
    compiled = bytegraph.compile(uses_marker, backend=cnt)
    f32, f64 = torch.ones(4), torch.ones(4, dtype=torch.float64)
    enabled = gc.isenabled()
    gc.disable()  # the class dies where the test says
    try:
        with CollectOnceWhenArmed():
            assert same(compiled(f32), uses_marker(f32))  # entry: marker is the class
            marker = None
            assert same(compiled(f64), uses_marker(f64))  # entry: marker is None (checked first)
            CollectOnceWhenArmed.armed = True
            actual = compiled(f32)
        expected = uses_marker(f32)
    finally:
        marker = None
        if enabled:
            gc.enable()
    assert died() is None
    assert same(actual, expected), f"{actual} != {expected}"
    assert cnt.frame_count == 3


class Root:
    scale = 3.0


class Node:
    parent = weakref.ref(Root)  # a class attribute that is itself a weak reference


class Holder:
    ref = weakref.ref(Root)


def reads_weakref_attribute(x):
    return x * Node().parent().scale


def has_ref(x):
    return x + 1 if hasattr(Holder, "ref") else x - 1


def test_a_weak_reference_guarded_by_identity_matches_itself_only():
    """A weakref.ref cannot itself be weakly referenced, so it is guarded by its
    id: the same reference passes (one compile), and the object it points to
    in its place does not."""
    cnt = CompileCounter()
    compiled = bytegraph.compile(reads_weakref_attribute, backend=cnt)
    x = torch.ones(2)
    for _ in range(3):
        assert same(compiled(x), reads_weakref_attribute(x))
    assert cnt.frame_count == 1, all_reasons()

    cnt = CompileCounter()
    compiled = bytegraph.compile(has_ref, backend=cnt)
    saved = Holder.ref
    try:
        assert same(compiled(x), has_ref(x))
        Holder.ref = Root  # the referent where the reference was
        assert same(compiled(x), has_ref(x))
        assert cnt.frame_count == 2
    finally:
        Holder.ref = saved


# --- parameters named like what the guards call ---------------------------------------------

class NotMath:
    @staticmethod
    def copysign(a, b):
        return 1.0


def add_sign(x, v, math=None):
    import math as real_math
    return x + real_math.copysign(1.0, v)


def add_all(x, items, len=lambda v: 1):
    return x + sum(items)


def scaled(q, scale, math=False):
    return q * 2 + scale


def test_parameters_named_like_builtins_or_math_do_not_change_the_guards():
    x = torch.zeros(2)
    cnt = CompileCounter()
    compiled = bytegraph.compile(add_sign, backend=cnt)
    for v in (0.0, -0.0):  # the float zero's sign guard calls math.copysign, not the argument
        assert same(compiled(x, v, NotMath()), add_sign(x, v, NotMath()))
    assert cnt.frame_count == 2

    cnt = CompileCounter()
    compiled = bytegraph.compile(add_all, backend=cnt)
    for items in ([1], [1, 5]):  # the list's length guard calls len, not the argument
        assert same(compiled(x, items), add_all(x, items))
    assert cnt.frame_count == 2

    cnt = CompileCounter()
    compiled = bytegraph.compile(scaled, backend=cnt)
    for _ in range(3):  # a flag named math: a new 0.0 object each call still matches
        zero = float(len([]))
        assert same(compiled(x, zero), scaled(x, zero))
    assert cnt.frame_count == 1, all_reasons()


# --- constants made of parts, nested -----------------------------------------------------------

CODES = {int: 1, float: 2, bool: 3}


def type_of_first_set_item(x, t):
    return x + CODES[type(next(iter(t[0])))]


def type_of_first_slice_start(x, t):
    return x + CODES[type(t[0].start)]


def phase(x, v):
    return x + cmath.phase(v)


def phase_of_first(x, t):
    return x + cmath.phase(t[0])


@pytest.mark.parametrize("fn, first, second", [
    (type_of_first_set_item, (frozenset({1}),), (frozenset({1.0}),)),
    (type_of_first_slice_start, (slice(1, 3),), (slice(1.0, 3),)),
    (phase, complex(-1, 0.0), complex(-1, -0.0)),        # a complex zero's sign: phase pi or -pi
    (phase_of_first, (complex(-1, 0.0),), (complex(-1, -0.0),)),
])
def test_constants_made_of_parts_are_checked_part_by_part(fn, first, second):
    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt)
    x = torch.zeros(2)
    for value in (first, second, first):
        assert same(compiled(x, value), fn(x, value))
    assert cnt.frame_count == 2
