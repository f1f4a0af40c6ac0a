"""Guards: what the trace specialised on recompiles when it changes, nothing
else does, and the recompile reason says what changed.

The state a compiled function read changes between its calls, which check's
copies per call cannot do: Runner calls one compiled function and compares each
call on fresh copies of its arguments (modules are compiled and compared with
themselves, unmutated)."""
import pytest
import torch
from torch import nn

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter, same
from tests.helpers import assert_same, fresh

SCALE = 2.0


def reasons(fn):
    return metrics.FRAMES[id(fn.__code__)].recompile_reasons


class Runner:
    """One compiled ``fn`` called while the state it read changes between calls
    (which check's copies per call cannot change): each call runs both sides on
    fresh copies of the arguments and compares results and arguments as check does."""

    def __init__(self, fn):
        self.fn = fn
        self.cnt = CompileCounter()
        self.compiled = bytegraph.compile(fn, backend=self.cnt)

    def __call__(self, *args, **kwargs):
        eager_args, compiled_args = fresh((args, kwargs)), fresh((args, kwargs))
        expected = self.fn(*eager_args[0], **eager_args[1])
        actual = self.compiled(*compiled_args[0], **compiled_args[1])
        assert_same((compiled_args, actual), (eager_args, expected), "(arguments, result)")
        return actual

    @property
    def graphs(self):
        return self.cnt.frame_count


def add_one(x):
    return x + 1


def test_unchanged_calls_do_not_recompile():
    run = Runner(add_one)
    for _ in range(3):
        run(torch.randn(3))  # new tensors, same metadata
    assert run.graphs == 1
    assert reasons(add_one) == []


def test_shape_change_recompiles_with_reason():
    run = Runner(add_one)
    run(torch.randn(3))
    run(torch.randn(4))
    assert run.graphs == 2
    assert reasons(add_one) == ["tensor 'x' size mismatch at index 0: expected 3, got 4"]
    run(torch.randn(3))
    run(torch.randn(4))
    assert run.graphs == 2  # both entries stay cached


def test_rank_change_recompiles():
    run = Runner(add_one)
    run(torch.randn(3))
    run(torch.randn(3, 1))
    assert run.graphs == 2
    assert "'x'" in reasons(add_one)[0] and "rank" in reasons(add_one)[0]


def test_dtype_change_recompiles_with_reason():
    run = Runner(add_one)
    run(torch.randn(3))
    run(torch.randn(3, dtype=torch.float64))
    assert run.graphs == 2
    (reason,) = reasons(add_one)
    assert "'x'" in reason and "dtype" in reason and "torch.float32" in reason and "torch.float64" in reason


def test_requires_grad_change_recompiles_with_reason():
    run = Runner(add_one)
    run(torch.randn(3))
    out = run(torch.randn(3, requires_grad=True))
    assert out.requires_grad
    assert run.graphs == 2
    (reason,) = reasons(add_one)
    assert "'x'" in reason and "requires_grad" in reason


def test_stride_change_recompiles():
    def f(x):
        return x * 2

    run = Runner(f)
    run(torch.randn(3, 4))
    run(torch.randn(4, 3).t())
    assert run.graphs == 2
    assert "'x'" in reasons(f)[0]


def test_type_change_of_argument_recompiles():
    def f(x, y):
        return x * y

    run = Runner(f)
    run(torch.randn(3), 2)
    run(torch.randn(3), 2.0)
    run(torch.randn(3), torch.randn(3))
    assert run.graphs == 3
    assert all("'y'" in r for r in reasons(f))


@pytest.mark.parametrize("first, second", [(2, 3), (True, False), ("a", "b"), (None, 1), (1.5, 2.5)])
def test_python_constant_argument_change_recompiles(first, second):
    def f(x, c):
        if c == "a" or c is True or c is None:
            return x + 1
        return x * c if isinstance(c, (int, float)) else x - 1

    run = Runner(f)
    run(torch.randn(3), first)
    run(torch.randn(3), first)
    assert run.graphs == 1
    run(torch.randn(3), second)
    assert run.graphs == 2
    (reason,) = reasons(f)
    assert "'c'" in reason and repr(first) in reason and repr(second) in reason


