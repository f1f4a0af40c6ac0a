"""The public API: compile in its three forms, argument checking, reset, config.

The API itself is under test (what compile returns and accepts, its errors and
decorator forms), so the tests call ``bytegraph.compile`` directly; programs
compared with eager go through tests/helpers.check."""
import functools
import gc
import io
import os
import weakref
from pathlib import Path

import pytest
import torch

import bytegraph
from bytegraph.runtime import cache, metrics
from bytegraph.testing import CompileCounter, same


def fn(x, y=1.0):
    """A docstring."""
    return x * y + 1


def test_compile_call_form():
    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt)
    x = torch.randn(3)
    assert same(compiled(x), fn(x))
    assert same(compiled(x, y=2.0), fn(x, y=2.0))
    assert cnt.frame_count == 2


def test_compiled_function_keeps_metadata():
    compiled = bytegraph.compile(fn, backend="eager")
    assert compiled.__name__ == "fn"
    assert compiled.__doc__ == "A docstring."
    assert compiled.__wrapped__ is fn


def test_bare_decorator_uses_inductor_by_default():
    @bytegraph.compile
    def f(x):
        return x.cos() + 1

    x = torch.randn(3)
    assert same(f(x), x.cos() + 1)
    assert f.__name__ == "f"
    (stats,) = metrics.FRAMES.values()
    assert len(stats.graphs) == 1


def test_decorator_with_arguments():
    cnt = CompileCounter()

    @bytegraph.compile(backend=cnt)
    def f(x):
        return x.cos() + 1

    x = torch.randn(3)
    assert same(f(x), x.cos() + 1)
    assert cnt.frame_count == 1


def test_disable_returns_the_target_itself():
    assert bytegraph.compile(fn, disable=True) is fn
    module = torch.nn.Linear(2, 2)
    assert bytegraph.compile(module, disable=True) is module
    assert bytegraph.compile(disable=True)(fn) is fn


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        ({"fullgraph": 1}, TypeError, "fullgraph"),
        ({"disable": "yes"}, TypeError, "disable"),
        ({"dynamic": "auto"}, TypeError, "dynamic"),
        ({"options": ["max_autotune"]}, TypeError, "options"),
        ({"mode": "bogus"}, ValueError, "mode"),
        ({"options": {"not_an_inductor_setting": 1}}, ValueError, "not_an_inductor_setting"),
        ({"mode": "max-autotune", "options": {"max_autotune": True}}, ValueError, "mode or options"),
        ({"backend": "not_a_backend"}, ValueError, "not_a_backend"),
        ({"backend": 3}, TypeError, "backend"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, error, name):
    with pytest.raises(error, match=name):
        bytegraph.compile(fn, **kwargs)


def test_bad_arguments_raise_in_decorator_form_too():
    with pytest.raises(TypeError, match="fullgraph"):
        bytegraph.compile(fullgraph="no")


@pytest.mark.parametrize("target", [42, "fn"], ids=["int", "str"])
def test_uncallable_target_is_type_error_naming_the_argument(target):
    with pytest.raises(TypeError, match="model_or_fn"):
        bytegraph.compile(target, backend="eager")


def test_compile_functools_partial():
    part = functools.partial(fn, y=3.0)
    cnt = CompileCounter()
    compiled = bytegraph.compile(part, backend=cnt)
    x = torch.randn(3)
    assert same(compiled(x), part(x))
    assert same(compiled(x, y=0.5), part(x, y=0.5))
    assert cnt.frame_count == 2


def test_reset_drops_caches():
    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt)
    x = torch.randn(3)
    compiled(x)
    compiled(x)
    assert cnt.frame_count == 1
    bytegraph.reset()
    assert same(compiled(x), fn(x))
    assert cnt.frame_count == 2


def test_reset_drops_module_caches():
    cnt = CompileCounter()
    module = torch.nn.Linear(3, 3)
    compiled = bytegraph.compile(module, backend=cnt)
    x = torch.randn(2, 3)
    compiled(x)
    bytegraph.reset()
    assert same(compiled(x), module(x))
    assert cnt.frame_count == 2


