"""Python attributes set on tensors (``t.tag = True``) inside a compiled
function: on an input a side effect replayed on the real tensor after the
graph, on a tensor the graph makes a value the trace keeps and sets on the
output tensor; compared with eager (issue 17)."""
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same
from tests.helpers import break_types, t


def run_both(fn, make_args, fullgraph=True):
    """``fn`` eagerly and compiled, each on fresh arguments from ``make_args``:
    (eager result, eager args, compiled result, compiled args, counter)."""
    eager_args, compiled_args = make_args(), make_args()
    expected = fn(*eager_args)
    cnt = CompileCounter()
    actual = bytegraph.compile(fn, backend=cnt, fullgraph=fullgraph)(*compiled_args)
    assert same(actual, expected), f"compiled {actual!r} != eager {expected!r}"
    return expected, eager_args, actual, compiled_args, cnt


def test_attribute_stored_on_an_input_is_read_back_and_replayed():
    def fn(x):
        x.tag = True
        x.tag = x.tag and x.shape[0] == 3
        return x * 2 if x.tag else x, x.tag

    data = t(3)
    _, eager_args, _, compiled_args, cnt = run_both(fn, lambda: (data.clone(),))
    assert cnt.frame_count == 1 and break_types() == []
    assert compiled_args[0].tag is eager_args[0].tag is True


def test_attribute_on_a_computed_tensor_follows_it_out_of_the_graph():
    def fn(x):
        y = x * 2
        y.note = 3
        z = y.add_(1)  # the same tensor object: it has the note too
        return y, z.note + 1, hasattr(y, "note"), hasattr(x, "note")

    expected, _, actual, _, cnt = run_both(fn, lambda: (torch.ones(2),))
    assert cnt.frame_count == 1
    assert actual[0].note == expected[0].note == 3


def test_reading_a_missing_tensor_attribute_raises_attribute_error():
    def fn(x):
        y = x + 1
        try:
            return y.missing
        except AttributeError as e:
            return y * 2, str(e)

    _, _, actual, _, cnt = run_both(fn, lambda: (torch.ones(2),))
    assert cnt.frame_count == 1 and actual[1] == "'Tensor' object has no attribute 'missing'"


def test_attribute_on_a_computed_tensor_survives_a_graph_break():
    def fn(x):
        y = x * 2
        y.note = "kept"
        print("a graph break")
        return y + 1, y.note

    expected, _, actual, _, cnt = run_both(fn, lambda: (torch.ones(2),), fullgraph=False)
    assert cnt.frame_count == 2 and actual[1] == "kept"


def test_input_attribute_set_before_the_call_is_guarded():
    def fn(x):
        return x + 1 if getattr(x, "tag", False) else x - 1

    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt, fullgraph=True)
    tagged = torch.ones(2)
    tagged.tag = True
    for x in (tagged, torch.ones(2)):
        assert same(compiled(x), fn(x))
    assert cnt.frame_count == 2
