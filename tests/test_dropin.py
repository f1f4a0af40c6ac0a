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
The rows do not use tests/helpers.check: their reference is torch.compile's output
(results and exact graph counts, printed by scripts torch.compile runs too), not
eager's; the in-process tests at the end use check.
"""
import json

import pytest

from tools.dropin_rows import EXPECTED, answer, row_names, run_row, run_row_here, unset_torch_setting

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


# ---- the same surface in-process, with plain bytegraph.compile ----------------------------------

import logging  # noqa: E402
import warnings  # noqa: E402

import torch  # noqa: E402
import torch._dynamo  # noqa: E402  (the test drives torch's user functions; bytegraph never imports it)

import bytegraph  # noqa: E402
from bytegraph import compat, logs  # noqa: E402
from tests.helpers import check  # noqa: E402


def _marked_dynamic(n):
    """A factory of one argument: a tensor of ``n`` elements marked dynamic with torch's own function."""
    def make():
        x = torch.randn(n)
        torch._dynamo.mark_dynamic(x, 0)
        return (x,)
    return make


def test_torchs_marks_are_honoured_by_bytegraph_compile():
    # one graph for three sizes: without the mark, automatic dynamic would compile twice
    check(lambda x: x * 2, calls=[_marked_dynamic(n) for n in (2, 3, 4)])


def test_a_compiled_function_called_by_compiled_code_is_traced_as_what_it_compiles():
    """As torch.compile inlines nested compiled functions: one graph, no break on bytegraph's
    own wrapper; the same for a compiled bound method and a compiled submodule."""
    inner = bytegraph.compile(lambda x: x.sin() * 2, backend="eager")
    check(lambda x: inner(x) + 1, torch.randn(3))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = bytegraph.compile(torch.nn.Linear(3, 3), backend="eager")

        def scale(self, x):
            return x * 3

    net = Net()
    net.scale = bytegraph.compile(net.scale, backend="eager")
    check(lambda x: net.scale(net.body(x)).relu(), torch.randn(2, 3))


def test_explain_of_a_compiled_function_explains_the_function():
    def f(x):
        return x.sin().cos()

    out = bytegraph.explain(bytegraph.compile(f, backend="eager"))(torch.randn(3))
    plain = bytegraph.explain(f)(torch.randn(3))
    assert (out.graph_count, out.graph_break_count, out.guards) == (plain.graph_count, 0, plain.guards)
    assert not any("bytegraph" in g or "_bytegraph" in g for g in out.guards)


def test_an_error_the_program_catches_leaves_stderr_clean(capfd):
    """FakeTensorMode logs a failing meta kernel as an ERROR with a traceback; while
    tracing it goes to the fake_tensor channel (off by default), and the program still
    sees eager's exception."""
    def f(x):
        try:
            return torch.linalg.det(x)
        except RuntimeError:
            return x.sum()

    check(f, torch.randn(2, 3), graphs=0, breaks=1, gb_types=["operator error at trace time"])
    assert "failed while attempting to run meta" not in capfd.readouterr().err
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logs.get("fake_tensor").addHandler(handler)
    try:
        logs.set_logs("fake_tensor")
        bytegraph.reset()
        check(f, torch.randn(2, 3), graphs=0, breaks=1, gb_types=["operator error at trace time"])
    finally:
        logs.set_logs()
        logs.get("fake_tensor").removeHandler(handler)
    assert any("failed while attempting to run meta" in r.getMessage() for r in records)


def test_torch_logs_names_turn_on_bytegraphs_channels():
    assert logs.channels_from_env({"TORCH_LOGS": "graph_breaks,recompiles,output_code"}) == [
        "graph_breaks", "recompiles"]
    assert logs.channels_from_env({"TORCH_LOGS": "+dynamo"}) == list(logs.CHANNELS)
    assert logs.channels_from_env({"TORCH_COMPILE_DEBUG": "1"}) == list(logs.CHANNELS)
    assert logs.channels_from_env({"BYTEGRAPH_LOGS": "guards", "TORCH_LOGS": "guards,graph_code"}) == [
        "guards", "graph"]


def test_changed_torch_settings_apply_and_an_unread_one_is_named_once():
    settings = torch._dynamo.config
    try:
        settings.capture_scalar_outputs = False  # torch's default, not bytegraph's: the program asks for it
        settings.automatic_dynamic_shapes = False
        settings.recompile_limit = 8  # torch's default and bytegraph's: no preference
        assert compat.changed_settings() == {"capture_scalar_outputs": False, "automatic_dynamic_shapes": False}
        compat._warned.discard("torch._dynamo.config.force_parameter_static_shapes = False")
        settings.force_parameter_static_shapes = False
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            compat.changed_settings()
            compat.changed_settings()
        assert [str(w.message) for w in seen] == [
            "bytegraph: torch._dynamo.config.force_parameter_static_shapes = False is not honoured: "
            "bytegraph does not read this setting"]
    finally:
        for name in ("capture_scalar_outputs", "automatic_dynamic_shapes", "recompile_limit",
                     "force_parameter_static_shapes"):
            unset_torch_setting(name)
    assert compat.changed_settings() == {}


def test_mode_and_options_reach_a_custom_backend_as_torch_compile_passes_them():
    got = []

    def backend(gm, example_inputs, **kwargs):
        got.append(kwargs)
        return gm.forward

    bytegraph.compile(lambda x: x + 1, backend=backend, mode="max-autotune")(torch.ones(2))
    bytegraph.compile(lambda x: x + 2, backend=backend, options={"a": 1})(torch.ones(2))
    bytegraph.compile(lambda x: x + 3, backend=backend, mode="default")(torch.ones(2))
    assert got == [{"mode": "max-autotune"}, {"options": {"a": 1}}, {}]
