"""Side effects and torch state are eager's: mutations reached through a function
object with no source of its own, and everything eager does before an
operation that raises at run time (appends, grad mode, default dtype,
autocast, inference mode, the random generator), on every backend."""
import pytest
import torch

from bytegraph.graph import rerun
from tests.helpers import check, check_module, check_scenario

BACKENDS = ["eager", "aot_eager"]


def make_counter_class():
    calls = []
    count = 0

    class P:
        def note(self, t):
            calls.append(1)
            return t + count

    def bump():
        nonlocal count
        count += 1

    return P, calls, bump


def test_method_of_new_object_appends_to_factory_list():
    def run(compile):
        P, calls, _ = make_counter_class()
        compiled = compile(lambda x: P().note(x))
        return [(compiled(torch.ones(2)), list(calls)) for _ in range(2)]

    # the second call meets the list the first appended to: its guard recompiles (torch.compile: 1)
    assert check_scenario(run, graphs=2)[1][1] == [1, 1]


def test_closure_value_read_by_method_of_new_object_is_guarded():
    def run(compile):
        P, _, bump = make_counter_class()
        compiled = compile(lambda x: P().note(x))
        first = compiled(torch.ones(2))
        bump()
        return first, compiled(torch.ones(2))

    check_scenario(run, graphs=2)  # the closure value is guarded: bump() recompiles


def test_default_list_of_method_of_new_object_is_mutated():
    def run(compile):
        seen = []

        class Q:
            def note(self, t, log=seen):
                log.append(t.shape[0])
                return t * 2

        return compile(lambda x: Q().note(x))(torch.ones(3)), seen

    assert check_scenario(run)[1] == [3]


LOG: list = []


def append_then_index(x, idx):
    LOG.append("before")
    y = x.index_select(0, idx)
    LOG.append("after")
    return y * 2


def outcome(fn, *args):
    """What calling ``fn`` gives (its result or exception) and the log it wrote."""
    LOG.clear()
    try:
        result = fn(*args)
    except Exception as e:  # noqa: BLE001 (what eager raises is the expectation)
        result = e
    return result, list(LOG)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("index", [1, 5])
def test_side_effects_before_a_raising_op_happen(backend, index):
    args = (torch.arange(3.0), torch.tensor([index]))
    check_scenario(lambda compile: outcome(compile(append_then_index), *args), backend=backend,
                   reruns=int(index >= 3))  # the graph raises, the frame reruns natively


def in_place_after_raise(x, idx):
    LOG.append(1)
    y = x.index_select(0, idx)
    x.add_(1)
    LOG.append(2)
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_graph_writing_an_input_after_the_raising_op(backend):
    def run(compile):
        x = torch.ones(3)
        return outcome(compile(in_place_after_raise), x, torch.tensor([7])), x

    check_scenario(run, backend=backend, reruns=1)


def in_place_before_raise(x, idx):
    LOG.append(1)
    x.add_(1)
    x[0].mul_(3)
    y = x.index_select(0, idx)
    LOG.append(2)
    return y


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("index", [1, 7])
def test_graph_writing_an_input_before_the_raising_op(backend, index):
    def run(compile):
        x = torch.ones(3)
        return outcome(compile(in_place_before_raise), x, torch.tensor([index])), x

    check_scenario(run, backend=backend, reruns=int(index >= 3))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dynamic", [False, True])
def test_graph_raising_after_writing_an_input_it_wrote_on_earlier_calls(backend, dynamic):
    # the passing calls leave copies for the next call to write into (dynamic: of another size, made anew);
    # the raising one restores the input from them before the native rerun, which writes it once
    def run(compile):
        compiled, seen = compile(in_place_before_raise), []
        for size, index in [(3, 1), (3, 2), (5, 4), (5, 9), (3, 7)]:
            x = torch.arange(float(size)) * index  # other values each call: a stale copy would show
            seen.append((outcome(compiled, x, torch.tensor([index])), x))
        return seen

    check_scenario(run, backend=backend, graphs=1 if dynamic else 2, reruns=2, dynamic=dynamic)


def write_several_then_raise(a, b, flags, count, idx):
    a.mul_(2)
    b.add_(1)
    flags.logical_not_()
    count.add_(1)
    return a.index_select(0, idx)


