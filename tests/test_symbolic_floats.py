"""Float arguments that change between calls become symbolic (SymFloat): every
``math`` function, float method and decision on them must give eager's answer for
each value the compiled entry accepts, NaN, infinities and the sign of zero
included. compare_all, not check: among the values one function is called with,
some raise in eager and some do not, which check's one ``raises`` cannot say."""
import math

import pytest
import torch

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter

NAN, INF = float("nan"), float("inf")

#: a value that makes the argument symbolic (2.0 after 1.0), then the traps, then plain values
VALUES = (1.0, 2.0, NAN, -0.0, INF, 0.0, -INF, -NAN, 3.0, -2.5, 0.7, 1e-17, 2.0, -0.0)


def exact(value):
    """``value`` in a form that tells -0.0 from 0.0 and compares NaN equal to NaN."""
    if isinstance(value, tuple):
        return tuple(exact(v) for v in value)
    if isinstance(value, torch.Tensor):
        return exact(tuple(value.tolist()))
    if isinstance(value, float):
        return ("float", repr(value), math.copysign(1.0, value))
    return (type(value).__name__, repr(value))


def outcome(fn, *args):
    try:
        return exact(fn(*args))
    except Exception as e:  # noqa: BLE001 - the exception type is part of eager's answer
        return ("raises", type(e).__name__)


def compare_all(fn, values=VALUES):
    """Runs compiled ``fn(x, v)`` and eager for each value; returns the counter."""
    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt)
    for v in values:
        assert outcome(compiled, torch.zeros(1), v) == outcome(fn, torch.zeros(1), v), v
    return cnt


FLOAT_FUNCTIONS = {
    "isnan": math.isnan,
    "isinf": math.isinf,
    "isfinite": math.isfinite,
    "copysign_from": lambda v: math.copysign(7.0, v),
    "copysign_onto": lambda v: math.copysign(v, -1.0),
    "fabs": math.fabs,
    "floor": math.floor,
    "ceil": math.ceil,
    "trunc": math.trunc,
    "fmod": lambda v: math.fmod(v, 3.0),
    "remainder": lambda v: math.remainder(v, 2.0),
    "frexp": math.frexp,
    "modf": math.modf,
    "atan2": lambda v: math.atan2(v, -1.0),
    "ldexp": lambda v: math.ldexp(v, 3),
    "isclose": lambda v: math.isclose(v, 2.0),
    "is_integer": lambda v: v.is_integer(),
    "hex": lambda v: v.hex(),
    "as_integer_ratio": lambda v: v.as_integer_ratio(),
    "round": round,
    "round_digits": lambda v: round(v, 1),
    "int": int,
    "divmod": lambda v: divmod(v, 2.0),
    "max_with_zero": lambda v: max(v, 0.0),
    "min_with_negative_zero": lambda v: min(-0.0, v),
    "equals_nan": lambda v: v == NAN,
    "below_nan": lambda v: v < NAN,
    "below_inf": lambda v: v < INF,
    "sign_of_product_with_zero": lambda v: math.copysign(1.0, v * 0.0),
    "sign_of_negation": lambda v: math.copysign(1.0, -v),
}


@pytest.mark.parametrize("name", sorted(FLOAT_FUNCTIONS))
def test_math_functions_of_a_float_argument_give_eagers_value(name):
    function = FLOAT_FUNCTIONS[name]

    def f(x, v):
        return x + 1, function(v)

    compare_all(f)


def branching_on(decide):
    def f(x, v):
        if decide(v):
            return x + 1
        return x - 1

    return f


@pytest.mark.parametrize("name", sorted(FLOAT_FUNCTIONS))
def test_branches_on_math_functions_of_a_float_argument_follow_eager(name):
    compare_all(branching_on(FLOAT_FUNCTIONS[name]))


def test_isnan_of_a_symbolic_float_needs_no_value_guard():
    def f(x, v):
        return x + 1 if math.isnan(v) else x - 1

    cnt = compare_all(f, (0.0, NAN, 0.0, 2.0, 3.0, -0.0, 5.5, NAN, INF))
    # 0.0, NaN and inf are constants; 2.0 makes v symbolic, and 3.0, -0.0 and 5.5 reuse that
    # entry: it holds for every finite float, which math.isnan of is False
    assert cnt.frame_count == 4


def test_zero_float_arguments_are_constants_told_apart_by_sign():
    def f(x, v):
        return x + math.copysign(1.0, v)

    cnt = compare_all(f, (1.0, 0.0, -0.0, 0.0, -0.0))
    assert cnt.frame_count == 3


def test_a_symbolic_float_entry_refuses_nan_and_infinities():
    def f(x, v):
        return x * v

    cnt = compare_all(f, (1.0, 2.0, 3.0, INF, NAN, -INF, 4.0))
    assert cnt.frame_count == 5  # 1.0, symbolic, inf, NaN, -inf
    reasons = [r for stats in metrics.FRAMES.values() for r in stats.recompile_reasons]
    assert reasons[1] == "'v' is not a finite float: got inf"  # the symbolic entry, the newest then


FLOAT_ARITHMETIC_DECISIONS = {
    "cancels_when_finite": lambda v: v - v == 0,
    "rounds": lambda v: (v + 0.1) - 0.1 == v,
    "overflows": lambda v: math.isinf(v * 1e300),
    "truncates_a_product": lambda v: int(v * 10.0) > 3,
    "product_with_zero_is_falsy": lambda v: bool(v * 0.0),
}


