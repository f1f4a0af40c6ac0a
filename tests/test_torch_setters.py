"""Plain setters of torch's process state in traced code (docs/torch_policy.md, section 3):
``torch.set_autocast_enabled``/``set_autocast_dtype``/``set_autocast_cache_enabled``,
``torch.set_default_dtype``, ``torch._C._set_deterministic_algorithms``,
``torch.set_float32_matmul_precision``, ``torch.use_deterministic_algorithms`` (which also stores an option of ``torch._inductor.config``)
and ``torch.utils.deterministic.fill_uninitialized_memory = ...``; and the context
``torch.autograd.graph.disable_saved_tensors_hooks``. Each against eager on both
backends: the results, the state after the call, exact graph/break counts, a graph break inside
the switched region, and a graph that raises there (the state put back before the native rerun)."""
import pytest
import torch
import torch._inductor.config
import torch.utils.deterministic

from tests.helpers import check, check_scenario, t


def _states():
    return (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"), torch.is_autocast_cache_enabled(),
            torch.get_default_dtype(), torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
            torch.utils.deterministic.fill_uninitialized_memory, torch._inductor.config.deterministic,
            torch.get_float32_matmul_precision())


def _reset():
    torch.set_autocast_enabled("cpu", False)
    torch.set_autocast_dtype("cpu", torch.bfloat16)
    torch.set_autocast_cache_enabled(True)
    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(False)
    torch.utils.deterministic.fill_uninitialized_memory = True
    torch.set_float32_matmul_precision("highest")


@pytest.fixture(autouse=True)
def reset_state():
    _reset()
    yield
    _reset()


def _autocast_on():
    torch.set_autocast_enabled("cpu", True)


def _autocast_off():
    torch.set_autocast_enabled("cpu", False)


def _half_autocast():
    torch.set_autocast_enabled("cpu", True)
    torch.set_autocast_dtype("cpu", torch.float16)


def _bfloat_autocast():
    torch.set_autocast_dtype("cpu", torch.bfloat16)
    torch.set_autocast_enabled("cpu", False)


def _cache_off():
    torch.set_autocast_cache_enabled(False)


def _cache_on():
    torch.set_autocast_cache_enabled(True)


def _double():
    torch.set_default_dtype(torch.float64)


def _single():
    torch.set_default_dtype(torch.float32)


def _deterministic():
    torch._C._set_deterministic_algorithms(True, warn_only=True)


def _nondeterministic():
    torch._C._set_deterministic_algorithms(False)


def _use_deterministic():
    torch.use_deterministic_algorithms(True)  # also sets torch._inductor.config.deterministic


def _use_nondeterministic():
    torch.use_deterministic_algorithms(False)


def _medium_matmul():
    torch.set_float32_matmul_precision("medium")


def _highest_matmul():
    torch.set_float32_matmul_precision("highest")


def _no_fill():
    torch.utils.deterministic.fill_uninitialized_memory = False


def _fill():
    torch.utils.deterministic.fill_uninitialized_memory = True


#: (switch, switch back) of each modelled setter
SETTERS = {
    "set_autocast_enabled": (_autocast_on, _autocast_off),
    "set_autocast_dtype": (_half_autocast, _bfloat_autocast),
    "set_autocast_cache_enabled": (_cache_off, _cache_on),
    "set_default_dtype": (_double, _single),
    "_set_deterministic_algorithms": (_deterministic, _nondeterministic),
    "fill_uninitialized_memory": (_no_fill, _fill),
    "use_deterministic_algorithms": (_use_deterministic, _use_nondeterministic),
    "set_float32_matmul_precision": (_medium_matmul, _highest_matmul),
}


def _ops(x):
    """Operations whose results read the switched states (autocast casts the matmul, the default
    dtype makes the factories')."""
    return x @ x, torch.ones(2), torch.arange(0.0, 1.0, 0.25), torch.full((2,), 1.5) + x.sum(), _states()


