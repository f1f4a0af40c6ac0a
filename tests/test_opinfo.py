"""The OpInfo sweep's quick tier: a fixed slice of torch's ``op_db`` (``tools/opinfo/quick.py``),
each OpInfo called as ``op.op`` and as its in-place variant on its first CPU sample inside a
function compiled with ``fullgraph=True``, on backends eager and aot_eager. Every case must be
captured whole (one graph, no break) and equal to eager: values (bit-exact on eager, within
``assert_close``'s tolerances on aot_eager), dtypes, shapes, the inputs after the call and the
aliasing of outputs to inputs (``tools/opinfo/cases.py``). The whole of ``op_db`` is
``make opinfo``; ``docs/opinfo.md`` has its tables.

The slice holds only cases torch.compile captures whole on both backends, which
``test_slice_is_captured_by_torch_compile`` checks against the committed torch.compile sweep
(``tools/opinfo/results/torch.json``, made in a process of its own); the cases are read from
there too, so collecting this module does not import ``op_db``.

Not tests/helpers.check: a case is judged by the sweep's own judge (``cases.judge``), the
one the committed tables of both frontends were judged by, so that a quick-tier pass means
what a sweep pass means (bit-exact on eager, OpInfo's tolerances on aot_eager, random and
uninitialised results by metadata); the judge's own tests below show it fails where it should."""
import functools
import json
import pathlib
import warnings

import pytest

from tools.opinfo import cases, worker
from tools.opinfo.frontends import BACKENDS, Bytegraph
from tools.opinfo.quick import KNOWN_FAILURES, KNOWN_INPLACE_FAILURES, QUICK

TORCH_SWEEP = pathlib.Path(__file__).resolve().parent.parent / "tools" / "opinfo" / "results" / "torch.json"
TORCH_RESULTS = {(r["op"], r["variant"], r["backend"]): r for r in json.loads(TORCH_SWEEP.read_text())["results"]}
CASES = [(name, variant) for name in QUICK for variant in cases.VARIANTS if (name, variant, "eager") in TORCH_RESULTS]


def _param(name: str, variant: str, backend: str):
    known = (KNOWN_FAILURES if variant == "op" else KNOWN_INPLACE_FAILURES).get(name)
    marks = [pytest.mark.xfail(strict=True, reason=known)] if known else []
    return pytest.param(name, variant, backend, marks=marks, id=f"{name}-{variant}-{backend}")


@functools.lru_cache(maxsize=None)
def _case(name: str, variant: str) -> cases.Case:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cases.make_cases(name, variant)[0]


@functools.lru_cache(maxsize=None)
def _frontend() -> Bytegraph:
    return Bytegraph()


@pytest.mark.parametrize("name,variant,backend", [_param(n, v, b) for n, v in CASES for b in BACKENDS])
def test_captured_whole_and_equal(name, variant, backend):
    case = _case(name, variant)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = worker.compiled_outcome(_frontend(), case, backend)
    assert outcome == {"outcome": "captured", "graphs": 1}


def test_slice_is_captured_by_torch_compile():
    assert len(CASES) > len(QUICK)  # in-place variants included
    assert set(KNOWN_FAILURES) <= set(QUICK) and set(KNOWN_INPLACE_FAILURES) <= set(QUICK)
    for name, variant in CASES:
        for backend in BACKENDS:
            result = TORCH_RESULTS[(name, variant, backend)]
            assert (result["outcome"], result["graphs"]) == ("captured", 1), (name, variant, backend, result)


# ---- the judge: what counts as equal to eager -----------------------------------------------

def _add_inplace_case() -> cases.Case:
    import torch

    x, y = torch.tensor([1.0, float("nan")]), torch.tensor([2.0, 3.0])
    return cases.Case("add", "inplace", torch.Tensor.add_, torch.float32, 0, (x, y), {}, random=False)


def _judge(case: cases.Case, compiled) -> str | None:
    eager_args, eager_kwargs = case.fresh()
    expected = case.fn(*eager_args, **eager_kwargs)
    args, kwargs = case.fresh()
    return cases.judge(case, expected, (eager_args, eager_kwargs), compiled(*args, **kwargs), (args, kwargs), exact=True)


def test_judge_accepts_eager_itself_with_nans():
    assert _judge(_add_inplace_case(), lambda x, y: x.add_(y)) is None


@pytest.mark.parametrize("compiled,why", [
    (lambda x, y: x.add(y), "inputs after the call"),  # the input is not written
    (lambda x, y: x.add_(y).clone(), "aliasing"),  # the result is not the input object
    (lambda x, y: x.add_(y).view(2), "aliasing"),  # a view of the input, not the input
    (lambda x, y: x.add_(y.nextafter(y + 1)), "result values"),  # one ulp off: wrong on backend eager
    (lambda x, y: x.add_(y).double(), "result dtype"),
    (lambda x, y: x.add_(y).unsqueeze(0), "result shape"),
    (lambda x, y: tuple([x.add_(y)]), "result type"),
])
def test_judge_rejects(compiled, why):
    assert _judge(_add_inplace_case(), compiled).startswith(why)


def test_random_case_compares_metadata_only():
    import torch

    case = cases.Case("rand_like", "op", torch.rand_like, torch.float32, 0, (torch.ones(3),), {}, random=True)
    assert _judge(case, lambda x: torch.rand_like(x) + 5) is None
    assert _judge(case, lambda x: torch.rand_like(x, dtype=torch.float64)).startswith("result dtype")
