"""``types.MethodType(func, obj)`` made in the trace, and what code does with
bound methods (call, ``__self__``/``__func__``, compare, pass around), compared
with eager; contextlib.ExitStack, which binds ``__exit__`` that way."""
import contextlib
import functools
import types

import pytest

from tests.helpers import check, t


def add_to(self, y):
    return self.base + y


class Holder:
    def __init__(self, base):
        self.base = base

    def scaled(self, y):
        return self.base * y

    def mix(self, other, y):
        return self.base + other.base * y


class CallableObject:
    def __call__(self, owner, y):
        return owner.base - y


@pytest.mark.parametrize("func", [
    add_to,
    lambda self, y: self.base + 2 * y,
    CallableObject(),
    Holder.scaled,
    functools.partial(add_to),
    Holder(10).mix,  # a bound method bound again: it gets the object as its first argument
])
def test_method_type_of_a_callable_bound_to_a_user_object(func):
    def f(x):
        h = Holder(x)
        m = types.MethodType(func, h)
        return m(3), m.__self__ is h, m.__func__ is func, type(m) is types.MethodType, callable(m)

    check(f, t(2), fullgraph=True)


def test_method_type_of_a_function_made_in_the_trace():
    def f(x):
        k = 4

        def inner(self, y):
            return self.base * k + y

        m = types.MethodType(inner, Holder(x))
        return m(1), m.__func__ is inner

    check(f, t(2), fullgraph=True)


def test_method_type_of_a_builtin_and_bound_to_a_class():
    def f(x):
        m = types.MethodType(len, [x, x, x])
        c = types.MethodType(lambda cls, y: cls.__name__ + y, Holder)
        return x + m(), c("!")

    check(f, t(2), fullgraph=True)


@pytest.mark.parametrize("args, kwargs", [
    ((add_to, None), {}),  # instance must not be None
    ((3, Holder(1)), {}),  # first argument must be callable
    ((add_to,), {}),
    ((add_to, 1, 2), {}),
    ((add_to, 1), {"x": 1}),
])
def test_method_type_argument_errors_are_eagers(args, kwargs):
    def f(x):
        try:
            types.MethodType(*args, **kwargs)
        except TypeError as e:
            return x + 1, str(e)
        return x, ""

    check(f, t(2), fullgraph=True)


def test_method_type_live_after_the_graph_is_rebuilt():
    def f(x, h):
        return x + 1, types.MethodType(add_to, h), types.MethodType(CallableObject(), h)

    out = check(f, t(2), Holder(5))
    assert out[1](1) == 6 and out[2](1) == 4


def test_bound_method_equality_and_hashing():
    def f(x):
        h, other = Holder(x), Holder(x)
        a, b = types.MethodType(add_to, h), types.MethodType(add_to, h)
        return x + 1, a == b, a != b, a == types.MethodType(add_to, other), a is b, a is a, [a].index(a)

    check(f, t(2))


def test_exit_stack_push_callback_enter_context_pop_all_close():
    class Manager:
        def __init__(self, log, name):
            self.log, self.name = log, name

        def __enter__(self):
            self.log.append(("enter", self.name))
            return self

        def __exit__(self, *exc):
            self.log.append(("exit", self.name, exc[0] is None))
            return False

    def f(x):
        log = []
        with contextlib.ExitStack() as stack:
            stack.enter_context(Manager(log, "a"))
            stack.push(Manager(log, "pushed"))
            stack.push(lambda *exc: log.append(("exit fn", exc[0] is None)))
            stack.callback(log.append, ("callback", 1))
            moved = stack.pop_all()
        log.append("after with")
        moved.close()
        with contextlib.ExitStack() as stack:
            stack.callback(lambda: log.append("suppressing"))
            stack.push(lambda *exc: True)
            raise KeyError("suppressed by the pushed exit")
        return x + 1, log

    check(f, t(2), fullgraph=True)


def test_bound_methods_read_as_attributes_compare_as_eager():
    def f(x):
        h, other = Holder(x), Holder(x)
        return (x + 1, h.scaled is h.scaled, h.scaled == h.scaled, h.scaled != other.scaled,
                h.scaled == types.MethodType(Holder.scaled, h), h.scaled == Holder.scaled)

    check(f, t(2), fullgraph=True)


def test_bound_methods_passed_in_compare_by_identity_of_their_objects():
    h = Holder(3)
    same = h.scaled

    def f(x, a, b):
        return x + 1, a == b, a != b

    # the last call's distinct __self__ objects fail the first entry's aliasing guard: one recompile
    check(f, calls=[(t(2), same, same), (t(2), h.scaled, h.scaled), (t(2), h.scaled, Holder(3).scaled)], graphs=2)