def test_keyword_argument_change_recompiles():
    def f(x, *, scale=1.0):
        return x * scale

    run = Runner(f)
    run(torch.randn(3))
    run(torch.randn(3), scale=1.0)
    assert run.graphs == 1
    run(torch.randn(3), scale=3.0)
    assert run.graphs == 2


def test_container_argument_changes_recompile():
    def f(x, items, d):
        return x * len(items) + d["k"] + items[0]

    run = Runner(f)
    run(torch.randn(3), [1, 2], {"k": 1})
    run(torch.randn(3), [1, 2], {"k": 1, "extra": 5})  # unread key: no recompile
    assert run.graphs == 1
    run(torch.randn(3), [1, 2, 3], {"k": 1})
    run(torch.randn(3), [4, 2, 3], {"k": 1})
    run(torch.randn(3), [4, 2, 3], {"k": 7})
    assert run.graphs == 4


def test_items_of_a_constant_tuple_are_guarded_as_read():
    def f(x, t):
        return x * t[1] + t[-1]

    run = Runner(f)
    run(torch.randn(3), (1, 2, 3))
    run(torch.randn(3), (11, 2, 3))  # an item never read: no recompile
    assert run.graphs == 1
    run(torch.randn(3), (1, 5, 3))  # a read item
    run(torch.randn(3), (1, 2, 7))  # read through a negative index
    run(torch.randn(3), (1, 2, 3, 3))  # the length (t[-1] is another item)
    assert run.graphs == 4
    assert run.graphs == len(reasons(f)) + 1


@pytest.mark.parametrize("use", [
    lambda t: sum(t), lambda t: t[:2][0], lambda t: list(t)[1], lambda t: t == (1, 2, 3),
    lambda t: 2 in t,
], ids=["iterated", "sliced", "converted", "compared", "contains"])
def test_a_constant_tuple_used_whole_is_guarded_whole(use):
    def f(x, t):
        return x + use(t) + t[1]

    run = Runner(f)
    run(torch.randn(3), (1, 2, 3))
    run(torch.randn(3), (1, 2, 3))
    assert run.graphs == 1
    run(torch.randn(3), (4, 2, 3))  # the item t[1] did not read changes what the whole use saw
    assert run.graphs == 2


def use_global(x):
    return x * SCALE


def test_global_variable_change_recompiles():
    global SCALE
    run = Runner(use_global)
    run(torch.randn(3))
    old = SCALE
    SCALE = 5.0
    try:
        run(torch.randn(3))
    finally:
        SCALE = old
    assert run.graphs == 2
    (reason,) = reasons(use_global)
    assert "SCALE" in reason and "2.0" in reason and "5.0" in reason


def test_closure_variable_change_recompiles():
    scale = 2.0

    def f(x):
        return x * scale

    run = Runner(f)
    run(torch.randn(3))
    scale = 3.0
    run(torch.randn(3))
    assert run.graphs == 2
    (reason,) = reasons(f)
    assert "scale" in reason and "2.0" in reason and "3.0" in reason


def test_function_global_replaced_recompiles():
    global helper_fn

    def f(x):
        return helper_fn(x)

    run = Runner(f)
    helper_fn = torch.sin
    run(torch.randn(3))
    helper_fn = torch.cos
    run(torch.randn(3))
    assert run.graphs == 2
    assert "helper_fn" in reasons(f)[0]


helper_fn = torch.sin


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.scale = 2.0

    def forward(self, x):
        return self.linear(x) * self.scale


def test_module_attribute_change_recompiles():
    module = Scaled()
    cnt = CompileCounter()
    compiled = bytegraph.compile(module, backend=cnt)
    x = torch.randn(2, 3)
    assert same(compiled(x), module(x))
    module.scale = 4.0
    assert same(compiled(x), module(x))
    assert cnt.frame_count == 2
    (reason,) = [r for stats in metrics.FRAMES.values() for r in stats.recompile_reasons]
    assert "scale" in reason and "2.0" in reason and "4.0" in reason


