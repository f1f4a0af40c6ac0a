"""``torch.func.jacrev``/``jacfwd``/``hessian`` (function transforms) and
``jvp``/``vjp`` (call transforms) of pure Python functions inside compiled
code: one graph node each, as torch.compile captures them whole (fullgraph);
the function vjp returns is one more node per call. ``linearize`` (which
torch.compile does not capture either) is a graph break."""
import pytest
import torch
from torch.func import hessian, jacfwd, jacrev, jvp, linearize, vjp

import bytegraph
from bytegraph.testing import CompileCounter
from tests.helpers import assert_same, check

BACKENDS = [None, "aot_eager"]


def t(*shape):
    return torch.randn(*shape)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_jacobians_with_argnums_and_has_aux(backend, jac):
    def f(x, w):
        j0 = jac(lambda y: y.sin() * w)(x)
        (ja, jb), aux = jac(lambda a, b: ((a * b).sin(), a.cos()), argnums=(0, 1), has_aux=True)(x, w)
        j1 = jac(lambda a, b: a * b.exp(), 1)(x, w)
        return j0 + 1, ja, jb, aux, j1

    check(f, t(3), t(3), backend=backend, fullgraph=True, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jacrev_chunk_size_and_jacfwd_randomness_options(backend):
    def f(x):
        return jacrev(lambda y: y.sin(), chunk_size=1)(x), jacfwd(lambda y: y.cos(), randomness="same")(x)

    check(f, t(4), backend=backend, fullgraph=True, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_with_argnums(backend):
    def f(x, w):
        return hessian(lambda y: (y.sin() * w).sum())(x), hessian(lambda a, b: (a * b * b).sum(), argnums=1)(x, w)

    check(f, t(3), t(3), backend=backend, fullgraph=True, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_through_a_jacobian(backend):
    def f(x, w):
        return (jacrev(lambda y: y.sin() * w)(x) ** 2).sum()

    check(f, t(3).requires_grad_(), t(3).requires_grad_(), backend=backend, fullgraph=True, graphs=1, breaks=0,
          backward=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_with_has_aux_and_strict(backend):
    def f(x, v, w):
        out, tangent = jvp(lambda y: y.sin() * w, (x,), (v,))
        out2, tangent2, aux = jvp(lambda a, b: (a * b, a.cos()), (x, w), (v, v), has_aux=True, strict=True)
        return out, tangent, out2, tangent2, aux

    check(f, t(3), t(3), t(3), backend=backend, fullgraph=True, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vjp_function_called_in_the_compiled_function(backend):
    def f(x, w, v):
        out, vjp_fn = vjp(lambda y: y.sin() * w, x)
        out2, vjp_fn2, aux = vjp(lambda a, b: (a * b.exp(), a.sum()), x, w, has_aux=True)
        return out, vjp_fn(v), vjp_fn(v * 2), out2, vjp_fn2(v), aux

    check(f, t(3), t(3), t(3), backend=backend, fullgraph=True, graphs=1, breaks=0)


def test_linearize_breaks():
    def f(x, w, v):
        out, jvp_fn = linearize(lambda y: y.sin() * w, x)
        return out + 1, jvp_fn(v)

    # linearize runs natively; the resume function calls the jvp_fn (skipped too), the add is a graph
    check(f, t(3), t(3), t(3), graphs=1, breaks=2, gb_types=["call to skipped function"] * 2)


def test_a_returned_vjp_function_computes_eagers_values():
    def f(x, w):
        return vjp(lambda y: y.sin() * w, x)

    # not check: the result holds a function; it is called after the compiled call instead
    x, w, v, cnt = t(3), t(3), t(3), CompileCounter()
    out, vjp_fn = bytegraph.compile(f, backend=cnt, fullgraph=True)(x, w)
    eager_out, eager_fn = f(x, w)
    assert_same(out, eager_out)
    assert_same(vjp_fn(v), eager_fn(v))
    assert cnt.frame_count == 1


def test_a_vjp_function_live_across_a_graph_break(capsys):
    def f(x, w, v):
        out, vjp_fn = vjp(lambda y: y.sin() * w, x)
        print("untraceable")  # vjp_fn is made again for the code after the break
        return out, vjp_fn(v)

    # the vjp is one graph; vjp_fn, made again, is torch's own function, which the resume function calls
    # natively (a second break)
    check(f, t(3), t(3), t(3), graphs=1, breaks=2, gb_types=["print", "call to skipped function"])


def _write_closure(x, w):
    w.mul_(2)


def _write_primal_view(x, w):
    x[0].mul_(2)


@pytest.mark.parametrize("write", [_write_closure, _write_primal_view])
def test_a_vjp_function_after_its_input_was_written_breaks(write):
    def f(x, w, v):
        x, w = x.clone(), w.clone()
        out, vjp_fn = vjp(lambda y: y * w * y, x)
        write(x, w)  # eager's vjp_fn computes from the values before this write
        return out, vjp_fn(v)

    # the call of vjp_fn breaks, and vjp_fn cannot be made again for the native call: all of f runs natively
    check(f, t(3), t(3), t(3), graphs=0, breaks=1, gb_types=["cannot reconstruct"])


def test_an_impure_function_under_jacrev_breaks_and_its_side_effect_happens_once_per_call():
    calls = []

    def body(y):
        calls.append(1)
        return y.sin()

    def f(x):
        return jacrev(body)(x), jvp(body, (x,), (x,))

    check(f, t(3), graphs=0, breaks=2, gb_types=["unsupported torch.func transform"] * 2)
    assert len(calls) == 2 * (1 + 1)  # eager and compiled: jacrev's and jvp's call each
