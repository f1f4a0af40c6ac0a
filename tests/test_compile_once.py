"""One compiled entry per code object, as torch.compile: modules are guarded by
type and structure (their parameters and buffers are graph inputs), so every
instance of a class shares one entry and one backend compile; the cache is
the code object's across ``bytegraph.compile`` calls (the options are part of
the key), and ``recompile_limit`` counts the code object's entries. Each test
compares with eager on equal copies and counts backend calls exactly; a
mutation of one instance after sharing must still be seen. The tests compile
directly, not through ``tests/helpers.check``: what is under test is the sharing
across several ``bytegraph.compile`` calls and instances, which one check of one
compiled callable cannot express."""
import copy
import gc
import warnings
import weakref

import pytest
import torch
from torch import nn

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter, same


class Block(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        return x + self.drop(self.fc2(torch.relu(self.fc1(self.ln(x)))))


class Twin(Block):
    """Another class with Block's structure and forward."""


def blocks(n, cls=Block):
    torch.manual_seed(0)
    return [cls() for _ in range(n)]


def run_stack(layers, x):
    for layer in layers:
        x = layer(x)
    return x


def reasons():
    return [r for stats in metrics.FRAMES.values() for r in stats.recompile_reasons]


@pytest.mark.parametrize("grad", [True, False])
def test_identical_blocks_compiled_one_by_one_share_one_entry(grad):
    layers = blocks(8)
    eager = copy.deepcopy(layers)
    cnt = CompileCounter()
    compiled = [bytegraph.compile(layer, backend=cnt) for layer in layers]
    x = torch.randn(2, 8)
    with torch.set_grad_enabled(grad):
        assert same(run_stack(compiled, x), run_stack(eager, x))
        assert same(run_stack(compiled, x), run_stack(eager, x))
    # with grad on, the first block's input does not require grad and the others' do: two entries, as torch.compile
    assert cnt.frame_count == (2 if grad else 1)
    if grad:
        assert reasons() == ["tensor 'args[0]' requires_grad mismatch: expected False, got True"]


def test_training_step_through_shared_entries_matches_eager():
    layers = blocks(4)
    eager = copy.deepcopy(layers)
    cnt = CompileCounter()
    compiled = [bytegraph.compile(layer, backend=cnt) for layer in layers]
    x = torch.randn(3, 8)
    run_stack(compiled, x).square().mean().backward()
    run_stack(eager, x).square().mean().backward()
    for a, b in zip(layers, eager):
        for (name, p), q in zip(a.named_parameters(), b.parameters()):
            assert same(p.grad, q.grad), name
    assert cnt.frame_count == 2


def test_another_class_of_the_same_structure_is_its_own_entry():
    cnt = CompileCounter()
    x = torch.randn(2, 8)
    for layer in blocks(2) + blocks(2, Twin):
        with torch.no_grad():
            assert same(bytegraph.compile(layer, backend=cnt)(x), layer(x))
    assert cnt.frame_count == 2  # Block once, Twin once (each class its own frame code)


def test_a_function_compiled_twice_with_the_same_options_compiles_once():
    def f(x):
        return x.sin() + 1

    cnt = CompileCounter()
    x = torch.randn(3)
    for _ in range(3):
        assert same(bytegraph.compile(f, backend=cnt)(x), f(x))
    assert cnt.frame_count == 1
    other = CompileCounter()
    assert same(bytegraph.compile(f, backend=other)(x), f(x))  # another backend: its own entry
    assert same(bytegraph.compile(f, backend=cnt, dynamic=False)(x), f(x))  # other options: their own entry
    assert (cnt.frame_count, other.frame_count) == (2, 1)
    assert same(bytegraph.compile(f, backend=cnt)(x), f(x))
    assert cnt.frame_count == 2
    assert reasons() == []  # a first compile under new options is no recompile


def test_equal_inductor_settings_share_a_backend():
    from bytegraph.backends.builtin import inductor_with

    assert inductor_with("max-autotune", None) is inductor_with("max-autotune", None)
    assert inductor_with(None, {"epilogue_fusion": False}) is inductor_with(None, {"epilogue_fusion": False})
    assert inductor_with(None, {"epilogue_fusion": False}) is not inductor_with(None, {"epilogue_fusion": True})


def test_recompile_limit_counts_the_code_objects_entries():
    def f(x):
        return x * 2

    x = torch.randn(2)
    counters = [CompileCounter() for _ in range(3)]
    with bytegraph.config.patch(recompile_limit=2), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for cnt in counters:  # three backends, one code object: the third is over the limit
            assert same(bytegraph.compile(f, backend=cnt)(x), f(x))
    assert [c.frame_count for c in counters] == [1, 1, 0]
    assert any("recompile_limit" in str(w.message) for w in caught)


def test_instances_of_other_structures_count_towards_the_limit():
    cnt = CompileCounter()
    x = torch.randn(2, 8)
    layers = blocks(3)
    for i, layer in enumerate(layers):
        layer.fc1.bias = None if i == 1 else layer.fc1.bias
        layer.ln.eps = 1e-5 * (i + 1) if i == 2 else layer.ln.eps
    with bytegraph.config.patch(recompile_limit=2), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            for layer in layers:
                assert same(bytegraph.compile(layer, backend=cnt)(x), layer(x))
    assert cnt.frame_count == 2


def mutations():
    """Ways to change one instance after it shared the entry; each returns the
    dtype its input must have then."""
    def reassign(m):
        m.fc1.weight = nn.Parameter(torch.randn(16, 8))  # same metadata: the entry runs on the new values

    def requires_grad(m):
        m.fc2.weight.requires_grad_(False)

    def resize(m):  # the same Parameter object, resized in place (a bias of one value broadcasts)
        m.fc2.bias.requires_grad_(False)
        with torch.no_grad():
            m.fc2.bias.resize_(1).fill_(0.5)

    def strides(m):
        m.fc1.weight.data = m.fc1.weight.data.t().contiguous().t()

    def dtype(m):
        m.double()
        return torch.float64

    def hook(m):
        m.fc1.register_forward_hook(lambda mod, args, out: out * 2)

    def pre_hook(m):
        m.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))

    def eval_mode(m):
        m.drop.p = 0.5
        m.eval()

    def attribute(m):
        m.ln.eps = 0.25

    def new_submodule(m):
        m.fc2 = nn.Sequential(nn.Linear(16, 8), nn.Tanh())

    def buffer(m):
        m.register_buffer("offset", torch.ones(8))
        m.forward = lambda x: Block.forward(m, x) + m.offset

    return {f.__name__: f for f in (reassign, requires_grad, resize, strides, dtype, hook, pre_hook, eval_mode,
                                    attribute, new_submodule, buffer)}


