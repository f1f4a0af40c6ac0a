"""Operations whose meta functions (what the FakeTensor run of a trace uses)
accept floating-point arguments of different dtypes that their eager kernels
reject (``linear``, ``mm``, ``layer_norm``, ``index_add``...; the table is
``bytegraph/graph/strict_dtypes.py``). Eager raises RuntimeError; inductor
computed a value in the promoted dtype, so the trace breaks before such a call
and the call runs natively. What the frame did before it (a list append, an
input written in place) stays eager's. The fuzzer found it with a module whose
``double()`` came between two calls with float32 inputs."""
import logging
import operator

import pytest
import torch
import torch.nn.functional as F

import bytegraph
from tests.helpers import check

B = torch.float64  # the other operands' dtype


def _w():
    return torch.randn(4, 4, dtype=B)


def _idx():
    return torch.tensor([0])


#: the operation called directly (not inlined: the break is before it) and a
#: factory of its arguments: the first float32, others float64; eager rejects each
OPS = {
    "linear": (F.linear, lambda: (torch.randn(4, 4), _w())),
    "linear with bias": (F.linear, lambda: (torch.randn(4, 4), _w(), _w()[0])),
    "matmul operator": (operator.matmul, lambda: (torch.randn(4, 4), _w())),
    "rmatmul": (torch.Tensor.__rmatmul__, lambda: (_w(), torch.randn(4, 4))),
    "mm": (torch.mm, lambda: (torch.randn(4, 4), _w())),
    "addmm": (torch.addmm, lambda: (_w()[0], torch.randn(4, 4), _w())),
    "mv": (torch.mv, lambda: (torch.randn(4, 4), _w()[0])),
    "cdist": (torch.cdist, lambda: (torch.randn(4, 4), _w())),
    "heaviside": (torch.heaviside, lambda: (torch.randn(4, 4), _w())),
    "complex": (torch.complex, lambda: (torch.randn(4, 4), _w())),
    "polar": (torch.polar, lambda: (torch.rand(4, 4), _w())),
    "cross": (torch.linalg.cross, lambda: (torch.randn(4, 3), _w()[:, :3])),
    "index_add": (torch.Tensor.index_add, lambda: (torch.randn(4, 4), 0, _idx(), _w()[:1])),
    "index_copy_": (torch.Tensor.index_copy_, lambda: (torch.randn(4, 4), 0, _idx(), _w()[:1])),
    "index_put": (torch.Tensor.index_put, lambda: (torch.randn(4, 4), (_idx(),), _w()[0])),
    "put": (torch.Tensor.put, lambda: (torch.randn(4, 4), _idx(), _w()[0, :1])),
    "layer_norm": (F.layer_norm, lambda: (torch.randn(4, 4), (4,), _w()[0], _w()[1])),
    "group_norm": (F.group_norm, lambda: (torch.randn(4, 4), 2, _w()[0], _w()[1])),
    "batch_norm": (F.batch_norm, lambda: (torch.randn(4, 4), _w()[0], _w()[1].abs())),
    "instance_norm": (F.instance_norm, lambda: (torch.randn(1, 4, 4), None, None, _w()[0], _w()[1])),
    "binary_cross_entropy": (F.binary_cross_entropy, lambda: (torch.rand(4, 4), torch.rand(4, 4, dtype=B))),
    "nll_loss weight": (F.nll_loss, lambda: (torch.randn(4, 4), torch.tensor([0, 1, 2, 3]), _w()[0])),
    "grid_sample": (F.grid_sample, lambda: (torch.randn(1, 1, 4, 4), torch.rand(1, 2, 2, 2, dtype=B))),
    "conv_transpose1d": (F.conv_transpose1d, lambda: (torch.randn(1, 4, 4), _w()[:, :, None])),
    "gru_cell": (torch.gru_cell, lambda: (torch.randn(2, 4), *(torch.randn(*s, dtype=B) for s in
                                                              ((2, 4), (12, 4), (12, 4), (12,), (12,))))),
}

#: operations eager computes in another dtype than their meta functions, for the same mixed arguments,
#: with the graphs compiled (the frame before the break, F.huber_loss's own broadcast, the frame after)
UNPROMOTED = {
    "normal": (torch.normal, lambda: (torch.randn(4, 4), _w().abs()), 2),
    "addr": (torch.addr, lambda: (_w(), torch.randn(4), torch.randn(4)), 2),
    "huber_loss": (F.huber_loss, lambda: (torch.randn(4, 4), _w()), 3),
    "soft_margin_loss": (F.soft_margin_loss, lambda: (torch.randn(4, 4), _w().sign()), 2),
}


def _program(op, table=OPS):
    call = table[op][0]

    def f(steps, log, *args):
        log.append("before")
        steps.add_(1)
        return call(*args) + 1
    return f


