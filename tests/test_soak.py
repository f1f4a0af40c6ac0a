"""Soak and load (slow tier): the scenarios of ``tools/soak.py`` (``make soak``
prints their memory figures at full length), run shorter here, each asserting
the mechanism that keeps it flat or correct, not a time or a memory figure."""
import pytest
import warnings

import bytegraph
from bytegraph.runtime import metrics
from tools import soak

pytestmark = pytest.mark.slow


def test_dropped_functions_leave_nothing_alive():
    # compiled, called and dropped: no function, closure value, global, input, wrapper or cache
    # survives it once its record is no longer one of the latest kept, and the records stay bounded
    figures = soak.dropped_functions(n=2 * metrics.KEEP_FREED + 50)
    assert figures["alive"] == 0
    assert figures["caches"] == 0
    assert figures["frame_records"] <= metrics.KEEP_FREED


def test_recompile_storm_ends_in_native_runs_with_one_warning():
    figures = soak.recompile_storm(n=600, dynamic=False)
    limit = bytegraph.config.recompile_limit
    assert figures["wrong"] == 0
    assert figures["native"] and figures["entries"] == limit and figures["limit_warnings"] == 1
    assert figures["recompile_records"] == limit  # (nothing is recorded per call once native)


def test_a_new_shape_every_call_compiles_twice_with_automatic_dynamic():
    figures = soak.recompile_storm(n=600, dynamic=None)
    assert figures["wrong"] == 0 and not figures["native"]
    assert figures["entries"] == 2 and figures["limit_warnings"] == 0 and figures["recompile_records"] == 1


def test_threads_share_one_function_and_one_module():
    # eight threads start together: their first calls miss at once, and a second shape misses again
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no recompile-limit warning
        figures = soak.threads(n_threads=8, calls=150)
    assert figures["error_count"] == 0 and figures["wrong"] == 0
    assert figures["function_entries"] == 2 and figures["module_entries"] == 2 and not figures["native"]


def test_training_loop_keeps_its_tensors_and_entries_constant():
    figures = soak.training_loop(steps=600)
    assert figures["tensors_end"] == figures["tensors_warm"]
    assert figures["entries"] == 1
    assert figures["loss_last"] < figures["loss_first"]


def test_fork_after_compiling():
    figures = soak.fork_after_compiling()
    assert figures["loader_items"] == 8 and figures["loader_ok"]
    assert figures["fork_child_exit"] == 0 and figures["parent_still_ok"]


def test_make_soak_prints_every_scenarios_memory_growth(capsys, monkeypatch):
    monkeypatch.setitem(soak.SCENARIOS, "small", (lambda: {"made": len([object() for _ in range(10)])}, lambda s: {}))
    assert soak.main(["small", "fork_after_compiling"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" ")[0] for line in lines] == ["small", "fork_after_compiling"]
    assert all("rss_before_mb=" in line and "rss_after_mb=" in line and "rss_growth_mb=" in line for line in lines)
