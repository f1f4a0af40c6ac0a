"""What ``explain()`` and the terminal report (``bytegraph run``'s stderr) say,
and that they say what the HTML page says: each graph break once with its
explanation and hints true for the current config, each recompile reason once
with a count, guards in words (a resume function's stack values by the
expression that made them), compile times labelled by frame; resume
functions named by the user's function and line."""
import inspect
import re

import pytest
import torch

import bytegraph
from bytegraph.breaks import HINT_DATA_DEPENDENT, HINT_DYNAMIC_OUTPUT_SHAPE, true_hints
from bytegraph.bytecode.resume import stack_value_names, user_label
from bytegraph.report import format_report, model
from bytegraph.runtime import metrics
from tests.helpers import assert_same, check, fresh

TURN_ON = "Turn bytegraph.config.capture_scalar_outputs on"


def steps(x):
    return sum(range(x.sum().int().item())) * x  # the captured scalar is needed as a Python int


def _explained(fn, *args):
    """explain() of ``fn`` on a copy of ``args``, its result checked against eager's on another
    (not check: explain() itself, the API under test, compiles and runs the function)."""
    out = bytegraph.explain(fn)(*fresh(args))
    assert_same(out.result, fn(*fresh(args)))
    return out


@pytest.mark.parametrize("capture", [True, False])
def test_data_dependent_hint_is_true_for_the_capture_setting(capture, tmp_path):
    with bytegraph.config.patch(capture_scalar_outputs=capture):
        out = _explained(steps, torch.ones(3))
    gb_type = "data-dependent scalar" if capture else "data-dependent tensor method"
    assert out.graph_count == 2 and [b.gb_type for b in out.break_reasons] == [gb_type]
    [hints] = [b.hints for b in out.break_reasons]
    assert any(h.startswith(TURN_ON) for h in hints) is (not capture)
    text, terminal = str(out), format_report()
    page = open(bytegraph.write_report(tmp_path / "r.html")).read()
    for hint in hints:  # the same hints in all three
        assert f"Hint: {hint}" in text and f"Hint: {hint}" in terminal and hint in page
    assert (TURN_ON in text) is (TURN_ON in terminal) is (not capture)


def printing(x):
    y = x.cos()
    print("a graph break")
    return y * 2


def test_a_break_met_by_every_recompile_is_listed_once(capsys):
    check(printing, calls=[(torch.randn(rows),) for rows in (2, 3, 4)], dynamic=False, graphs=6, breaks=3,
          gb_types=["print"] * 3)
    [stats] = [s for s in metrics.FRAMES.values() if s.name == "printing"]
    assert len(stats.compiles) == 3 and [b.gb_type for b in stats.breaks] == ["print"] * 3
    terminal = format_report()
    [line] = [line for line in terminal.splitlines() if "[print]" in line]
    assert "(3 compiles of printing)" in line and terminal.count("Hint: Remove the print") == 1
    assert "[printing] tensor 'x' size mismatch at index 0: expected 2, got 3" in terminal
    assert "[printing] tensor 'x' size mismatch at index 0: expected 3, got 4" in terminal
    [summary] = model.build().breaks
    assert summary.count == 3 and summary.frames == ["printing"]


def test_explain_lists_a_repeated_break_once_with_a_count():
    def loop(x):
        for _ in range(3):
            x = x + 1
            print("again")
        return x

    out = _explained(loop, torch.ones(2))
    assert out.graph_count == 3 and out.graph_break_count == 3  # one graph per iteration, one break each
    text = str(out)
    assert text.count("[print] call to print()") == 1 and "(met 3 times)" in text
    assert text.count("Explanation: print() writes to a stream") == 1


def through(x):
    return x.sin()


def caller(x):
    y = through(x * 2)
    print("between")
    return y + x