def _inputs(op, table=OPS):
    return lambda: (torch.zeros(()), [], *table[op][1]())


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("op", list(OPS))
def test_an_operation_eager_rejects_for_mixed_dtypes_breaks_and_raises_eagers_error(op, backend):
    check(_program(op), make=_inputs(op), raises=RuntimeError, backend=backend, graphs=1, breaks=1,
          gb_types=["operation rejects mixed dtypes"])


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("op", list(UNPROMOTED))
def test_an_operation_whose_result_dtype_the_trace_would_get_wrong_breaks_and_runs_natively(op, backend):
    check(_program(op, UNPROMOTED), make=_inputs(op, UNPROMOTED), backend=backend, graphs=UNPROMOTED[op][2], breaks=1,
          gb_types=["mixed dtypes give another result dtype in a trace"])


@pytest.mark.parametrize("op", ["linear", "mm", "layer_norm"])
def test_on_inductor_too_the_rejected_call_raises_instead_of_promoting(op):
    check(_program(op), make=_inputs(op), raises=RuntimeError, backend="inductor", graphs=1, breaks=1,
          gb_types=["operation rejects mixed dtypes"])


def test_a_module_made_double_between_calls_raises_as_eager_on_inductor():
    def run(compile):
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        compiled = compile(model)
        first = compiled(torch.ones(2, 4))
        model.double()
        try:
            compiled(torch.ones(2, 4))
        except RuntimeError as e:
            return first, type(e).__name__
        return first, None

    expected = run(lambda m: m)
    got = run(lambda m: bytegraph.compile(m, backend="inductor"))
    assert got[1] == expected[1] == "RuntimeError"


@pytest.mark.parametrize("norm", ["layer_norm", "group_norm", "batch_norm", "instance_norm"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_reduced_precision_input_with_float32_norm_parameters_stays_in_the_graph(norm, dtype):
    call = OPS[norm][0]

    def f(x, *params):
        return call(x, *params) * 2

    def make():
        x, *rest = OPS[norm][1]()
        return (x.to(dtype), *(r.float() if isinstance(r, torch.Tensor) else r for r in rest))

    check(f, make=make, backend="eager", atol=1e-2, rtol=1e-2)


def test_mixed_dtypes_that_promote_still_compile_in_one_graph():
    def f(x, w, steps):
        steps.add_(1)
        return x * w + torch.where(x > 0, x, w)

    check(f, torch.randn(4, 4), torch.randn(4, 4, dtype=B), torch.zeros(()), backend="eager")


def _sweep_cases():
    """Every OpInfo sample with two floating-point tensor arguments that eager
    runs, and that with its first or last one made float64 eager rejects or
    computes in another dtype than FakeTensors do."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.testing._internal.common_methods_invocations import op_db

    def dtypes(value):
        return [t.dtype for t in torch.utils._pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]

    for op in op_db:
        try:
            samples = list(op.sample_inputs("cpu", torch.float32))[:3]
        except Exception:  # (samples that need another device or library)
            continue
        for sample in samples:
            args = [sample.input, *sample.args]
            floats = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.is_floating_point()]
            if len(floats) < 2:
                continue
            try:
                op.op(*args, **sample.kwargs)
            except Exception:
                continue
            for which in dict.fromkeys((floats[0], floats[-1])):
                mixed = list(args)
                mixed[which] = mixed[which].double()
                try:
                    expected = dtypes(op.op(*mixed, **sample.kwargs))
                except Exception:
                    expected = None
                mode = FakeTensorMode()
                try:
                    with mode:
                        fake = op.op(*[mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in mixed],
                                     **sample.kwargs)
                except Exception:
                    continue
                if expected != dtypes(fake):
                    yield op, mixed, sample.kwargs


class FakeAgreement:
    """A backend that runs each graph node by node and records each node whose
    real run raises or gives another dtype than its FakeTensor in the trace."""

    def __init__(self):
        self.problems = []

    def __call__(self, gm, example_inputs):
        problems = self.problems

        class Check(torch.fx.Interpreter):
            def run_node(self, node):
                try:
                    out = super().run_node(node)
                except Exception as e:
                    problems.append((node.format_node(), type(e).__name__))
                    raise
                fake = node.meta.get("example_value")
                if isinstance(out, torch.Tensor) and isinstance(fake, torch.Tensor) and out.dtype != fake.dtype:
                    problems.append((node.format_node(), out.dtype, fake.dtype))
                return out

        return lambda *args: Check(gm).run(*args)


@pytest.mark.slow
def test_no_operation_of_op_db_whose_kernel_and_meta_disagree_on_mixed_dtypes_reaches_a_graph():
    """Enumerated, not listed: an operation missing from the tables would be
    put in a graph, which then could compute a value where eager raises, or
    another dtype than the trace assumed."""
    logging.disable(logging.ERROR)  # (FakeTensors log each meta function that rejects a sample)
    try:
        cases = list(_sweep_cases())
    finally:
        logging.disable(logging.NOTSET)
    assert len(cases) > 20  # (the sweep finds what the tables were made from)
    reached = []
    for op, args, kwargs in cases:
        backend = FakeAgreement()
        bytegraph.reset()

        def f(*a, op=op, kwargs=kwargs):
            return op.op(*a, **kwargs)

        try:
            bytegraph.compile(f, backend=backend)(*args)
        except Exception:  # (eager's error; what matters is which graphs ran)
            pass
        reached += [(op.name, *p) for p in backend.problems]
    assert reached == []
