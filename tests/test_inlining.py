"""Calls of Python functions are inlined into one graph: compiled vs eager."""
import collections.abc
import functools
import io
import sys
from unittest import mock

import pytest
import torch

import bytegraph
from bytegraph import recursion
from bytegraph.translator.inline import InliningTranslator
import inline_helpers
from bytegraph.testing import CompileCounter, same
from tests.helpers import check, t
from inline_helpers import Affine, apply_twice, count_call, scaled


def add_mul(a, b, scale=2.0):
    return (a + b) * scale


def test_user_function():
    def f(x, y):
        return add_mul(x, y) - add_mul(y, x, 0.5)

    check(f, t(3), t(3))


def test_nested_calls():
    def inner(x):
        return x.sin()

    def middle(x):
        return inner(x) + inner(x * 2)

    def f(x):
        return middle(middle(x))

    check(f, t(3))


class Scaler:
    factor = 3.0

    def __init__(self):
        self.bias = 0.5

    def apply(self, x):
        return x * self.factor + self.bias

    def twice(self, x):
        return self.apply(self.apply(x))

    @staticmethod
    def static(x):
        return x - 1

    @classmethod
    def from_class(cls, x):
        return x * cls.factor

    @property
    def doubled_bias(self):
        return self.bias * 2


def test_methods():
    def f(obj, x):
        return obj.twice(x), obj.static(x), obj.from_class(x), x + obj.doubled_bias, Scaler.static(x)

    check(f, Scaler(), t(3))


def test_unbound_method_called_with_instance():
    def f(obj, x):
        return Scaler.apply(obj, x)

    check(f, Scaler(), t(3))


def test_lambdas():
    double = lambda v: v * 2  # noqa: E731

    def f(x):
        square = lambda v: v * v  # noqa: E731
        add = lambda a, b=1.0: a + b  # noqa: E731
        return double(square(x)), add(x), add(x, b=x), (lambda: x + 3)()

    check(f, t(3))


def test_lambda_passed_to_higher_order_function():
    def f(x):
        return apply_twice(lambda v: v * 3 + 1, x), list(map(lambda v: v + 1, [x, x * 2]))

    check(f, t(3))


def test_closure_reads():
    def make(scale):
        def fn(x):
            return x * scale
        return fn

    triple = make(3.0)

    def f(x):
        return triple(x) + make(0.5)(x)

    check(f, t(3))


def test_nonlocal_write_in_nested_function():
    def f(x):
        total = x

        def add(v):
            nonlocal total
            total = total + v

        add(x)
        add(x * 2)
        return total

    check(f, t(3))


def test_nonlocal_counter_in_nested_closure_chain():
    def f(x):
        count = 0

        def outer():
            def bump():
                nonlocal count
                count += 1
            bump()
            bump()

        outer()
        return x * count, count

    check(f, t(3))


def test_compiled_closure_writes_its_own_free_variable():
    state = 0

    def f(x):
        nonlocal state
        state = state + 1
        return x + state

    # not check: the function's own closure is the state, one cell for every call
    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    x = t(3)
    assert same(compiled(x), x + 1)
    assert state == 1
    assert same(compiled(x), x + 2)  # the closure value changed: a recompile or a guard that reads it
    assert state == 2


def _make_free_variable_writer(kind):
    """A compiled frame whose free variable ``state`` a function made in the
    trace rebinds with ``nonlocal`` (directly, two levels down, before a graph
    break, or read back in the frame after the write)."""
    state = 2.0

    def direct(u):
        def bump():
            nonlocal state
            state = state + 1
        bump()
        return u * state

    def two_levels(u):
        def outer():
            def bump():
                nonlocal state
                state = state * 2
            bump()
        outer()
        return u + 1

    def before_break(u):
        def bump(v):
            nonlocal state
            state = state + v
        u = u * 2
        bump(3)
        print("break", file=io.StringIO())
        return u - state

    def twice(u):
        def bump():
            nonlocal state
            state += 1
            return state
        return u * bump() + bump()

    return {"direct": direct, "two_levels": two_levels, "before_break": before_break, "twice": twice}[kind], \
        lambda: state