#: the mutations that leave the entry valid (the graph reads the new values as inputs)
SAME_ENTRY = {"reassign"}


@pytest.mark.parametrize("name", list(mutations()))
def test_mutating_one_shared_instance_is_seen(name):
    layers = blocks(3)
    eager = copy.deepcopy(layers)
    cnt = CompileCounter()
    compiled = [bytegraph.compile(layer, backend=cnt) for layer in layers]
    x = torch.randn(2, 8)
    with torch.no_grad():
        for c, e in zip(compiled, eager):
            assert same(c(x), e(x))
        assert cnt.frame_count == 1
        mutate = mutations()[name]
        torch.manual_seed(1)
        dtype = mutate(layers[1])
        torch.manual_seed(1)
        mutate(eager[1])
        x1 = x.to(dtype or x.dtype)
        assert same(compiled[1](x1), eager[1](x1)), name
        for c, e in zip(compiled, eager):  # the others still hit the first entry, the mutated one its own
            x_ = x1 if c is compiled[1] else x
            assert same(c(x_), e(x_)), name
    assert cnt.frame_count == (1 if name in SAME_ENTRY else 2), reasons()
    if name == "requires_grad":  # under no_grad the graph does not see requires_grad; the guard still does
        assert "requires_grad" in reasons()[0]


def test_an_instance_that_dies_leaves_the_shared_entry_valid_and_is_not_kept_alive():
    cnt = CompileCounter()
    x = torch.randn(2, 8)
    first, second = blocks(2)
    compiled = bytegraph.compile(first, backend=cnt)
    with torch.no_grad():
        expected = first(x)
        assert same(compiled(x), expected)
        dead = weakref.ref(first)
        del first, compiled, expected
        gc.collect()
        assert dead() is None
        assert same(bytegraph.compile(second, backend=cnt)(x), second(x))
    assert cnt.frame_count == 1


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 1.0


class StoreThroughOneReadThroughOther(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.a, self.b = a, b

    def forward(self, x):
        self.a.scale = 3.0
        return x * self.b.scale


def test_module_attribute_stores_guard_that_the_modules_stay_distinct():
    # modules are not guarded by identity: a trace that stores through one must not serve a call where the
    # module it read through is the same object
    cnt = CompileCounter()
    x = torch.ones(2)
    shared = Holder()
    for model in (StoreThroughOneReadThroughOther(Holder(), Holder()), StoreThroughOneReadThroughOther(shared, shared)):
        eager = copy.deepcopy(model)
        compiled = bytegraph.compile(model, backend=cnt)
        for _ in range(2):
            assert same(compiled(x), eager(x))
            assert (model.a.scale, model.b.scale) == (eager.a.scale, eager.b.scale)
    assert cnt.frame_count == 2
    assert "same object" in reasons()[0], reasons()
