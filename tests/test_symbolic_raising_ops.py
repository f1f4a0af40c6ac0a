"""Python operators on symbolic scalars that raise for some values: ``ZeroDivisionError``
of ``//``, ``%``, ``/`` and ``0 ** -1``, ``ValueError`` of a negative shift count.

Eager raises; a graph's code need not (inductor computes ``1 // u0`` in C++ and returns
a value). The graph asserts that the operation is defined for the values it runs on, so
it raises, and the frame reruns natively where the user's ``except`` sees eager's
exception. Each case runs on inductor (where the assertion is what makes it right) and on
aot_eager, with a divisor read from tensor data (unbacked) and one that is a dynamic int
argument (backed), on a call where the operation is defined and one where it raises. Before
the assertion, the unbacked cases on inductor killed the process (SIGFPE) or returned a value.
"""
import operator

import pytest
import torch

from tests.helpers import check

#: (operator, a value on which it is defined, a value on which it raises, the left operand)
CASES = {
    "floordiv": (operator.floordiv, 2, 0, 7),
    "mod": (operator.mod, 3, 0, 7),
    "truediv": (operator.truediv, 4, 0, 7),
    "lshift": (operator.lshift, 2, -1, 3),
    "rshift": (operator.rshift, 1, -2, 12),
    "pow": (operator.pow, -1, -2, 0),  # 0 ** -1 raises; here the left operand is the symbol's (see below)
}


def _from_data(op, left):
    """The right operand read from tensor data (an unbacked int while tracing)."""
    def fn(x, d, log):
        t = x * 1
        try:
            t = t + op(left, int(d.sum()))
        except (ZeroDivisionError, ValueError) as e:
            log.append(type(e).__name__)
        return t
    return fn


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_operand_read_from_data(name, backend):
    op, good, bad, left = CASES[name]
    if name == "pow":  # the symbol is the base: 0 ** -1 raises, 2 ** -1 does not
        def fn(x, d, log):
            t = x * 1
            try:
                t = t + int(d.sum()) ** -1
            except ZeroDivisionError as e:
                log.append(type(e).__name__)
            return t
        good, bad = 2, 0
    else:
        fn = _from_data(op, left)
    calls = [(torch.randn(3), torch.tensor([good]), []), (torch.randn(3), torch.tensor([bad]), [])]
    check(fn, calls=calls, backend=backend, graphs=1, breaks=0, reruns=1)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("name", ["floordiv", "mod", "truediv", "rshift"])
def test_dynamic_int_argument(name, backend):
    op, good, bad, left = CASES[name]

    def fn(x, n, log):
        try:
            return x + op(left, n - 5)
        except (ZeroDivisionError, ValueError) as e:
            log.append(type(e).__name__)
            return x

    calls = [(torch.randn(3), 5 + good, []), (torch.randn(3), 5 + good + 1, []), (torch.randn(3), 5 + bad, [])]
    # a backed symbol: the ShapeEnv guards that the operand is not the raising value, so the last
    # call recompiles, and its trace raises eager's exception (that frame runs natively)
    check(fn, calls=calls, backend=backend, dynamic=True, graphs=2, breaks=1, reruns=0,
          gb_types=["operator error at trace time"])


def test_divisor_known_nonzero_asserts_nothing():
    """A divisor the ShapeEnv knows is not zero (a size, which is at least 2 once dynamic)
    needs no assertion: the graph never raises."""
    def fn(x):
        return x * (7 // x.shape[0]) + x.shape[0] % x.shape[0]

    check(fn, calls=[(torch.randn(3),), (torch.randn(5),)], backend="inductor", dynamic=True, graphs=1, breaks=0,
          reruns=0)
