"""nn.Module behaviour real models rely on: containers and their slices,
parameter/module listings, hooks (also added after compiling), buffer updates,
RNNs, training with torch's compiling backends. Compiled vs eager."""
import collections
import functools
import types

import pytest
import torch
from torch import nn

import bytegraph
from bytegraph.testing import CompileCounter, same
from tests.helpers import break_types, check, check_module, check_scenario


class Containers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
        self.pl = nn.ParameterList([nn.Parameter(torch.randn(8)) for _ in range(2)])
        self.pd = nn.ParameterDict({"a": nn.Parameter(torch.randn(8))})
        self.md = nn.ModuleDict({"l": nn.Linear(8, 8)})
        self.seq = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))

    def forward(self, x, n: int = 2):
        for layer in self.layers[:n]:
            x = layer(x)
        for p in self.pl:
            x = x * p
        for _, m in self.md.items():
            x = m(x)
        x = self.seq[1:](x) + self.seq[-1](x)
        count = sum(p.numel() for _, p in self.named_parameters())
        return (x + self.pd["a"] + count + len(list(self.children())) + len(list(self.modules())),
                len(self.layers[1:]), type(self.layers[::2]).__name__)


def test_module_and_parameter_containers_and_slices():
    check_module(Containers(), torch.randn(3, 8))


def test_sliced_module_list_does_not_recompile():
    x = torch.randn(3, 8)
    check_module(Containers(), calls=[(x,)] * 3)


def test_returned_module_slice_is_a_new_container_of_the_same_modules():
    module = Containers()

    def f(x):
        return module.layers[1:], module.seq[:2](x)

    out = check(f, torch.randn(2, 8))  # check compares the slice's type and that it holds the same modules
    assert out[0] is not module.layers


def test_batchnorm_running_stats_match_after_steps():
    model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)).train()
    check_module(model, calls=[(torch.randn(4, 8),)] * 3)  # check_module compares the running stats


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(8, 8)

    def forward(self, x):
        return self.inner(x).relu()


def test_forward_hooks_registered_before_compiling():
    model = Hooked()
    model.inner.register_forward_hook(lambda m, i, o: o * 2)
    model.inner.register_forward_pre_hook(lambda m, i: (i[0] + 1,))
    check_module(model, torch.randn(2, 8))


def compiled_hooked():
    """A ``Hooked`` model compiled with a CompileCounter and called once on an
    input (compared with eager): (model, counter, compiled, input). For tests
    that add hooks between calls, which check_module's copies cannot see."""
    model = Hooked()
    cnt = CompileCounter()
    compiled = bytegraph.compile(model, backend=cnt)
    x = torch.randn(2, 8)
    assert same(compiled(x), model(x))
    return model, cnt, compiled, x


def test_forward_hook_added_and_removed_after_compiling_recompiles():
    model, cnt, compiled, x = compiled_hooked()
    handle = model.inner.register_forward_hook(lambda m, i, o: o + 100)
    assert same(compiled(x), model(x)) and cnt.frame_count == 2
    handle.remove()
    assert same(compiled(x), model(x)) and cnt.frame_count == 2  # the first entry applies again


@pytest.mark.parametrize("register", [
    lambda m: m.register_forward_hook(lambda mod, i, o: o + 100),
    lambda m: m.register_forward_pre_hook(lambda mod, i: (i[0] * 3,)),
    lambda m: m.register_full_backward_hook(lambda mod, gi, go: None),
    lambda m: m.register_full_backward_pre_hook(lambda mod, go: None),
], ids=["forward", "forward_pre", "backward", "backward_pre"])
def test_each_kind_of_hook_added_after_compiling_is_seen(register):
    # the hook dicts are read from the module's __dict__: each of the four must be looked at
    model, cnt, compiled, x = compiled_hooked()
    register(model.inner)
    assert same(compiled(x), model(x)) and cnt.frame_count >= 2


def hooked_of_own_class():
    """A ``Hooked`` whose inner module is of a class of its own (patched by the test), compiled."""
    class Inner(nn.Linear):
        pass

    model = Hooked()
    model.inner = Inner(8, 8)
    cnt = CompileCounter()
    compiled = bytegraph.compile(model, backend=cnt)
    x = torch.randn(2, 8)
    assert same(compiled(x), model(x))
    return model, type(model.inner), cnt, compiled, x


def scaling_hooks(self):
    return collections.OrderedDict(h=lambda mod, i, o: o * 5)


def test_hook_dict_shadowed_by_a_class_property_after_compiling_is_seen():
    # a data descriptor on the class wins over the instance __dict__ entry the guard reads
    model, inner, cnt, compiled, x = hooked_of_own_class()
    inner._forward_hooks = property(scaling_hooks)
    assert same(compiled(x), model(x)) and cnt.frame_count == 2