@pytest.mark.parametrize("backend", BACKENDS)
def test_written_inputs_of_several_dtypes_and_ranks_are_restored(backend):
    # the copies are kept in one buffer per dtype and trailing sizes: 2-d floats of two lengths share one,
    # the bool vector and the 0-d counter have their own; each raising call must restore every input
    def run(compile):
        compiled, seen = compile(write_several_then_raise), []
        for k, index in [(1, 0), (2, 1), (3, 5), (4, 1), (5, 6)]:
            inputs = (torch.arange(6.0).reshape(2, 3) * k, torch.ones(4, 3) * k, torch.arange(3) % k == 0,
                      torch.tensor(k), torch.tensor([index]))
            seen.append((outcome(compiled, *inputs), inputs))
        return seen

    check_scenario(run, backend=backend, reruns=2)


def grad_mode_with_block(x, idx):
    with torch.no_grad():
        y = x * 2
        LOG.append(torch.is_grad_enabled())
        return y.index_select(0, idx)


def grad_mode_unscoped(x, idx):
    torch.set_grad_enabled(False)
    return x.index_select(0, idx)


def default_dtype_then_raise(x, idx):
    torch.set_default_dtype(torch.float64)
    return x.index_select(0, idx) + torch.ones(1)


def state_in_with_then_user_raise(x):
    with torch.autocast("cpu"), torch.inference_mode():
        x = x + 1
        raise KeyError("raised inside")


class PassThroughMode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def function_mode_then_raise(x, idx):
    with PassThroughMode():
        y = x + 1
        return y.index_select(0, idx)


def state():
    return (torch.is_grad_enabled(), torch.get_default_dtype(), torch.is_autocast_enabled("cpu"),
            torch.is_inference_mode_enabled(), torch._C._len_torch_function_stack())


@pytest.fixture
def restore_state():
    before = state()
    yield
    torch.set_grad_enabled(before[0])
    torch.set_default_dtype(before[1])


@pytest.mark.usefixtures("restore_state")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [
    (grad_mode_with_block, (torch.ones(3, requires_grad=True), torch.tensor([4]))),
    (grad_mode_unscoped, (torch.ones(3, requires_grad=True), torch.tensor([4]))),
    (default_dtype_then_raise, (torch.ones(3), torch.tensor([4]))),
    (state_in_with_then_user_raise, (torch.ones(3),)),
    (function_mode_then_raise, (torch.ones(3), torch.tensor([4]))),
], ids=lambda v: getattr(v, "__name__", ""))
def test_torch_state_after_an_escaping_exception_is_eagers(backend, fn, args):
    before = state()

    def run(compile):  # the state each run leaves, then put back for the next
        seen = outcome(compile(fn), *args), state()
        torch.set_grad_enabled(before[0])
        torch.set_default_dtype(before[1])
        return seen

    # (torch.set_default_dtype is traced: tests/test_torch_setters.py)
    breaks = {state_in_with_then_user_raise: ["uncaught exception"],
              function_mode_then_raise: ["unsupported torch function"] * 2}.get(fn, [])
    # the graph that raises (state_in_with_then_user_raise raises in the resumed frame) reruns natively
    check_scenario(run, backend=backend, breaks=len(breaks), gb_types=breaks,
                   reruns=int(fn is not state_in_with_then_user_raise))


def random_then_raise(x, idx):
    noise = torch.rand(3)
    return (x + noise).index_select(0, idx)


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_stream_after_a_raising_graph_is_eagers(backend):
    # check compares the random generators' state after each side
    check(random_then_raise, torch.ones(3), torch.tensor([9]), backend=backend, raises=IndexError)


def dropout_then_raise(x, idx, training):
    return torch.nn.functional.dropout(x, 0.5, training).index_select(0, idx)


@pytest.mark.parametrize("training", [True, False])
def test_dropout_then_raise_leaves_eagers_random_stream(training):
    # eval dropout draws nothing (its graph skips saving the generator); training dropout draws,
    # and a graph that raised after drawing puts the generator back before the native rerun
    check(dropout_then_raise, torch.ones(3), torch.tensor([9]), training, raises=IndexError)


def test_eval_dropout_is_not_kept_as_a_graph_output():
    # dropout with training=False neither draws nor raises: nothing keeps it alive once unused
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)).eval()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    check_module(model, torch.randn(2, 4), backend=backend)
    outputs = [n for n in graphs[0].graph.nodes if n.op == "output"][0].args[0]
    assert len(outputs) == 1


