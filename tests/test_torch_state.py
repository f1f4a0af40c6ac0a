"""torch's process-wide state in traced code (docs/torch_policy.md, section 3), each kind against eager
with exact graph/break counts: grad-mode setters and managers however they are used (a plain call,
``with``, a decorator, with ``orig_func``, nested), autocast however it is made, state queries flipped
between calls (a changed state recompiles, never a stale folded value), the ``torch.backends`` flags,
saved-tensor hooks (graph breaks, as under torch.compile), pybind11 enums as constants, and
``sdpa_kernel`` around attention."""
import contextlib
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from tests.helpers import check, check_module, check_scenario, t


def leaf(*shape):
    return t(*shape).requires_grad_(True)


# ---- grad mode: setters and managers however used ----------------------------------------------------

@torch.set_grad_enabled(False)
def _set_false_decorated(z):
    return z * 2


@torch.no_grad()
def _no_grad_decorated(z):
    return z * 2


def _plain_c_setter(x):
    torch._C._set_grad_enabled(False)
    y = x * 2
    torch._C._set_grad_enabled(True)
    return y, y.requires_grad, torch.is_grad_enabled()


def _plain_setter(x):
    torch.set_grad_enabled(False)
    y = x * 2
    torch.set_grad_enabled(True)
    return y, y.requires_grad


def _set_grad_with(x):
    with torch.set_grad_enabled(False):
        y = x * 2
    return y, y.requires_grad, torch.is_grad_enabled()


def _decorated_in_trace(x):
    @torch.set_grad_enabled(False)
    def inner(z):
        return z * 2

    @torch.enable_grad()
    def back(z):
        return z * 3

    with torch.no_grad():
        w = back(x)
    y = inner(x)
    return y, y.requires_grad, w.requires_grad


def _orig_func_forms(x):
    a = torch.no_grad(lambda z: z * 2)(x)  # cls(f) is cls()(f)
    b = torch.enable_grad(orig_func=lambda z: z * 3)
    with torch.no_grad():
        c = b(x)
    with torch.no_grad(), torch.enable_grad(None):
        d = x * 4
    return a.requires_grad, c.requires_grad, d.requires_grad, a + c + d


def _combined(x):
    with torch.no_grad(), torch.enable_grad():
        y = x * 2
    with torch.enable_grad(), torch.no_grad():
        z = x * 3
    with torch.no_grad():
        with torch.enable_grad():
            w = x * 4
        v = x * 5
    return [(r, r.requires_grad) for r in (y, z, w, v)]


def _inference_false(x):
    with torch.inference_mode(False):
        y = x * 2
    with torch.inference_mode():
        z = x * 3
        inside = torch.is_inference_mode_enabled()
    return y, y.requires_grad, z.clone(), inside, torch.is_inference_mode_enabled()


GRAD_MODE = {
    "torch._C._set_grad_enabled": _plain_c_setter,
    "set_grad_enabled plain": _plain_setter,
    "set_grad_enabled with": _set_grad_with,
    "set_grad_enabled decorator": lambda x: (_set_false_decorated(x), _set_false_decorated(x).requires_grad),
    "no_grad decorator": lambda x: (_no_grad_decorated(x), _no_grad_decorated(x).requires_grad),
    "decorated in the trace": _decorated_in_trace,
    "orig_func forms": _orig_func_forms,
    "nested and combined": _combined,
    "inference_mode(False)": _inference_false,
}


@pytest.mark.parametrize("way", list(GRAD_MODE))
def test_grad_mode_however_switched_is_one_graph(way):
    check(GRAD_MODE[way], leaf(3), fullgraph=True)


@pytest.mark.parametrize("way", ["torch._C._set_grad_enabled", "set_grad_enabled plain", "decorated in the trace"])
def test_grad_mode_switch_under_either_entry_mode(way):
    def run(compile):
        fn = compile(GRAD_MODE[way])
        with torch.no_grad():
            first = fn(leaf(3))
        return first, fn(leaf(3))

    check_scenario(run, graphs=2)  # entry grad mode is guarded


def test_set_grad_enabled_by_a_bool_argument():
    def f(x, b):
        prev = torch.is_grad_enabled()
        torch._C._set_grad_enabled(b)
        y = x * 2
        torch.set_grad_enabled(prev)
        return y, y.requires_grad

    check(f, calls=[(leaf(3), False), (leaf(3), True), (leaf(3), False)], graphs=2)


def test_c_setter_of_a_non_bool_breaks_and_raises_eagers_error():
    def f(x):
        torch._C._set_grad_enabled(1)
        return x * 2

    check(f, leaf(3), raises=TypeError, graphs=0, breaks=1, gb_types=["unsupported torch function"])