def hooks_getattribute(self, name):
    return scaling_hooks(self) if name == "_forward_hooks" else nn.Module.__getattribute__(self, name)


def test_getattribute_defined_on_the_class_after_compiling_recompiles():
    # the hook dicts read from __dict__ are what an attribute read gives no longer
    model, inner, cnt, compiled, x = hooked_of_own_class()
    inner.__getattribute__ = hooks_getattribute
    compiled(x)
    assert cnt.frame_count == 2


def test_getattribute_defined_on_the_class_after_compiling_is_seen():
    # the guard fails (the class changed); the new trace breaks at the inner module's call, run natively
    model, inner, cnt, compiled, x = hooked_of_own_class()
    inner.__getattribute__ = hooks_getattribute
    assert same(compiled(x), model(x)) and cnt.frame_count == 2


def test_class_given_a_base_defining_a_hook_property_after_compiling_is_seen():
    model, inner, cnt, compiled, x = hooked_of_own_class()
    shadowing = type("Shadowing", (nn.Linear,), {"_forward_hooks": property(scaling_hooks)})
    inner.__bases__ = (shadowing,)
    assert same(compiled(x), model(x)) and cnt.frame_count == 2


def test_global_module_hook_added_after_compiling_is_seen():
    model = Hooked()
    compiled = bytegraph.compile(model, backend="eager")
    x = torch.randn(2, 8)
    compiled(x)
    handle = nn.modules.module.register_module_forward_hook(lambda m, i, o: o * 0 if isinstance(m, nn.Linear) else o)
    try:
        assert same(compiled(x), model(x)) and float(model(x).abs().sum()) == 0.0
    finally:
        handle.remove()


def test_compiled_module_whose_hook_torch_marks_not_to_compile_runs_its_hooks_natively():
    # FSDP2's hooks are wrapped this way: the module's hooks run natively around
    # its compiled forward, with no graph break (as under torch.compile)
    calls = []

    @torch.compiler.disable
    def add_one(module, args):
        calls.append("pre")
        return (args[0] + 1,)

    model = Hooked()
    model.register_forward_pre_hook(add_one)
    model.register_forward_hook(lambda m, i, o: o * 2)
    x = torch.randn(2, 8)
    check_module(model, calls=[(x,), (x,)])  # and that the copies' __dict__ gained no compiled forward
    assert calls == ["pre"] * 4  # once per call, compiled (2) and eager (2)


def test_hook_torch_marks_not_to_compile_registered_after_compiling_is_run():
    model, _, compiled, x = compiled_hooked()
    model.register_forward_hook(functools.partial(torch.compiler.disable(lambda shift, m, i, o: o + shift), 100))
    assert same(compiled(x), model(x)) and float(compiled(x).min()) >= 100
    assert break_types() == []


def test_tensor_hooks_registered_between_calls_do_not_recompile():
    def hooked_input():  # a factory: a copy of a tensor has none of its hooks
        x = torch.randn(2, 8, requires_grad=True)
        x.register_hook(lambda g: g * 2)
        return (x,)

    check_module(Hooked(), calls=[hooked_input] * 3, backward=True)


@pytest.mark.parametrize("backend", ["aot_eager"])
def test_training_steps_with_a_compiling_backend_do_not_recompile(backend):
    model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1)).train()
    x = torch.randn(4, 8)  # gradients accumulate over the three steps on each side
    check_module(model, calls=[(x,)] * 3, backend=backend, backward=True, atol=1e-5)


class SelfCache(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        self.cache = x * 3
        self.count = getattr(self, "count", 0) + 1
        self.steps += 1
        return self.cache + self.steps


def test_module_attribute_rebinding_and_buffer_updates_replay_each_call():
    x = torch.randn(3)  # check_module compares cache, count and steps after each call
    check_module(SelfCache(), calls=[(x,), (x,)], graphs=2)  # count is a guarded int: 1, then 2


@pytest.mark.parametrize("cls,shape", [(nn.LSTM, (2, 5, 8)), (nn.GRU, (2, 5, 8)), (nn.RNN, (2, 5, 8))])
def test_recurrent_modules_in_one_graph(cls, shape):
    model = cls(8, 4, num_layers=2, batch_first=True, bidirectional=True)
    x = torch.randn(*shape)
    check_module(model, calls=[(x,), (x,)], atol=1e-5)


def test_training_flag_is_guarded():
    class TrainFlag(nn.Module):
        def forward(self, x):
            return x * 2 if self.training else x - 1

    # not check_module: the module's mode changes between calls
    model = TrainFlag()
    cnt = CompileCounter()
    compiled = bytegraph.compile(model, backend=cnt)
    x = torch.randn(3)
    assert same(compiled(x), x * 2)
    model.eval()
    assert same(compiled(x), x - 1)
    model.train()
    assert same(compiled(x), x * 2) and cnt.frame_count == 2


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compiled_module_under_torch_func_transforms_matches_eager(backend):
    # under vmap/grad the inputs are functorch wrappers: the call runs natively
    # not check_module: the compiled module is called under transforms, which check cannot wrap
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), nn.GELU())
    cnt = CompileCounter() if backend == "eager" else backend
    compiled = bytegraph.compile(model, backend=cnt)
    x = torch.randn(4, 2, 3)
    assert same(compiled(x), model(x))
    assert same(torch.vmap(compiled)(x), torch.vmap(model)(x))
    grad = torch.func.grad(lambda v: compiled(v).sum())
    assert same(grad(x[0]), torch.func.grad(lambda v: model(v).sum())(x[0]))
    assert same(compiled(x), model(x))
    if backend == "eager":
        assert cnt.frame_count == 1