def test_submodule_replaced_reuses_the_entry_until_its_structure_differs():
    # modules are guarded by type and structure (their parameters are graph inputs), not identity
    module = Scaled()
    cnt = CompileCounter()
    compiled = bytegraph.compile(module, backend=cnt)
    x = torch.randn(2, 3)
    assert same(compiled(x), module(x))
    module.linear = nn.Linear(3, 3)  # same structure, new weights: the entry runs on them
    assert same(compiled(x), module(x))
    assert cnt.frame_count == 1
    module.linear = nn.Linear(3, 3, bias=False)  # no bias parameter any more
    assert same(compiled(x), module(x))
    module.linear = nn.Linear(3, 3).double()
    assert same(compiled(x.double()), module(x.double()))
    module.linear = nn.Bilinear(3, 3, 3)  # another class, whose forward takes two inputs: eager's TypeError
    with pytest.raises(TypeError):
        module(x)
    with pytest.raises(TypeError):
        compiled(x)
    assert cnt.frame_count == 3
    reasons = [r for stats in metrics.FRAMES.values() for r in stats.recompile_reasons]
    assert "bias" in reasons[0] and "dtype" in reasons[1] and "Bilinear" in reasons[2], reasons


def test_grad_mode_change_recompiles():
    x = torch.randn(3, requires_grad=True)
    run = Runner(add_one)
    assert run(x).requires_grad
    with torch.no_grad():
        assert not run(x).requires_grad
    assert run.graphs == 2
    (reason,) = reasons(add_one)
    assert "grad mode" in reason
    assert run(x).requires_grad
    assert run.graphs == 2


def test_default_dtype_change_recompiles():
    def f(x):
        return x + torch.ones(3)

    run = Runner(f)
    run(torch.randn(3))
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        out = run(torch.randn(3, dtype=torch.float32))
    finally:
        torch.set_default_dtype(old)
    assert out.dtype == torch.float64
    assert run.graphs == 2


def test_grad_mode_changed_inside_is_restored():
    def f(x):
        torch.set_grad_enabled(False)
        y = x * 2
        torch.set_grad_enabled(True)
        return y, x * 3

    x = torch.randn(3, requires_grad=True)
    run = Runner(f)
    y, z = run(x)
    assert not y.requires_grad and z.requires_grad
    assert torch.is_grad_enabled()


def test_recompile_limit_runs_natively_with_one_warning():
    def f(x, n):
        return x * n

    run = Runner(f)
    # automatic dynamic would make ``n`` symbolic after it changes once; this
    # test is about the limit, so keep every value specialised
    with bytegraph.config.patch(recompile_limit=3, automatic_dynamic_shapes=False):
        for n in range(3):
            run(torch.randn(2), n)
        assert run.graphs == 3
        with pytest.warns(UserWarning) as record:
            for n in range(3, 8):
                run(torch.randn(2), n)  # still eager results, no more graphs
            run(torch.randn(2), 0)  # a cached entry is still used
    assert run.graphs == 3
    assert len(record) == 1
    message = str(record[0].message)
    assert "recompile_limit" in message and "'n'" in message and "expected 2, got 3" in message
    assert metrics.FRAMES[id(f.__code__)].ran_natively


def test_recompile_limit_is_per_function():
    def f(x, n):
        return x + n

    def g(x, n):
        return x - n

    run_f, run_g = Runner(f), Runner(g)
    with bytegraph.config.patch(recompile_limit=2, automatic_dynamic_shapes=False):
        with pytest.warns(UserWarning, match=r"per_function\.<locals>\.f hit") as record:
            for n in range(3):
                run_f(torch.randn(2), n)
        for n in range(2):
            run_g(torch.randn(2), n)
    assert len(record) == 1
    assert run_f.graphs == 2 and run_g.graphs == 2


class Settings:
    def __init__(self):
        self.scale = 2.0


