"""torch.compile's user surface under ``bytegraph run``: each script of
``tests/dropin/`` uses one entry point or knob the way a program written for
torch.compile does (``mark_dynamic``, ``set_stance``, ``torch._dynamo.config``,
``mode=`` with another backend, ``allow_in_graph``, ``reset``...), and prints its
results and, from a counting backend, the number of graphs compiled. Served by
bytegraph, it must print what it prints under torch.compile.

Quick tier: each row runs in this process, torch's entry points served as
``bytegraph run`` serves them, against torch.compile's output recorded by
``python tools/dropin_rows.py --record`` (torch.compile run in processes of its
own: it never runs in bytegraph's process). Slow tier: both sides run now,
``python ROW.py`` and ``bytegraph run ROW.py``, each in a process of its own.
"""
import json

import pytest

from tools.dropin_rows import EXPECTED, answer, row_names, run_row, run_row_here

RECORDED = json.loads(EXPECTED.read_text())


def test_every_row_has_a_recorded_answer():
    assert sorted(RECORDED) == row_names()


@pytest.mark.parametrize("row", row_names())
def test_row_prints_what_torch_compile_prints(row):
    assert run_row_here(row) == RECORDED[row]


@pytest.mark.slow
@pytest.mark.parametrize("row", row_names())
def test_row_under_bytegraph_run_matches_torch_compile_run_now(row):
    torch_compile = answer(run_row(row, "torch"))
    served = run_row(row, "bytegraph")
    assert answer(served) == torch_compile, served["stderr"][-3000:]