@pytest.mark.parametrize("rnn", [nn.GRU, nn.LSTM])
def test_rnn_on_packed_sequences_of_changing_lengths_matches_eager(rnn):
    # the packed kernel reads batch_sizes' values: it breaks (tracing it on FakeTensors crashed)
    from torch.nn.utils.rnn import pack_padded_sequence

    torch.manual_seed(0)
    layer = rnn(3, 4)

    def f(p):
        return layer(p)[0].data

    packed = [pack_padded_sequence(torch.randn(5, 3, 3), torch.tensor(n)) for n in ([5, 3, 2], [4, 3, 1], [5, 5, 5])]
    if rnn is nn.LSTM:  # the kernel call breaks on each new batch_sizes guard
        breaks = ["packed sequence RNN"] * 2
    else:  # GRU's input check reads batch_sizes[0] in a branch first: a break per size, then the kernel's
        branch = "data-dependent branching"
        breaks = [branch] * 3 + ["packed sequence RNN"] + [branch] * 2 + ["packed sequence RNN"]
    check(f, calls=[(p,) for p in packed], graphs=2 if rnn is nn.LSTM else 4, breaks=len(breaks), gb_types=breaks)


# ---- views of mappings that are not dicts (zoo W1: peft's ``key not in lora_A.keys()``) ----------

class _DictSub(dict):
    pass


class _OrderedSub(collections.OrderedDict):
    pass


def _mappings():
    """A fresh mapping of each kind whose ``keys()``/``values()``/``items()`` are views."""
    return {
        "ModuleDict": nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Identity()}),
        "MappingProxyType": types.MappingProxyType({"a": 1, "b": 2}),
        "dict subclass": _DictSub(a=1, b=2),
        "OrderedDict subclass": _OrderedSub(a=1, b=2),
        "dict": {"a": 1, "b": 2},
    }


def _values(seq, x):
    return [v(x) if isinstance(v, nn.Module) else v for v in seq]


@pytest.mark.parametrize("kind", list(_mappings()))
def test_mapping_views_are_reusable_sized_and_answer_in(kind):
    mapping = _mappings()[kind]

    def f(x):
        keys, values, items = mapping.keys(), mapping.values(), mapping.items()
        twice = [k for k in keys] + [k for k in keys]
        return (x + len(keys) + len(values) + len(items), twice, "a" in keys, "zz" not in keys,
                _values(values, x) + _values(values, x), [k for k, _ in items] + [k for k, _ in items],
                bool(keys), list(reversed(keys)))

    check(f, torch.ones(2), fullgraph=True)


def test_parameter_dict_keys_is_a_view_and_values_items_are_generators_as_in_eager():
    pd = nn.ParameterDict({"p": nn.Parameter(torch.ones(2)), "q": nn.Parameter(torch.zeros(2))})

    def f(x):
        keys, values, items = pd.keys(), pd.values(), pd.items()
        first, second = [v + x for v in values], [v + x for v in values]  # a generator: empty the second time
        return first, second, len(keys), "p" in keys, [k for k, _ in items], [k for k, _ in items], list(keys)

    check(f, torch.ones(2), fullgraph=True)


def test_module_dict_keys_view_recompiles_when_a_module_is_added():
    def run(compile):
        md = nn.ModuleDict({"a": nn.Linear(2, 2)})

        def f(x):
            return x + len(md.keys()), "b" in md.keys()

        compiled = compile(f)
        x = torch.ones(2)
        first = compiled(x)
        md["b"] = nn.Identity()
        return first, compiled(x)

    check_scenario(run, graphs=2, fullgraph=True)