def normalize_then(op):
    """Batch norm in training (its running statistics are written with no version
    counter moving), then ``op`` on integer data, which may raise."""
    def fn(x, mean, var, a, b):
        y = torch.nn.functional.batch_norm(x, mean, var, training=True)
        return y.relu().sum() + op(a, b)
    return fn


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", [
    lambda a, b: (a // b).sum(),
    lambda a, b: (a % b).sum(),
    lambda a, b: torch.fmod(a, b).sum(),
    lambda a, b: a.float().index_select(0, b).sum(),
    lambda a, b: torch.nn.functional.cross_entropy(a.float().reshape(1, -1).expand(2, -1), b[:2]),
], ids=["floordiv", "mod", "fmod", "index_select", "cross_entropy"])
def test_written_statistics_are_eagers_when_a_later_integer_op_raises(backend, op):
    # three calls that pass (the copies of the statistics are made once and written again),
    # then one whose integer data makes the last operation raise: the statistics must have been
    # updated once by it, as in eager, not twice (graph, then native rerun) or not at all
    fn = normalize_then(op)

    def run(compile):
        compiled, mean, var, seen = compile(fn), torch.zeros(3), torch.ones(3), []
        for b in ([1, 2, 1], [1, 2, 1], [2, 1, 1], [0, 9, 0]):
            x = torch.arange(12.0).reshape(4, 3) * len(seen)
            seen.append((outcome(compiled, x, mean, var, torch.arange(3), torch.tensor(b)), mean.clone(), var.clone()))
        return seen

    check_scenario(run, backend=backend, reruns=1)  # the last call's graph raises; the frame reruns natively


def test_written_statistics_are_eagers_when_the_batch_size_changes_before_a_raise():
    # the copies of one size do not fit another: a call of a new size makes new ones
    fn = normalize_then(lambda a, b: (a // b).sum())

    def run(compile):
        compiled, mean, var, seen = compile(fn), torch.zeros(3), torch.ones(3), []
        for n, b in ((4, 1), (4, 1), (6, 1), (6, 1), (8, 0)):
            x = torch.arange(3.0 * n).reshape(n, 3)
            seen.append((outcome(compiled, x, mean, var, torch.arange(3), torch.tensor([b])), mean.clone()))
        return seen

    check_scenario(run, graphs=2, reruns=1)


def test_training_step_raising_in_its_loss_leaves_eagers_running_statistics():
    # BatchNorm layers write their running statistics, then the loss raises on a target out of range
    def run(compile):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                                    torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).train()
        step = compile(lambda x, target: torch.nn.functional.cross_entropy(model(x), target))
        seen = []
        for target in ([0, 1, 2, 3], [3, 2, 1, 0], [1, 1, 1, 1], [0, 1, 7, 3]):
            out = outcome(step, torch.randn(4, 3), torch.tensor(target))
            seen.append((out, {k: v.clone() for k, v in model.state_dict().items()}))
        return seen

    check_scenario(run, reruns=1)  # the last step's graph raises in its loss


class NoCatTensor(torch.Tensor):
    """A tensor subclass whose ``torch.cat`` and ``torch.stack`` mean something else (as a DTensor's)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.cat, torch.stack):
            raise NotImplementedError("no cat for this subclass")
        return super().__torch_function__(func, types, args, kwargs or {})


def test_copies_of_written_inputs_follow_each_write():
    # what graph wrappers copy written inputs into (graph/rerun.py): plain tensors share buffers, a
    # subclass instance (a DTensor in a graph) gets its own copy; every write copies the new values
    plain = [torch.arange(4.0), torch.ones(2, 3), torch.zeros(5, 3), torch.tensor(7), torch.tensor(True)]
    tensors = (*plain, torch.arange(3.0).as_subclass(NoCatTensor))
    copies = rerun.Copies(tensors)
    assert type(copies.copies[-1]) is NoCatTensor
    for step in range(2):
        for t in tensors:
            t.add_(1) if t.dtype is not torch.bool else t.logical_not_()
        copies.write(tensors)
        for t, copy in zip(tensors, copies.copies):
            assert copy.dtype == t.dtype and torch.equal(copy.as_subclass(torch.Tensor), t.as_subclass(torch.Tensor))