def _run(fn, *args):
    """A scenario: ``fn`` compiled by ``compile`` called from the default state; what it returned or
    raised and the state it left."""
    def run(compile):
        _reset()
        try:
            result = compile(fn)(*args)
        except (RuntimeError, IndexError) as e:
            result = type(e).__name__
        after = _states()
        _reset()
        return result, after

    return run


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("switch_back", [True, False], ids=["switched back", "left switched"])
@pytest.mark.parametrize("setter", SETTERS)
def test_setter_around_operations_is_one_graph(setter, switch_back, backend):
    on, off = SETTERS[setter]

    def f(x):
        before = _ops(x)
        on()
        inside = _ops(x)
        if switch_back:
            off()
        return before, inside, _ops(x)

    check_scenario(_run(f, t(3, 3)), graphs=1, fullgraph=True, backend=backend)


@pytest.mark.parametrize("setter", SETTERS)
def test_graph_break_inside_the_switched_region(setter):
    on, off = SETTERS[setter]

    def f(x):
        on()
        a = _ops(x)
        print("a graph break")
        b = _ops(x)
        off()
        return a, b, _ops(x)

    check_scenario(_run(f, t(3, 3)), graphs=2, breaks=1, gb_types=["print"])


_FLIPS = {
    "set_autocast_enabled": lambda: torch.set_autocast_enabled("cpu", not torch.is_autocast_enabled("cpu")),
    "set_default_dtype": lambda: torch.set_default_dtype(
        torch.float64 if torch.get_default_dtype() == torch.float32 else torch.float32),
    "_set_deterministic_algorithms": lambda: torch._C._set_deterministic_algorithms(
        not torch.are_deterministic_algorithms_enabled()),
    "use_deterministic_algorithms": lambda: torch.use_deterministic_algorithms(
        not torch.are_deterministic_algorithms_enabled()),
}


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("setter", _FLIPS)
def test_graph_raising_after_a_flip_puts_the_state_back_before_the_rerun(setter, backend):
    # index_select's bound check runs on the data: the graph raises after the switch and the frame
    # reruns natively, which flips the state it finds: the one the call started with, as in eager
    def f(x, index):
        _FLIPS[setter]()
        return (x @ x).index_select(0, index)

    check_scenario(_run(f, t(3, 3), torch.tensor([5])), graphs=1, reruns=1, backend=backend)


def test_autocast_setter_inside_a_traced_autocast_block_breaks():
    # re-entering the block after a graph break would undo the switch: the setter runs natively (and the
    # block's exit, in the resumed code, is the usual break of a context entered before that trace)
    def f(x):
        with torch.autocast("cpu"):
            a = x @ x
            torch.set_autocast_enabled("cpu", False)
            b = x @ x
        return a, b, _states()

    check_scenario(_run(f, t(3, 3)), graphs=2, breaks=2,
                   gb_types=["unsupported torch function", "unsupported context manager"])


def test_operation_reading_a_switched_default_dtype_without_a_dtype_argument_breaks():
    # true division of integers gives the default dtype; the operation takes no dtype to pin it
    def f(x, n):
        torch.set_default_dtype(torch.float64)
        y = n / 2
        torch.set_default_dtype(torch.float32)
        return x + 1, y

    check_scenario(_run(f, t(2), torch.arange(4)), graphs=2, breaks=1,
                   gb_types=["operation reading a switched default dtype"])


def test_default_dtype_of_an_integer_type_raises_eagers_error():
    def f(x):
        torch.set_default_dtype(torch.int64)
        return x + 1

    check(f, t(2), raises=TypeError, graphs=0, breaks=1, gb_types=["uncaught exception"])


def test_setter_with_arguments_of_another_signature_breaks():
    def f(x):
        torch.set_autocast_enabled(False)  # the deprecated one-argument form
        return x + 1

    check(f, t(2), graphs=1, breaks=1, gb_types=["unsupported torch function"])  # nothing before the call