@pytest.mark.parametrize("name", sorted(FLOAT_ARITHMETIC_DECISIONS))
def test_decisions_on_float_arithmetic_follow_python_rounding(name):
    # the ShapeEnv computes with real numbers (v + 0.1 - 0.1 is v, v * 0.0 is 0): a decision
    # read from float arithmetic must hold for the floats Python computes instead
    compare_all(branching_on(FLOAT_ARITHMETIC_DECISIONS[name]), (1.0, 2.0, 1e-17, 0.7, INF, 1e10, -3.0, NAN, 0.3, 2.0))


def test_comparisons_of_a_float_argument_stay_symbolic():
    def f(x, v):
        if v > 0.5:
            return x + v
        return x - v

    cnt = compare_all(f, (1.0, 2.0, 3.0, 4.5, 0.25, -1.0, -0.0, 0.5))
    assert cnt.frame_count == 3  # the constant 1.0, then one entry for each side of 0.5


def test_a_branch_on_float_arithmetic_is_taken_again_on_each_calls_inputs():
    def rounds(x, v):
        if (v + 0.1) - 0.1 == v:
            return x + 1
        return x - 1

    cnt = compare_all(rounds, (1.0, 2.0, 3.0, 1e-17, 4.0, 2e-17))
    # the constant 1.0, then one entry per branch: 3.0 and 4.0 take 2.0's, 2e-17 takes 1e-17's
    assert cnt.frame_count == 3
    reasons = [r for stats in metrics.FRAMES.values() for r in stats.recompile_reasons]
    assert reasons[-1] == "eq(sub(add(v, 0.1), 0.1), v) is no longer True"


def test_a_branch_on_a_size_divided_keeps_the_size_dynamic():
    def halves(x):
        if x.shape[0] / 2 > 3:
            return x + 1
        return x - 1

    cnt = CompileCounter()
    compiled = bytegraph.compile(halves, backend=cnt)
    for n in (8, 9, 10, 4, 11, 5):
        x = torch.zeros(n)
        if n == 8:
            bytegraph.mark_dynamic(x, 0)  # the branch must not specialise the size
        assert outcome(compiled, x) == outcome(halves, x), n
    assert cnt.frame_count == 2  # one entry per branch


# --- sizes the replay cannot read; values read from float arithmetic; text from symbols -------

def half_numel_above_three(x):
    return x + 1 if x.numel() / 2 > 3 else x - 1


def half_tail_above_three(x):
    return x + 1 if x[1:].shape[0] / 2 > 3 else x - 1


@pytest.mark.parametrize("fn", [half_numel_above_three, half_tail_above_three])
def test_a_float_decision_on_a_size_the_replay_cannot_read_keeps_a_marked_size_dynamic(fn):
    """x.numel() and a slice's size are no input's size: the ShapeEnv decides
    (n / 2 > 3 is exact for sizes), so a size marked dynamic is not pinned
    (which would raise ConstraintViolationError) and one entry serves all."""
    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt)
    for n in (8, 9, 10, 4, 11):
        x = torch.zeros(n)
        if n == 8:
            bytegraph.mark_dynamic(x, 0)
        assert outcome(compiled, x) == outcome(fn, x), n
    assert cnt.frame_count == 2  # one per branch


def loops_floordiv(x, v):
    for _ in range(int(v // 0.1)):
        x = x + 1
    return x


def formats_floordiv(x, v):
    return x + 1, repr(v // 0.1)


def indexes_by_floordiv(x, v):
    return x + 1, [1, 2, 3][int(v // 0.1) - 18]


@pytest.mark.parametrize("fn", [loops_floordiv, formats_floordiv, indexes_by_floordiv])
def test_a_value_read_from_float_arithmetic_is_pythons(fn):
    """2.0 // 0.1 is 19.0 in Python, the real-number floor(2.0 / 0.1) is 20."""
    compiled = bytegraph.compile(fn, backend=CompileCounter())
    x = torch.ones(1, dtype=torch.float64)
    for v in (1.9, 2.0, 2.1):  # 1.9: a constant entry; then v is symbolic
        assert outcome(compiled, x, v) == outcome(fn, x, v), v


def percent_formats(x, v):
    return x + 1, "%s" % v, "%s" % (v * 2.0), "%r" % (v * 0.0)


def percent_formats_size(x, v):
    return x + 1, "%s" % (x.shape[0] * 2), "%d" % (x.shape[0] // 2), "%s" % (x.shape[0] / 2)


def test_percent_formatting_of_one_symbolic_scalar_prints_its_value():
    """'%s' % v with one symbolic operand (no tuple): the value eager prints,
    never the symbol's expression ('2.0*zf31')."""
    compiled = bytegraph.compile(percent_formats, backend=CompileCounter())
    x = torch.ones(1)
    for v in (1.0, 2.0, 3.5, -2.0):
        assert outcome(compiled, x, v) == outcome(percent_formats, x, v), v
    compiled = bytegraph.compile(percent_formats_size, backend=CompileCounter())
    for n in (3, 4, 7):
        x = torch.ones(n)
        assert outcome(compiled, x, 0) == outcome(percent_formats_size, x, 0), n
