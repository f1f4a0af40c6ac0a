"""nn.Module capture: parameters and buffers, containers, attributes, training
mode, OptimizedModule, and a full TransformerEncoder."""
import pytest
import torch
from torch import nn

import bytegraph
from bytegraph.testing import CompileCounter, same
from tests.helpers import check_module


def compile_module(module):
    """For the tests of OptimizedModule itself and of state changed between
    calls (which check_module's own copies cannot see)."""
    cnt = CompileCounter()
    return bytegraph.compile(module, backend=cnt), cnt


class WithBuffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)
        self.scale = nn.Parameter(torch.randn(3))
        self.register_buffer("offset", torch.randn(3))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        return self.linear(x) * self.scale + self.offset


def test_parameters_and_buffers():
    check_module(WithBuffers(), torch.randn(2, 4))


def test_parameters_and_buffers_are_read_at_call_time():
    # not check_module: the weights change between calls
    module = WithBuffers()
    compiled, cnt = compile_module(module)
    x = torch.randn(2, 4)
    compiled(x)
    with torch.no_grad():
        module.linear.weight.add_(1.0)
        module.scale.mul_(2.0)
    module.offset.fill_(3.0)
    assert same(compiled(x), module(x))
    assert cnt.frame_count == 1  # in-place updates of weights need no recompile


def test_buffer_mutation_in_forward():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.zeros(()))
            self.register_buffer("running", torch.zeros(3))

        def forward(self, x):
            self.count += 1
            self.running.mul_(0.9).add_(x.mean(0) * 0.1)
            return x - self.running

    check_module(Counter(), calls=[(torch.randn(4, 3),) for _ in range(3)])  # and the buffers after each call


def test_sequential():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2), nn.Tanh())
    check_module(model, torch.randn(3, 4))


class ListModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        x = self.layers[0](x)
        x = self.layers[-1](x) + x
        for layer in self.layers:
            x = torch.relu(layer(x))
        for i, layer in enumerate(self.layers):
            x = x + i * layer(x)
        return x, len(self.layers)


def test_module_list_indexing_and_iteration():
    check_module(ListModel(), torch.randn(2, 4))


class DictModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 3)})

    def forward(self, x):
        outs = {name: head(x) for name, head in self.heads.items()}
        outs["first"] = self.heads["a"](x) * 2
        keys = list(self.heads.keys())
        total = sum(head(x).sum() for head in self.heads.values())
        return outs, keys, total, "a" in self.heads, len(self.heads)


def test_module_dict():
    check_module(DictModel(), torch.randn(2, 4))


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        return x + self.ff(self.norm(x))


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.blocks = nn.Sequential(Block(8), Block(8))
        self.head = nn.Linear(8, 3)

    def forward(self, tokens):
        return self.head(self.blocks(self.embed(tokens)).mean(1))


def test_nested_modules():
    check_module(Nested(), torch.randint(0, 10, (2, 5)))


class Configured(nn.Module):
    def __init__(self):
        super().__init__()
        self.alpha = 0.5
        self.repeats = 2
        self.use_bias = True
        self.mode = "sum"
        self.linear = nn.Linear(3, 3)

    def forward(self, x):
        for _ in range(self.repeats):
            x = self.linear(x) * self.alpha
        if self.use_bias:
            x = x + 1
        return x.sum() if self.mode == "sum" else x.mean()


def test_module_constant_attributes():
    check_module(Configured(), torch.randn(2, 3))


@pytest.mark.parametrize(
    "name, value", [("alpha", 2.0), ("repeats", 3), ("use_bias", False), ("mode", "mean")]
)
def test_changed_module_attribute_recompiles(name, value):
    # not check_module: the attribute changes between calls
    module = Configured()
    compiled, cnt = compile_module(module)
    x = torch.randn(2, 3)
    assert same(compiled(x), module(x))
    setattr(module, name, value)
    assert same(compiled(x), module(x))
    assert cnt.frame_count == 2


class TrainingBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        x = self.drop(self.linear(x))
        if self.training:
            return x * 2
        return x - 1