def test_no_grad_with_orig_func_none_raises_eagers_error():
    def f(x):
        with torch.no_grad(None):
            return x * 2

    check(f, leaf(3), raises=TypeError, graphs=0, breaks=1, gb_types=["unsupported context manager"])


def test_decorating_a_generator_function_runs_natively():
    # torch runs each step of a decorated generator under the mode: not a call under it
    def f(x):
        @torch.no_grad()
        def gen(z):
            yield z * 2
            yield z * 3

        return [(y, y.requires_grad) for y in gen(x)]

    # then torch's generator wrapper is traced natively-resumed: it reads StopIteration.value and is live after
    check(f, leaf(3), graphs=0, breaks=3,
          gb_types=["unsupported context manager", "unsupported attribute", "cannot reconstruct"])


# ---- autocast however made -----------------------------------------------------------------------------

@torch.autocast("cpu", dtype=torch.bfloat16)
def _autocast_decorated(z):
    return z @ z


def _autocast_decorated_in_trace(x):
    @torch.autocast("cpu", dtype=torch.bfloat16)
    def inner(z):
        return z @ z, torch.is_autocast_enabled("cpu")

    y, on = inner(x)
    return y, on, torch.is_autocast_enabled("cpu")


def _autocast_queries(x):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=True):
        y = x @ x
        inside = (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"), torch.is_autocast_cpu_enabled(),
                  torch.get_autocast_cpu_dtype(), torch.is_autocast_enabled())
    return y, inside, torch.is_autocast_cpu_enabled()


AUTOCAST = {
    "torch.autocast with settings": _autocast_queries,
    "torch.autocast disabled": lambda x: _with(torch.autocast("cpu", dtype=torch.bfloat16, enabled=False), x),
    "torch.amp.autocast keywords": lambda x: _with(torch.amp.autocast(device_type="cpu", dtype=torch.bfloat16), x),
    "torch.cpu.amp.autocast": lambda x: _with(torch.cpu.amp.autocast(dtype=torch.bfloat16), x),
    "decorator": lambda x: _autocast_decorated(x),
    "decorator in the trace": _autocast_decorated_in_trace,
}


def _with(ctx, x):
    with ctx:
        return x @ x, torch.get_autocast_dtype("cpu"), torch.is_autocast_enabled("cpu")


@pytest.mark.parametrize("way", list(AUTOCAST))
def test_autocast_however_made_is_one_graph(way):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.cpu.amp.autocast's deprecation, on both sides
        check(AUTOCAST[way], t(4, 4), fullgraph=True)


def test_autocast_queries_inside_a_traced_autocast_compile_once():
    # guarded on the state the frame is called in, not the one the trace switched to
    check(_autocast_queries, calls=[(t(4, 4),), (t(4, 4),), (t(4, 4),)], graphs=1)


def test_deprecated_autocast_warns_as_eager_does():
    def run(compile):
        fn = compile(lambda x: _with(torch.cpu.amp.autocast(dtype=torch.bfloat16), x))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            fn(t(4, 4))
            fn(t(4, 4))
        return [(w.category, str(w.message)) for w in seen]

    assert len(check_scenario(run, graphs=1)) == 2


def test_autocast_of_an_unknown_device_raises_eagers_error():
    def f(x):
        with torch.autocast("nodevice"):
            return x + 1

    check(f, t(2), raises=RuntimeError, graphs=0, breaks=1, gb_types=["uncaught exception"])


# ---- state queries: folded, guarded, flipped between calls ---------------------------------------------

def _flip(setter, values):
    """A scenario calling a compiled query function once per value of a state ``setter`` sets, or
    inside the context ``setter(value)`` returns (``torch.backends`` flags are set by ``flags()``
    once a test has called ``torch.backends.disable_global_flags()``)."""
    def scenario(fn):
        def run(compile):
            compiled, seen = compile(fn), []
            try:
                for value in values:
                    within = setter(value)
                    with within if hasattr(within, "__enter__") else contextlib.nullcontext():
                        seen.append(compiled(t(2)))
            finally:
                setter(values[0])
            return seen
        return run
    return scenario


