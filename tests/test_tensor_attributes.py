"""Python attributes set on tensors (``t.tag = True``) inside a compiled
function: on an input a side effect replayed on the real tensor after the
graph, on a tensor the graph makes a value the trace keeps and sets on the
output tensor; compared with eager (issue 17)."""
import torch

from tests.helpers import check, t


def test_attribute_stored_on_an_input_is_read_back_and_replayed():
    def fn(x):
        x.tag = True
        x.tag = x.tag and x.shape[0] == 3
        return x * 2 if x.tag else x, x.tag

    check(fn, t(3), fullgraph=True)  # check compares the tensors' attributes: x.tag on both sides


def test_attribute_on_a_computed_tensor_follows_it_out_of_the_graph():
    def fn(x):
        y = x * 2
        y.note = 3
        z = y.add_(1)  # the same tensor object: it has the note too
        return y, z.note + 1, hasattr(y, "note"), hasattr(x, "note")

    assert check(fn, torch.ones(2), fullgraph=True)[0].note == 3


def test_reading_a_missing_tensor_attribute_raises_attribute_error():
    def fn(x):
        y = x + 1
        try:
            return y.missing
        except AttributeError as e:
            return y * 2, str(e)

    assert check(fn, torch.ones(2), fullgraph=True)[1] == "'Tensor' object has no attribute 'missing'"


def test_attribute_on_a_computed_tensor_survives_a_graph_break():
    def fn(x):
        y = x * 2
        y.note = "kept"
        print("a graph break")
        return y + 1, y.note

    assert check(fn, torch.ones(2), graphs=2, breaks=1, gb_types=["print"])[1] == "kept"


def test_input_attribute_set_before_the_call_is_guarded():
    def fn(x):
        return x + 1 if getattr(x, "tag", False) else x - 1

    tagged = torch.ones(2)
    tagged.tag = True
    check(fn, calls=[(tagged,), (torch.ones(2),)], fullgraph=True, graphs=2)