@pytest.mark.parametrize("kind", ["direct", "two_levels", "before_break", "twice"])
def test_function_made_in_the_trace_writes_a_free_variable_of_the_compiled_frame(kind):
    # the cell belongs to the function the compiled frame is a closure of: the write was lost (fuzzer)
    eager, eager_state = _make_free_variable_writer(kind)
    x = torch.arange(3.0)
    expected = [eager(x), eager(x)]
    fn, state = _make_free_variable_writer(kind)
    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt)
    actual = [compiled(x), compiled(x)]
    assert same(actual, expected) and state() == eager_state()
    # the written value is a guarded constant: the second call recompiles; one graph each before a break
    assert cnt.frame_count == (4 if kind == "before_break" else 2)


def test_defaults_and_keyword_only_arguments():
    def g(a, b=2.0, *, c, d=4.0):
        return a * b + c - d

    def f(x):
        return g(x, c=1.0), g(x, 3.0, c=x, d=0.0), g(a=x, c=2.0, b=x)

    check(f, t(3))


def test_positional_only_arguments():
    def g(a, b, /, c=1.0):
        return a - b + c

    def f(x, y):
        return g(x, y), g(y, x, c=5.0)

    check(f, t(3), t(3))


def test_star_args_and_kwargs():
    def g(*args, **kwargs):
        out = 0
        for a in args:
            out = out + a
        for k, v in kwargs.items():
            out = out * v if k.startswith("m") else out + v
        return out, len(args), sorted(kwargs)

    def f(x, y):
        return g(x, y, 3.0, m=2.0, a=x), g(), g(*[x, y], **{"mb": 0.5})

    check(f, t(3), t(3))


def test_forwarding_wrapper_with_star_args():
    def inner(a, b, scale=1.0):
        return (a - b) * scale

    def forward(*args, **kwargs):
        return inner(*args, **kwargs)

    def f(x, y):
        return forward(x, y, scale=3.0), forward(y, b=x)

    check(f, t(3), t(3))


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) + 1
    return wrapper


@logged
def decorated(x, scale=2.0):
    return x * scale


def test_functools_wraps_decorated_function():
    def f(x):
        return decorated(x), decorated(x, scale=0.5), decorated.__name__, decorated.__wrapped__(x)

    check(f, t(3))


def plus_one(fn):
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) + 1
    return wrapper


def test_plain_decorator_applied_inside_the_trace():
    def f(x):
        @plus_one
        def inner(v):
            return v * 3

        return inner(x)

    check(f, t(3))


def test_generator_consumed_by_for_loop():
    def gen(x, n):
        for i in range(n):
            yield x * i

    def f(x):
        out = x
        for v in gen(x, 3):
            out = out + v
        return out

    check(f, t(3))


def test_generator_consumed_by_builtins_and_next():
    def gen(x):
        yield x + 1
        yield x + 2
        yield x + 3

    def delegate(x):
        yield x
        yield from gen(x)

    def f(x):
        it = gen(x)
        first = next(it)
        rest = list(it)
        return first, rest, sum(delegate(x)), tuple(gen(x * 2)), next(gen(x), None)

    check(f, t(3))


def test_generator_with_return_value_via_yield_from():
    def inner(x):
        yield x
        return x * 10

    def outer(x, box):
        result = yield from inner(x)
        box.append(result)

    def f(x):
        box = []
        items = list(outer(x, box))
        return items, box

    check(f, t(3))


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def tree_sum(x, depth):
    if depth == 0:
        return x
    return tree_sum(x * 0.5, depth - 1) + tree_sum(x + 1, depth - 1)


def test_bounded_recursion():
    def f(x):
        return x * fib(6), tree_sum(x, 3)

    check(f, t(3))


def test_calls_across_modules():
    def f(x):
        return scaled(x), inline_helpers.scaled(x * 2), apply_twice(scaled, x)

    check(f, t(3))


def test_cross_module_global_write():
    def f(x):
        return count_call(x) + count_call(x)

    # not check: the state is another module's global, which each side must start from
    inline_helpers.CALLS = 0
    expected = f(torch.zeros(3))
    assert inline_helpers.CALLS == 2
    inline_helpers.CALLS = 0
    cnt = CompileCounter()
    actual = bytegraph.compile(f, backend=cnt)(torch.zeros(3))
    assert same(actual, expected)
    assert inline_helpers.CALLS == 2
    assert cnt.frame_count == 1


def test_cross_module_global_change_is_seen():
    def f(x):
        return scaled(x)

    # not check: another module's global changes between calls
    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    x = t(3)
    assert same(compiled(x), scaled(x))
    old = inline_helpers.SCALE
    inline_helpers.SCALE = 5.0
    try:
        assert same(compiled(x), scaled(x))
    finally:
        inline_helpers.SCALE = old
    assert cnt.frame_count == 2