# ---- disable_saved_tensors_hooks: a context switching the same kind of state ------------------------

def _hooks_disabled():
    return torch._C._autograd._saved_tensors_hooks_get_disabled_error_message()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_disable_saved_tensors_hooks_around_operations_is_one_graph(backend):
    def f(x):
        with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            y = x.sin() * x
        return y

    def run(compile):
        x = t(3).requires_grad_(True)
        y = compile(f)(x)
        y.sum().backward()
        return y, x.grad, _hooks_disabled()

    check_scenario(run, graphs=1, fullgraph=True, backend=backend)


def test_saved_tensors_hooks_inside_disable_saved_tensors_hooks_raises_eagers_error():
    def f(x):
        with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            y = x.sin()
            with torch.autograd.graph.saved_tensors_hooks(lambda s: s, lambda s: s):
                y = y * x
        return y

    def run(compile):
        try:
            result = compile(f)(t(3))
        except RuntimeError as e:
            result = str(e)
        return result, _hooks_disabled()

    # the saved_tensors_hooks class is skipped (its __init__, then its __enter__ in the resumed code, which
    # raises natively inside the block re-entered there)
    check_scenario(run, graphs=1, breaks=2, gb_types=["call to skipped function"] * 2)


def test_disable_saved_tensors_hooks_put_back_when_the_graph_raises():
    def f(x, index):
        with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            return x.sin().index_select(0, index)

    def run(compile):
        try:
            compile(f)(t(3), torch.tensor([5]))
        except IndexError as e:
            return type(e).__name__, _hooks_disabled()
        return "no error", _hooks_disabled()

    check_scenario(run, graphs=1, reruns=1)


def test_graph_break_inside_disable_saved_tensors_hooks():
    def f(x):
        with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            y = x.sin()
            print("a graph break")
            z = y * x
        return z, _hooks_disabled()

    def run(compile):
        return compile(f)(t(3)), _hooks_disabled()

    # the resumed code enters a real disable_saved_tensors_hooks again; its exit (contextlib's next() on the
    # native generator) runs natively, as sdpa_kernel's does
    check_scenario(run, graphs=2, breaks=2, gb_types=["print", "unsupported builtin call"])


def test_configuration_option_read_after_its_store_sees_it():
    def f(x):
        torch._inductor.config.deterministic = True
        seen = torch._inductor.config.deterministic
        torch._inductor.config.deterministic = False
        return x + 1, seen, torch._inductor.config.deterministic

    check_scenario(_run(f, t(2)), graphs=1, fullgraph=True)


def test_configuration_option_store_of_a_traced_value_breaks():
    def f(x):
        y = x + 1
        torch._inductor.config.deterministic = y
        return y * 2

    check_scenario(_run(f, t(2)), graphs=2, breaks=1, gb_types=["unsupported attribute store"])


def test_matmul_precision_of_an_unknown_name_warns_natively():
    def f(x):
        torch.set_float32_matmul_precision("fastest")  # eager warns and changes nothing
        return x @ x, torch.get_float32_matmul_precision()

    with pytest.warns(UserWarning, match="fastest"):
        check(f, t(2, 2), graphs=1, breaks=1, gb_types=["unsupported torch function"])


def test_disable_saved_tensors_hooks_put_back_when_a_graph_that_wrote_an_input_raises():
    # the graph writes its input before an op not known to raise on data (histc of a NaN range), so no copy
    # lets it rerun: the exception leaves the frame as eager's does, out of the with block, whose exit
    # puts the hooks back
    def f(x):
        with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            x.mul_(2)
            return torch.histc(x)

    def run(compile):
        x = torch.tensor([1.0, float("nan")])
        try:
            compile(f)(x)
        except RuntimeError as e:
            return type(e).__name__, x, _hooks_disabled()
        return "no error", x, _hooks_disabled()

    check_scenario(run, graphs=1)