_THREADS = torch.get_num_threads()
QUERIES = {
    "deterministic algorithms": (
        lambda x: (x + 1, torch.are_deterministic_algorithms_enabled(),
                   torch.is_deterministic_algorithms_warn_only_enabled()),
        _flip(lambda v: torch.use_deterministic_algorithms(v[0], warn_only=v[1]),
              [(False, False), (True, True), (True, False)]), 3),
    "anomaly mode": (
        lambda x: (x + 1, torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
        _flip(lambda v: torch.autograd.set_detect_anomaly(*v), [(False, True), (True, True), (True, False)]), 3),
    "default dtype and device": (
        lambda x: (x + 1, torch.get_default_dtype(), torch.get_default_device()),
        _flip(torch.set_default_dtype, [torch.float32, torch.float64]), 2),
    "autocast state": (
        lambda x: (x + 1, torch.is_autocast_enabled("cpu"), torch.is_autocast_cpu_enabled(),
                   torch.get_autocast_dtype("cpu"), torch.get_autocast_cpu_dtype()),
        _flip(lambda v: (torch.set_autocast_enabled("cpu", v[0]), torch.set_autocast_dtype("cpu", v[1])),
              [(False, torch.bfloat16), (True, torch.bfloat16), (True, torch.float16)]), 3),
    "thread count": (lambda x: (x + 1, torch.get_num_threads()), _flip(torch.set_num_threads, [_THREADS, 1]), 2),
    "mkldnn flag": (
        lambda x: (x + 1, torch.backends.mkldnn.enabled, torch.backends.mkldnn.is_available()),
        _flip(lambda v: torch.backends.mkldnn.flags(enabled=v), [True, False]), 2),
    "cudnn and cuBLAS flags": (
        lambda x: (x + 1, torch.backends.cudnn.enabled, torch.backends.cuda.matmul.allow_tf32,
                   torch.backends.cudnn.allow_tf32),
        _flip(lambda v: torch.backends.cudnn.flags(enabled=v), [True, False]), 2),
    "grad mode": (lambda x: (x + 1, torch.is_grad_enabled()), _flip(torch.set_grad_enabled, [True, False]), 2),
    "a module property": (  # torch.utils.deterministic's class computes it: its getter is traced
        lambda x: (x + 1, torch.utils.deterministic.fill_uninitialized_memory),
        _flip(lambda v: setattr(torch.utils.deterministic, "fill_uninitialized_memory", v), [True, False]), 2),
}


@pytest.mark.parametrize("state", list(QUERIES))
def test_state_query_follows_a_flipped_state(state):
    fn, scenario, graphs = QUERIES[state]
    check(fn, t(2), fullgraph=True)
    check_scenario(scenario(fn), graphs=graphs)


def test_inference_mode_query_follows_the_callers_mode():
    def run(compile):
        fn = compile(lambda x: (x + 1, torch.is_inference_mode_enabled(), torch.is_grad_enabled()))
        first = fn(t(2))
        with torch.inference_mode():
            inside = fn(t(2))
        return first, inside[1:], fn(t(2))

    check_scenario(run, graphs=2)


def test_backend_flag_flipped_between_calls_is_not_stale():
    # a flag torch.backends computes (a ContextProp) read from a module object: guarded, not a stored constant
    def run(compile):
        fn = compile(lambda x: x * 2 if torch.backends.mkldnn.deterministic else x)
        first = fn(t(2))
        with torch.backends.mkldnn.flags(enabled=torch.backends.mkldnn.enabled, deterministic=True):
            return first, fn(t(2))

    check_scenario(run, graphs=2)


def test_other_computed_module_attribute_breaks():
    # torch.backends.quantized.engine is computed by a descriptor of its own: not folded unguarded
    check(lambda x: (x + 1, torch.backends.quantized.engine), t(2), graphs=1, breaks=1,
          gb_types=["unsupported module attribute"])


# ---- saved-tensor hooks: torch.autograd.graph runs natively, the block's body is a graph ---------------

#: each context and its breaks: its construction, entry and exit are calls into torch.autograd.graph (skipped:
#: they change what autograd saves, which no graph holds); disable_saved_tensors_hooks is modelled
#: (tests/test_torch_setters.py)
SKIPPED = "call to skipped function"
SAVED_TENSOR_CONTEXTS = {
    "saved_tensors_hooks": (lambda: torch.autograd.graph.saved_tensors_hooks(lambda s: s * 2, lambda s: s / 2),
                            [SKIPPED] * 3),
    "save_on_cpu": (torch.autograd.graph.save_on_cpu, [SKIPPED] * 3),
}


@pytest.mark.parametrize("ctx", list(SAVED_TENSOR_CONTEXTS))
@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_saved_tensor_contexts_run_natively_around_a_graph(ctx, backend):
    make, gb_types = SAVED_TENSOR_CONTEXTS[ctx]

    def f(x):
        with make():
            y = x.sin() * x
        return y

    check(f, leaf(3), backward=True, backend=backend, graphs=1, breaks=len(gb_types), gb_types=gb_types)


# ---- pybind11 enums and torch.backends objects as constants -------------------------------------------

def test_sdp_backend_members_as_keys_and_constants():
    def f(x):
        table = {SDPBackend.MATH: 1, SDPBackend.FLASH_ATTENTION: 2}
        chosen = {SDPBackend.MATH, SDPBackend.EFFICIENT_ATTENTION}
        return (x + table[SDPBackend.MATH], SDPBackend.MATH in chosen, SDPBackend.FLASH_ATTENTION in chosen,
                SDPBackend.MATH == SDPBackend.MATH, SDPBackend.MATH != SDPBackend.CUDNN_ATTENTION,
                SDPBackend.MATH.name, int(SDPBackend.FLASH_ATTENTION.value))

    check(f, t(2), fullgraph=True)


def test_sdp_backend_global_read_is_guarded():
    check(lambda x, b: x + (1 if b == SDPBackend.MATH else 2), calls=[(t(2), SDPBackend.MATH),
                                                                    (t(2), SDPBackend.FLASH_ATTENTION)], graphs=2)


def test_memory_format_and_layout_as_keys():
    def f(x):
        formats = {torch.channels_last: 1, torch.contiguous_format: 2}
        layouts = {torch.strided: 3, torch.sparse_coo: 4}
        return x * formats[torch.contiguous_format] + layouts[x.layout], torch.preserve_format in formats

    check(f, t(2), fullgraph=True)


def _sdp_state():
    return (torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.math_sdp_enabled(),
            torch.backends.cuda.mem_efficient_sdp_enabled(), torch._C._get_sdp_priority_order())


SDPA_KERNELS = {
    "a list": ([SDPBackend.MATH], False),
    "one member": (SDPBackend.MATH, False),
    "with priority": ([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH, SDPBackend.MATH], True),
}


@pytest.mark.parametrize("kernels", list(SDPA_KERNELS))
def test_sdpa_kernel_around_attention_is_one_graph(kernels):
    backends, set_priority = SDPA_KERNELS[kernels]

    def f(q):
        with sdpa_kernel(backends, set_priority=set_priority) as ctx:
            y = F.scaled_dot_product_attention(q, q, q)
            inside = _sdp_state()
        return y, ctx, inside, _sdp_state()

    check(f, calls=[(t(1, 2, 4, 8),), (t(1, 2, 4, 8),)], fullgraph=True)


def test_sdpa_kernel_reentered_after_a_graph_break():
    def f(q):
        with sdpa_kernel([SDPBackend.MATH]):
            y = F.scaled_dot_product_attention(q, q, q)
            print("a graph break")
            z = F.scaled_dot_product_attention(y, q, q)
            inside = _sdp_state()
        return z, inside, _sdp_state()

    # the generated code enters a real sdpa_kernel again at the break; its exit (contextlib's next() on the
    # native generator) runs natively
    check(f, t(1, 2, 4, 8), graphs=2, breaks=2, gb_types=["print", "unsupported builtin call"])


def test_sdpa_kernel_flags_put_back_when_the_graph_raises():
    # index_select's bound check runs on the data: the graph raises inside the block and the frame reruns
    def f(q, index):
        with sdpa_kernel([SDPBackend.MATH]):
            return F.scaled_dot_product_attention(q, q, q).index_select(0, index)

    def run(compile):
        fn = compile(f)
        try:
            fn(t(1, 2, 4, 8), torch.tensor([3]))
        except (RuntimeError, IndexError) as e:
            return type(e).__name__, _sdp_state()
        return "no error", _sdp_state()

    check_scenario(run, graphs=1, reruns=1)


def test_sdpa_kernel_with_other_arguments_breaks_and_raises_eagers_error():
    def f(q):
        with sdpa_kernel("math"):
            return F.scaled_dot_product_attention(q, q, q)

    check(f, t(1, 2, 4, 8), raises=AssertionError, graphs=0, breaks=2,
          gb_types=["unsupported context manager", "unsupported builtin call"])


# ---- autograd.Function reached through a module-level alias inside a module (Mamba's pscan) ------------

class _Scan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_backward(a)
        return a.cumsum(-1) * x

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * 2, grad * a.cumsum(-1)


pscan = _Scan.apply


class _MambaBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        a = torch.sigmoid(self.proj(x))
        return pscan(a, x).sum(-1)


@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_mamba_pscan_alias_in_a_module_is_one_graph_with_eagers_gradients(backend):
    check_module(_MambaBlock(), leaf(2, 4), fullgraph=True, backward=True, backend=backend)