def test_callable_object_and_its_methods_from_other_module():
    def f(layer, x):
        return layer(x), layer.shifted(x), layer.shifted(x, shift=x)

    check(f, Affine(t(3), t(3)), t(3))


def test_inline_depth_limit_is_a_graph_break_not_an_error():
    def down(x, n):
        return x if n == 0 else down(x + 1, n - 1)

    def f(x):
        return down(x, 10)

    with bytegraph.config.patch(max_inline_depth=4):
        check(f, t(3), graphs=0, breaks=1, gb_types=["inline depth exceeded"])


def _count_down(x, n):
    return x if n == 0 else _count_down(x + 1, n - 1)


def test_recursion_cpython_runs_at_the_default_limit_is_one_graph():
    # 200 nested calls: CPython's default limit (1000) runs them; tracing them must fit too
    assert sys.getrecursionlimit() >= 1000
    cnt = CompileCounter()
    check(_count_down, t(3), 200, backend=cnt, fullgraph=True)
    assert cnt.op_count == 200


def _deepest_eager_recursion() -> int:
    """The largest n for which ``_count_down(x, n)`` runs eagerly from the caller's frame."""
    low, high = 0, sys.getrecursionlimit()
    while low + 1 < high:
        mid = (low + high) // 2
        try:
            _count_down(t(1), mid)
            low = mid
        except RecursionError:
            high = mid
    return low