def test_eval_after_compile_recompiles_and_matches():
    # not check_module: the mode changes between calls
    module = TrainingBranch()
    compiled, cnt = compile_module(module)
    x = torch.randn(8, 4)
    torch.manual_seed(1)
    expected = module(x)
    torch.manual_seed(1)
    assert same(compiled(x), expected)
    assert cnt.frame_count == 1
    compiled.eval()
    assert not module.training and not module.drop.training
    assert same(compiled(x), module(x))
    assert cnt.frame_count == 2
    compiled.train()
    torch.manual_seed(2)
    expected = module(x)
    torch.manual_seed(2)
    assert same(compiled(x), expected)
    assert cnt.frame_count == 2  # the training entry is still cached


def test_optimized_module_behaves_like_the_module():
    module = Configured()
    compiled, _ = compile_module(module)
    assert isinstance(compiled, bytegraph.OptimizedModule)
    assert isinstance(compiled, nn.Module)
    assert compiled._orig_mod is module
    assert [id(p) for p in compiled.parameters()] == [id(p) for p in module.parameters()]
    assert list(compiled.state_dict()) == ["_orig_mod." + k for k in module.state_dict()]
    assert compiled.alpha == 0.5 and compiled.linear is module.linear
    compiled.eval()
    assert not module.training and not compiled.training
    compiled.train()
    assert module.training and compiled.training


def test_optimized_module_forwards_attribute_writes_and_mode():
    module = Configured()
    compiled, cnt = compile_module(module)
    x = torch.randn(2, 3)
    compiled(x)
    module.eval()  # on the original: the wrapper reports it
    assert compiled.training is False
    compiled.train()
    compiled.alpha = 3.0  # on the wrapper: lands on the original, and the next call sees it
    assert module.alpha == 3.0
    assert same(compiled(x), module(x))
    compiled.extra = nn.Linear(3, 3)
    assert module.extra is compiled.extra
    assert "_orig_mod.extra.weight" in compiled.state_dict()
    del compiled.extra
    assert not hasattr(module, "extra")
    assert cnt.frame_count == 2


def test_optimized_module_state_dict_matches_torch_compile_keys():
    module = WithBuffers()
    compiled, _ = compile_module(module)
    expected = list(torch.compile(module, backend="eager").state_dict())
    assert list(compiled.state_dict()) == expected


def test_optimized_module_load_state_dict_round_trip():
    module = WithBuffers()
    compiled, _ = compile_module(module)
    other, _ = compile_module(WithBuffers())
    other.load_state_dict(compiled.state_dict())
    x = torch.randn(2, 4)
    assert same(other(x), module(x))


def test_optimized_module_keyword_arguments():
    class KW(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 3)

        def forward(self, x, *, scale=1.0, bias=None):
            out = self.linear(x) * scale
            return out if bias is None else out + bias

    # not check_module: a second call with other keywords, one of them aliasing the input
    module = KW()
    compiled, cnt = compile_module(module)
    x = torch.randn(2, 3)
    assert same(compiled(x), module(x))
    assert same(compiled(x, scale=2.0, bias=x), module(x, scale=2.0, bias=x))
    assert cnt.frame_count == 2


def test_transformer_encoder_one_graph():
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    x = torch.randn(2, 5, 16)
    check_module(model, x, atol=1e-5)


def test_compiling_a_module_adds_nothing_to_it():
    """The compiled module's own state (its compiled call, its options) stays on
    the wrapper, whatever torch's OptimizedModule class (its base too) would do
    with an attribute; train()/eval() and deleting an attribute reach the module."""
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    before = set(seq.__dict__)
    compiled = bytegraph.compile(seq, backend="eager")
    compiled(torch.randn(3, 2))
    compiled.eval()
    compiled.note = 1
    del compiled.note
    assert set(seq.__dict__) == before and not seq.training
    assert {"_options", "_compiled_call"} <= set(compiled.__dict__)


def test_optimized_module_pickles_and_forwards_container_protocols():
    import pickle

    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    compiled = bytegraph.compile(seq, backend="eager")
    x = torch.randn(3, 2)
    assert len(compiled) == 2 and compiled[0] is seq[0] and list(compiled) == list(seq) and seq[1] in compiled
    assert bool(compiled) and bool(bytegraph.compile(nn.Linear(2, 2), backend="eager"))
    restored = pickle.loads(pickle.dumps(compiled))
    assert same(restored(x), seq(x)) and type(restored) is type(compiled)
    inductor = bytegraph.compile(seq, backend="inductor", options={"fallback_random": True})
    assert type(pickle.loads(pickle.dumps(inductor))) is type(compiled)