def test_object_attribute_change_recompiles():
    def f(x, cfg):
        return x * cfg.scale

    cfg = Settings()
    run = Runner(f)
    run(torch.randn(3), cfg)
    cfg.scale = 3.0
    run(torch.randn(3), cfg)
    assert run.graphs == 2
    (reason,) = reasons(f)
    assert "scale" in reason and "2.0" in reason and "3.0" in reason


def make_multiplier(v):
    def inner(x):
        return x * v
    return inner


multiplier = make_multiplier(2.0)


def with_default(x, s=2.0):
    return x * s


def test_inlined_function_closure_and_defaults_are_guarded():
    def f(x):
        return multiplier(x) + with_default(x)

    run = Runner(f)
    run(torch.randn(3))
    multiplier.__closure__[0].cell_contents = 5.0
    run(torch.randn(3))
    with_default.__defaults__ = (7.0,)
    try:
        run(torch.randn(3))
    finally:
        with_default.__defaults__ = (2.0,)
        multiplier.__closure__[0].cell_contents = 2.0
    assert run.graphs == 3


def test_shadowing_a_builtin_recompiles():
    def f(x, items):
        return x * len(items)

    run = Runner(f)
    run(torch.randn(3), [1, 2])
    globals()["len"] = lambda items: 10
    try:
        run(torch.randn(3), [1, 2])
    finally:
        del globals()["len"]
    assert run.graphs == 2
    assert "len" in reasons(f)[0]


def test_dict_key_appearing_recompiles():
    def f(x, d):
        return x + d.get("k", 5)

    run = Runner(f)
    run(torch.randn(3), {})
    run(torch.randn(3), {"other": 1})
    assert run.graphs == 1
    run(torch.randn(3), {"k": 1})
    assert run.graphs == 2
    assert "'k'" in reasons(f)[0]


def test_aliased_inputs_to_a_mutating_graph_recompile():
    def f(a, b):
        a.add_(1)
        return a + b

    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    assert same(compiled(torch.ones(2), torch.ones(2)), f(torch.ones(2), torch.ones(2)))
    x, y = torch.ones(2), torch.ones(2)
    assert same(compiled(x, x), f(y, y))
    assert same(x, y)
    assert cnt.frame_count == 2


class Plain:
    factor = 2.0

    def method(self, x):
        return x + 1


class PlainChild(Plain):
    def method(self, x):
        return super().method(x) * 2


def test_hasattr_and_getattr_default_recompile_when_attribute_appears():
    def f(x, obj):
        if hasattr(obj, "extra"):
            x = x + obj.extra
        return x * getattr(obj, "scale", 2.0)

    obj = Plain()
    run = Runner(f)
    run(torch.randn(3), obj)
    obj.extra = 5.0
    run(torch.randn(3), obj)
    obj.scale = 7.0
    run(torch.randn(3), obj)
    del obj.extra
    run(torch.randn(3), obj)
    assert run.graphs == 4


def test_module_hasattr_recompiles_when_attribute_appears():
    class M(nn.Module):
        def forward(self, x):
            if hasattr(self, "extra"):
                return x + self.extra
            return x - 1

    module = M()
    cnt = CompileCounter()
    compiled = bytegraph.compile(module, backend=cnt)
    x = torch.randn(3)
    assert same(compiled(x), module(x))
    module.extra = 3.0
    assert same(compiled(x), module(x))
    module.register_buffer("other", torch.ones(3))  # unrelated: no effect on the answer
    del module.extra
    module.extra = nn.Parameter(torch.ones(3))
    assert same(compiled(x), module(x))


@pytest.mark.parametrize("change", ["instance attribute", "instance method", "class method", "base method"])
def test_attribute_resolved_on_the_class_is_guarded(change):
    def f(x, obj):
        return obj.method(x) * obj.factor

    obj = PlainChild()
    run = Runner(f)
    run(torch.randn(3), obj)
    saved = {"class method": PlainChild.method, "base method": Plain.method}.get(change)
    try:
        if change == "instance attribute":
            obj.factor = 9.0
        elif change == "instance method":
            obj.method = lambda x: x - 50
        elif change == "class method":
            PlainChild.method = lambda self, x: x * 100
        else:
            Plain.method = lambda self, x: x + 1000  # reached through super()
        run(torch.randn(3), obj)
    finally:
        if change == "class method":
            PlainChild.method = saved
        if change == "base method":
            Plain.method = saved
    assert run.graphs == 2