def test_two_compiles_of_one_function_have_separate_caches():
    cnt_a, cnt_b = CompileCounter(), CompileCounter()
    a = bytegraph.compile(fn, backend=cnt_a)
    b = bytegraph.compile(fn, backend=cnt_b)
    x = torch.randn(3)
    a(x)
    b(x)
    a(x)
    assert cnt_a.frame_count == 1 and cnt_b.frame_count == 1


def test_config_rejects_unknown_names():
    with pytest.raises(AttributeError, match="recompile_limt"):
        bytegraph.config.recompile_limt = 3
    with pytest.raises(AttributeError, match="has no setting .no_such"):
        with bytegraph.config.patch(no_such=True):
            pass


@pytest.mark.parametrize(
    "name, value",
    [("recompile_limit", "8"), ("recompile_limit", True), ("recompile_limit", 2.0), ("capture_scalar_outputs", 1)],
)
def test_config_rejects_wrong_types(name, value):
    before = getattr(bytegraph.config, name)
    with pytest.raises(TypeError, match=name):
        setattr(bytegraph.config, name, value)
    assert getattr(bytegraph.config, name) == before


def test_config_patch_restores_values():
    before = bytegraph.config.recompile_limit
    with bytegraph.config.patch(recompile_limit=2):
        assert bytegraph.config.recompile_limit == 2
    assert bytegraph.config.recompile_limit == before
    with pytest.raises(RuntimeError):
        with bytegraph.config.patch(recompile_limit=3):
            raise RuntimeError
    assert bytegraph.config.recompile_limit == before


class Model:
    def __init__(self):
        self.scale = 3.0

    def forward(self, x):
        return x * self.scale

    def __call__(self, x):
        return self.forward(x)


def test_compile_bound_method():
    obj = Model()
    cnt = CompileCounter()
    compiled = bytegraph.compile(obj.forward, backend=cnt)
    x = torch.randn(3)
    assert same(compiled(x), obj.forward(x))
    assert compiled.__self__ is obj
    obj.scale = 4.0
    assert same(compiled(x), obj.forward(x))
    assert cnt.frame_count == 2


def test_compile_module_forward_method():
    module = torch.nn.Linear(3, 2)
    cnt = CompileCounter()
    compiled = bytegraph.compile(module.forward, backend=cnt)
    x = torch.randn(4, 3)
    assert same(compiled(x), module(x))
    assert cnt.frame_count == 1


def test_compile_function_with_closure_and_defaults():
    offset = torch.randn(3)

    def f(x, *, scale=2.0):
        return x * scale + offset

    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3)
    assert same(compiled(x), f(x))
    assert same(compiled(x, scale=0.5), f(x, scale=0.5))


X = torch.randn(3)


@pytest.mark.parametrize(
    "args, kwargs",
    [((X, 1.0, 2.0), {}), ((X,), {"z": 2.0}), ((), {"x": X}), ((), {})],
    ids=["too-many", "unknown-keyword", "positional-only-as-keyword", "missing"],
)
def test_wrong_call_arguments_raise_eager_type_error(args, kwargs):
    def f(x, /, y=1.0):
        return x * y

    compiled = bytegraph.compile(f, backend=CompileCounter())
    compiled(torch.randn(3))  # a cache entry exists: its guard sees the bad call first
    with pytest.raises(TypeError) as eager:
        f(*args, **kwargs)
    with pytest.raises(TypeError) as actual:
        compiled(*args, **kwargs)
    assert str(actual.value) == str(eager.value)


def test_generator_and_coroutine_functions_run_natively():
    def gen(x):
        yield x + 1
        yield x + 2

    async def coro(x):
        return x + 1

    compiled = bytegraph.compile(gen, backend="eager")(torch.ones(2))
    assert type(compiled).__name__ == "generator"
    assert [t.tolist() for t in compiled] == [[2.0, 2.0], [3.0, 3.0]]
    c = bytegraph.compile(coro, backend="eager")(torch.ones(2))
    assert type(c).__name__ == "coroutine"
    c.close()