def test_guards_of_a_resume_function_name_its_stack_values_in_words():
    """The resume function after ``print`` receives ``y`` and the value
    ``print(...)`` returned; its guards say so, not ``<stack value 1>``."""
    out = _explained(caller, torch.ones(3))
    assert out.graph_count == 2 and [b.gb_type for b in out.break_reasons] == ["print"]
    assert out.compile_frames == ["caller", f"caller, resumed at line {_line(caller, 'print(')}"]
    text = "\n".join(out.guards) + str(out)
    assert "<stack value" not in text and "___stack" not in text
    assert f'print("between") (line {_line(caller, "print(")}): is None' in out.guards
    assert re.search(r"Compile times \(s\), per compile:\n  1\. caller: [\d.]+ \(tracing [\d.]+, backend [\d.]+, "
                     r"imports [\d.]+\)\n  2\. caller, resumed at line \d+: ", text)
    terminal = format_report()
    assert "<stack value" not in terminal and "caller, resumed at line" in terminal


def looping(x, blocks):
    for block in blocks:
        x = block(x)
    return x


class _Noisy(torch.nn.Module):
    def forward(self, x):
        print("noisy")
        return x * 2


def test_recompile_reasons_name_resume_values_by_their_expression():
    """A size change seen by a resume function is said of the expression whose
    value it received (``block(x) (line N)``), in explain() and the terminal report;
    so is a loop position it guards (``iter(blocks)``)."""
    blocks = [_Noisy()]  # one block: the resume function's one entry meets the new size
    # not check: the same blocks on both calls (check's fresh copies per call would recompile on their identity)
    compiled = bytegraph.compile(looping, backend="eager")
    for rows in (2, 3):
        x = torch.randn(rows)
        assert_same(compiled(x, blocks), looping(x.clone(), blocks))
    call = _line(looping, "x = block(x)")
    terminal = format_report()
    assert f"tensor 'block(x) (line {call})' size mismatch at index 0: expected 2, got 3" in terminal
    assert "<stack value" not in terminal
    bytegraph.reset()
    compiled(x, [_Noisy(), _Noisy()])  # two: the one resume function has an entry per position in the loop
    loop = _line(looping, "for block in blocks")
    assert f"'iterator_state(iter(blocks) (line {loop}))[1]' value mismatch: expected 1, got 2" in format_report()


def test_resume_functions_are_named_by_the_function_they_continue():
    check(caller, torch.ones(3), graphs=2, breaks=1, gb_types=["print"])
    [resume] = [s.code for s in metrics.FRAMES.values() if s.name.startswith("resume_in_")]
    line = _line(caller, "print(")
    assert resume.co_name == f"resume_in_caller_at_{line}"  # not resume_in_resume_in_...
    assert user_label(resume) == f"caller, resumed at line {line}"
    assert list(stack_value_names(resume).values()) == [f'print("between") (line {line})']


def _line(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def nonzero_count(x):
    return x.nonzero().shape[0] * x


def test_dynamic_output_shape_hint_says_to_turn_capture_on_only_when_it_is_off():
    with bytegraph.config.patch(capture_dynamic_output_shape_ops=False):
        out = _explained(nonzero_count, torch.tensor([1.0, 0.0, 2.0]))
    [b] = out.break_reasons
    assert any(h.startswith("Turn bytegraph.config.capture_dynamic_output_shape_ops on") for h in b.hints)
    # with the setting on, the same hint (an operator that still cannot be captured) says what is left to do
    for hint, on in ((HINT_DYNAMIC_OUTPUT_SHAPE, (False, True)), (HINT_DATA_DEPENDENT, (True, False))):
        [rewritten] = true_hints((hint,), *on)
        assert rewritten != hint and not rewritten.startswith("Turn ") and true_hints((hint,), False, False) == (hint,)


def pick(x, index):
    try:
        return x[index] * 2
    except IndexError:
        return x * 0


def test_graphs_that_raised_are_counted_by_frame():
    x, out_of_range = torch.randn(4), torch.tensor([9])
    check(pick, calls=[(x, torch.tensor([1])), (x, out_of_range), (x, out_of_range)], reruns=2)
    terminal = format_report()
    assert "graphs that raised (each such call then ran its frame natively, as eager does):" in terminal
    assert "  [pick] 2 call(s)" in terminal.splitlines()