def test_instance_forward_patched_after_compile():
    module = nn.Linear(3, 3)
    cnt = CompileCounter()
    compiled = bytegraph.compile(module, backend=cnt)
    x = torch.randn(2, 3)
    assert same(compiled(x), module(x))
    original = module.forward
    module.forward = lambda x: original(x) * 2
    assert same(compiled(x), module(x))
    assert cnt.frame_count == 2


class Box:
    pass


def test_id_of_an_input_is_guarded_by_identity():
    def f(x, box):
        return id(x), id(box), x + 1

    # not Runner: the answer is the arguments' identity, which copies do not keep
    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    a, b, first, second = torch.ones(2), torch.ones(2), Box(), Box()
    for x, box in ((a, first), (b, first), (a, second), (a, first)):
        assert compiled(x, box)[:2] == (id(x), id(box))
    assert cnt.frame_count == 3  # each new object recompiles; the first entry still matches


def test_id_of_a_list_input_breaks():
    def f(items):
        return id(items)

    items = [1]
    assert bytegraph.compile(f, backend="eager")(items) == id(items)
    assert [b.gb_type for s in metrics.FRAMES.values() for b in s.breaks] == ["id of traced value"]


@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr"])
def test_sparse_inputs_run_natively(layout):
    def f(x):
        return x * 2

    x = torch.eye(3).to_sparse() if layout == "sparse_coo" else torch.eye(3).to_sparse_csr()
    out = bytegraph.compile(f, backend="eager")(x)
    assert same(out.to_dense(), f(x).to_dense())
    assert [b.gb_type for s in metrics.FRAMES.values() for b in s.breaks] == ["unsupported tensor layout"]


def _scaled(model, x, n):
    return model(x).sum(0) * n + len(str(n))


def test_guards_in_words_name_values_as_the_user_does():
    """explain() and the guards log show guards grouped by value, with dynamic
    sizes as symbols and no internal names, generated constants or whole dicts."""
    model = nn.Linear(3, 3)
    compiled = bytegraph.compile(_scaled, backend="eager", dynamic=True)
    with metrics.recording() as rec, bytegraph.config.patch(specialize_int=True):  # n stays a constant
        x = torch.randn(4, 3)
        assert same(compiled(model, x, 2), _scaled(model, x, 2))
    [entry] = rec.compiles
    from bytegraph.guards.describe import GuardWords

    groups = dict(GuardWords(entry.guards).grouped())
    assert groups["x"][0] == "float32 tensor of shape (s0, 3)" and "s0 >= 2" in groups["x"]
    assert groups["model.weight"] == ["float32 Parameter of shape (3, 3), requires_grad"]
    assert "the builtin (no global of module" in groups["str"][0]
    assert list(groups)[-1] == "global state" and "grad mode = True" in groups["global state"]
    text = repr(groups)
    assert "___" not in text and "pybind11" not in text and "_parameters" not in text and "__name__" not in text


def test_guards_log_channel_prints_guards_in_words(caplog):
    import logging

    bytegraph.set_logs("guards")
    logger = logging.getLogger("bytegraph.guards")
    logger.addHandler(caplog.handler)
    try:
        x = torch.ones(2, 3)
        assert same(bytegraph.compile(add_one, backend="eager")(x), add_one(x))
    finally:
        logger.removeHandler(caplog.handler)
        bytegraph.set_logs()
    [message] = [r.getMessage() for r in caplog.records]
    first, values, state = message.splitlines()
    assert first == "guards of add_one:" and values == "  x: float32 tensor of shape (2, 3)"
    assert state.startswith("  global state: grad mode = True; default dtype = torch.float32")
    assert "pybind11" not in state and "torch._C" not in state