def test_recursion_depth_traced_reaches_what_eager_reaches():
    """Recursion nearly as deep as eager runs from here is traced whole (the
    compiled wrapper and convert_frame sit between this frame and the trace);
    deeper than eager can go raises eager's RecursionError from the compiled
    function too."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # inductor lifts the process's limit to 2000 when it compiles (other tests)
    try:
        _traced_depth_reaches_eager_depth()
    finally:
        sys.setrecursionlimit(limit)


def _traced_depth_reaches_eager_depth():
    limit = sys.getrecursionlimit()
    eager_max = _deepest_eager_recursion()
    traced = eager_max - 40
    cnt = CompileCounter()
    check(_count_down, t(1), traced, backend=cnt)
    assert cnt.op_count == traced
    too_deep = eager_max + 5
    with pytest.raises(RecursionError):
        _count_down(t(1), too_deep)
    compiled = bytegraph.compile(_count_down, backend=CompileCounter())
    with pytest.raises(RecursionError):
        compiled(t(1), too_deep)
    assert sys.getrecursionlimit() == limit  # the raised limit is the trace's only


def test_frames_per_inlined_call_stay_within_the_budget():
    depths = []
    real_run = InliningTranslator.run

    def run(self):
        depths.append(recursion.stack_depth())
        return real_run(self)

    with mock.patch.object(InliningTranslator, "run", run):
        check(_count_down, t(3), 20)
    steps = {b - a for a, b in zip(depths, depths[1:])}
    assert len(steps) == 1 and steps.pop() + 1 <= recursion.FRAMES_PER_INLINED_CALL  # +1: the patched run


@pytest.mark.parametrize("bad_call", ["missing", "extra", "unknown_kw"])
def test_bad_call_of_inlined_function_raises_eager_type_error(bad_call):
    def g(a, b):
        return a + b

    def f(x):
        if bad_call == "missing":
            return g(x)
        if bad_call == "extra":
            return g(x, x, x)
        return g(x, c=x)

    check(f, t(3), raises=TypeError, graphs=0, breaks=1, gb_types=["uncaught exception"])


def test_mutable_default_argument_is_mutated_like_eager():
    def make():
        def g(x, acc=[]):  # noqa: B006 - the shared default is the point
            acc.append(len(acc))
            return x * len(acc)
        return g

    def run(g, x):
        return g(x), g(x)

    # a factory: a copy of a function shares its defaults; check compares each side's g.__defaults__
    check(run, make=lambda: (make(), t(3)))


# --- generators: PEP 479, close(), cleanup of abandoned generators -------------

def _stops_early():
    yield 1
    raise StopIteration("early")


def _next_past_the_end():
    it = iter([1])
    yield next(it)
    yield next(it)


def _delegates_to_stops_early():
    yield 0
    yield from _stops_early()


def _catches_its_stop_iteration():
    try:
        yield 1
        raise StopIteration
    except StopIteration:
        yield 2


def _describe_error(e):
    return type(e).__name__, str(e), type(e.__cause__).__name__, type(e.__context__).__name__, e.__suppress_context__


@pytest.mark.parametrize("consumer", ["for", "next", "list", "yield_from", "next_inside", "caught_inside"])
def test_stop_iteration_escaping_a_generator_is_runtime_error(consumer):
    def f(x):
        result = None
        try:
            if consumer == "for":
                for v in _stops_early():
                    result = v
            elif consumer == "next":
                g = _stops_early()
                next(g)
                try:
                    next(g)
                except RuntimeError as e:
                    result = _describe_error(e), next(g, "finished")
            elif consumer == "list":
                result = list(_stops_early())
            elif consumer == "yield_from":
                result = sum(_delegates_to_stops_early())
            elif consumer == "next_inside":
                result = sum(_next_past_the_end())
            else:
                result = sum(_catches_its_stop_iteration())
        except RuntimeError as e:
            result = _describe_error(e)
        return x + 1, result

    x = t(2)
    check(f, calls=[(x,), (x,)])


def _with_cleanup(log):
    try:
        yield 1
        yield 2
    finally:
        log.append("closed")


class _Logged:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.log.append(f"exit {exc[0].__name__ if exc[0] else None}")
        return False


def _with_block(log):
    with _Logged(log):
        yield 1
        yield 2


def _delegates_to_cleanup(log):
    yield 0
    yield from _with_cleanup(log)


def _first_of(log):
    for v in _with_cleanup(log):
        return v


@pytest.mark.parametrize("case", ["break", "break_with_block", "break_yield_from", "return_from_callee"])
def test_generator_abandoned_while_suspended_runs_its_cleanup_when_collected(case):
    """Eager closes a dropped generator when it is collected (right after the
    loop), running its finally/with cleanup; the compiled frame creates such a
    generator natively, so the cleanup runs exactly then."""
    def f(x, log):
        y = x * 2
        if case == "return_from_callee":
            y = y + _first_of(log)
        else:
            gen = {"break": _with_cleanup, "break_with_block": _with_block,
                   "break_yield_from": _delegates_to_cleanup}[case]
            for v in gen(log):
                y = y + v
                if v == 1:
                    break
        log.append("after loop")
        return y

    x = t(2)  # the prefix is the graph; the generator is created natively
    check(f, calls=[(x, []), (x, [])], graphs=1, breaks=1, gb_types=["suspended generator"])


def _ignores_exit(log):
    try:
        yield 1
    finally:
        log.append("finally")
        yield 2


def _fails_on_exit(log):
    try:
        yield 1
    except GeneratorExit:
        log.append("exit")
        raise ValueError("while closing")


@pytest.mark.parametrize("case", ["finally", "with", "yield_from", "not_started", "exhausted", "ignores_exit",
                                  "fails_on_exit"])
def test_generator_close_is_traced(case):
    def f(x, log):
        if case == "finally":
            g = _with_cleanup(log)
            x = x + next(g)
        elif case == "with":
            g = _with_block(log)
            x = x + next(g)
        elif case == "yield_from":
            g = _delegates_to_cleanup(log)
            x = x + next(g) + next(g)
        elif case == "not_started":
            g = _with_cleanup(log)
        elif case == "exhausted":
            g = _with_cleanup(log)
            x = x + sum(g)
        else:
            g = (_ignores_exit if case == "ignores_exit" else _fails_on_exit)(log)
            x = x + next(g)
        log.append("before close")
        try:
            g.close()
        except (RuntimeError, ValueError) as e:
            log.append(_describe_error(e))
        g.close()
        return x * 2, list(g)

    x = t(2)  # (the second close() finishes even the generator that ignored the first)
    check(f, calls=[(x, []), (x, [])])


class _Layers(collections.abc.Sequence):
    """A Sequence whose iteration is the ABC's generator (``try: ... except
    IndexError``), as library config objects are."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i >= self.n:
            raise IndexError(i)
        return i + 1


def _except_only(log):
    try:
        yield 1
        yield 2
    except ValueError:
        log.append("caught")


def test_generator_suspended_in_an_except_only_try_stays_in_the_graph():
    # closing a generator whose yield only an `except SomeException:` guards runs
    # no code of it (GeneratorExit matches no Exception): no break, one graph
    def f(x, log):
        for a, b in zip([10, 20], _Layers(5)):  # zip stops on the list: the Sequence iterator stays suspended
            x = x * a + b
        for v in _except_only(log):
            x = x + v
            break
        return x

    check(f, t(3), [])