def test_bytegraph_run_behaves_like_python_on_the_script(tmp_path):
    # the script's folder is importable, sys.exit("message") prints the message, the report follows
    import subprocess
    import sys

    (tmp_path / "helper_module.py").write_text("def two():\n    return 2\n")
    script = tmp_path / "main_script.py"
    script.write_text(
        "import sys, torch\nfrom helper_module import two\n"
        "f = torch.compile(lambda x: x * two(), backend='eager')\nprint('RESULT', f(torch.ones(1)).item())\n"
        "sys.exit('fatal: done')\n"
    )
    # run from "/" with this tree on the path, so the checkout under test is the one that runs
    root = str(Path(__file__).resolve().parents[1])
    run = subprocess.run([sys.executable, "-m", "bytegraph", "run", str(script)], capture_output=True, text=True,
                         cwd="/", timeout=300, env={**os.environ, "PYTHONPATH": root})
    assert run.returncode == 1 and "RESULT 2.0" in run.stdout and "fatal: done" in run.stderr
    # the report is a diagnostic: stderr, so the script's stdout stays its own
    assert "graphs" in run.stderr.lower() and "graphs" not in run.stdout.lower()


def test_recompile_limit_warning_points_at_the_users_call():
    import warnings

    def f(x, s):
        return x + s

    compiled = bytegraph.compile(f, backend="eager", dynamic=False)
    with bytegraph.config.patch(recompile_limit=2), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for s in (0.5, 1.5, 2.5):
            compiled(torch.ones(1), s)
    [warning] = [w for w in caught if "recompile_limit" in str(w.message)]
    assert warning.filename == __file__


def test_explain_shows_guards_in_words():
    explanation = bytegraph.explain(lambda x: x * 2)(torch.ones(2, 3))
    assert explanation.guards[0] == "x: float32 tensor of shape (2, 3)"
    assert "grad mode = True" in explanation.guards[-1]
    text = "\n".join(explanation.guards)
    assert "___c" not in text and "pybind11" not in text and "torch._C" not in text


@pytest.mark.parametrize("name, value", [("recompile_limit", 0), ("max_inline_depth", -1), ("max_trace_instructions", -5)])
def test_config_rejects_out_of_range_counts(name, value):
    before = getattr(bytegraph.config, name)
    with pytest.raises(ValueError, match=name):
        setattr(bytegraph.config, name, value)
    assert getattr(bytegraph.config, name) == before


def test_explain_counts_a_break_in_a_compiled_modules_forward_once():
    class PrintsHalfway(torch.nn.Module):
        def forward(self, x):
            x = x + 1
            print("halfway")
            return x * 2

    model = PrintsHalfway()
    out = bytegraph.explain(model)(torch.ones(3))
    assert same(out.result, model(torch.ones(3)))
    assert (out.graph_count, out.graph_break_count) == (2, 1)
    assert [b.gb_type for b in out.break_reasons] == ["print"]


def test_a_dropped_compiled_function_frees_everything_it_compiled():
    # the function, its globals and closure values, its input, the wrapper and its caches (the
    # resume function's too) are freed with it; its record stays for the report (one of the
    # latest metrics.KEEP_FREED freed frames')
    namespace = {"torch": torch, "SINK": io.StringIO()}
    exec("def make(box):\n  def f(x):\n    y = x * box[0]\n    print(file=SINK)\n    return y + 1\n  return f\n",
         namespace)
    box = [torch.ones(())]
    fn = namespace.pop("make")(box)
    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt)
    x = torch.randn(3)
    assert same([compiled(x), compiled(x)], [fn(x), fn(x)])
    assert cnt.frame_count == 2
    code_id = id(fn.__code__)
    hooks = list(compiled._bytegraph_cache.hooks.values())
    assert len(hooks) == 1
    alive = [weakref.ref(o) for o in (fn, box[0], x, compiled, compiled._bytegraph_cache, *hooks)]
    del fn, box, x, compiled, namespace, hooks
    gc.collect()
    gc.collect()
    assert [r() for r in alive] == [None] * len(alive)
    assert len(cache._CACHES) == 0 and len(cache._OWNERS) == 0
    assert code_id in metrics.FRAMES
    assert sorted(len(s.graphs) for s in metrics.FRAMES.values()) == [1, 1]  # the frame and its resume function
