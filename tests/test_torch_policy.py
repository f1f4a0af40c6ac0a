"""docs/torch_policy.md: what of torch is a graph op, what is traced as Python, what is modelled.

Each kind against eager, ``fullgraph=True``, with its siblings: a torchgen binding of an ATen operator in
every ``torch._C`` namespace that has one CPU-runnable on a dense tensor; torch's Python functions
(``torch.nn.functional``, ``torch.testing`` lambdas) traced, with a module or an options object as
argument; the ``symbolic_shapes`` predicates and ``torch._check_with`` modelled;
``autograd.Function.apply`` however it is reached.
"""
import functools
import types

import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental import symbolic_shapes

import bytegraph

from bytegraph.variables.callables.torch_functions import DATA_CONSTRUCTORS, binding_namespaces, is_torch_op
from tests.helpers import check, t

# ---- graph ops: torchgen bindings in every torch._C namespace ------------------------------------------

#: one binding per torch._C namespace whose operators run on a dense CPU tensor (``_sparse`` and
#: ``_nested`` take sparse and nested tensors, which are no graph inputs)
BINDINGS = {
    "_VariableFunctions": lambda x: torch._C._VariableFunctions.sin(x) + torch._VF.cos(x),
    "_nn": lambda x: torch._C._nn.hardswish(x) + torch._C._nn.hardsigmoid(x) + torch._C._nn.elu(x),
    "_nn in place": lambda x: torch._C._nn.hardswish_(x * 1) + torch._C._nn.elu_(x * 1),
    "_fft": lambda x: torch._C._fft.fft_rfft(x).abs() + torch._C._fft.fft_rfftfreq(8).sum(),
    "_linalg": lambda x: torch._C._linalg.linalg_vector_norm(x) * x,
    "_special": lambda x: torch._C._special.special_erfcx(x) + torch._C._special.special_expit(x),
}


@pytest.mark.parametrize("name", list(BINDINGS))
def test_binding_of_every_namespace_is_one_graph(name):
    check(BINDINGS[name], t(8), fullgraph=True)


def test_every_namespace_binding_is_an_op_and_nothing_else_of_those_modules_is():
    names = {getattr(ns, "__name__", "") for ns in binding_namespaces()}
    assert {"torch._C._nn", "torch._C._fft", "torch._C._linalg", "torch._C._special", "torch._C._sparse",
            "torch._C._nested"} <= names
    for fn in (torch._C._sparse.sparse_sampled_addmm, torch._C._nested.nested_to_padded_tensor,
               torch._C._linalg._linalg_eigvals, torch.fft.fftfreq):
        assert is_torch_op(fn), fn
    for fn in (torch._C._nn._parse_to, torch._C._autograd._saved_tensors_hooks_is_enabled, F.hardswish, F.relu):
        assert not is_torch_op(fn), fn


def test_a_binding_is_an_op_exactly_when_the_dispatcher_lists_its_name():
    # (the lookup is per name; the dispatcher's full listing is the reference it must agree with)
    aten = {name[6:].split(".")[0] for name in torch._C._dispatch_get_all_op_names() if name.startswith("aten::")}
    for ns in (torch._C._VariableFunctions, *binding_namespaces()):
        for name in dir(ns):
            fn = getattr(ns, name)
            if isinstance(fn, types.BuiltinFunctionType) and fn.__self__ in (ns, None):  # bound there by torchgen
                assert is_torch_op(fn) == (name in aten) or fn in DATA_CONSTRUCTORS, (ns, name)


def test_hardswish_hardsigmoid_model_is_one_graph():
    def f(x):
        return F.hardsigmoid(x) * F.hardswish(x) + F.hardswish(x * 1, inplace=True) + F.hardsigmoid(x * 1, True)

    check(f, t(4, 5), fullgraph=True)


def test_mobilenet_style_block_is_one_graph():
    block = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Hardswish(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 4),
                                torch.nn.Hardsigmoid()).eval()
    check(block, t(2, 3, 8, 8), fullgraph=True)


# ---- torch's Python is traced, never one node -----------------------------------------------------------

def test_functional_with_a_module_argument_is_traced():
    def f(a, p, n):
        return F.triplet_margin_with_distance_loss(a, p, n, distance_function=torch.nn.PairwiseDistance())

    check(f, t(3, 4), t(3, 4), t(3, 4), fullgraph=True)


def test_functional_with_a_lambda_argument_is_traced():
    def f(a, p, n):
        return F.triplet_margin_with_distance_loss(a, p, n, distance_function=lambda x, y: (x - y).abs().sum(-1))

    check(f, t(3, 4), t(3, 4), t(3, 4), fullgraph=True)


def test_torch_testing_lambda_is_traced():
    from torch.testing._internal.common_methods_invocations import op_db

    view = next(op for op in op_db if op.name == "view")
    check(lambda x: view.op(x, (2, 6)), t(3, 4), fullgraph=True)


def test_python_function_of_torch_tensor_and_functional():
    def f(x):
        return torch.norm(x), torch.einsum("ij,jk->ik", x, x.T), torch.split(x, 2), F.normalize(x), x.split(1)

    check(f, t(4, 4), fullgraph=True)


# ---- modelled: symbolic_shapes predicates, torch._check_with ----------------------------------------

def test_broadcast_shapes_is_one_graph_static_and_dynamic():
    def f(x, y):
        return x.expand(torch.broadcast_shapes(x.shape, y.shape)) + 1

    check(f, t(1, 4), t(3, 1), fullgraph=True)
    check(f, t(1, 4), t(3, 1), dynamic=True, fullgraph=True)


@pytest.mark.parametrize("dynamic", [False, True])
def test_shape_predicates_on_sizes(dynamic):
    def f(x):
        n = x.shape[0]
        flags = (symbolic_shapes.is_nested_int(n), symbolic_shapes.guard_size_oblivious(n == 1),
                 symbolic_shapes.statically_known_true(n >= 0), symbolic_shapes.guard_or_false(n == 5),
                 symbolic_shapes.guard_or_true(n != 5), symbolic_shapes.statically_known_false(n < 0))
        return x * sum(flags), flags

    check(f, t(5, 2), dynamic=dynamic, fullgraph=True)


def test_check_with_and_its_callers():
    def f(x, idx):
        torch._check_with(IndexError, x.shape[0] > 1, lambda: "too small")
        torch._check_index(x.dim() == 2, lambda: "not a matrix")
        torch._check_value(True, lambda: "never")
        return x + 1, torch.unravel_index(idx, (3, 4))

    check(f, t(3, 4), torch.tensor([5, 7]), fullgraph=True)


@pytest.mark.parametrize("dim", [1, 2])
def test_max_unpool_reaches_check_with(dim):
    pool = getattr(F, f"max_pool{dim}d")
    unpool = getattr(F, f"max_unpool{dim}d")

    def f(x):
        y, i = pool(x, 2, return_indices=True)
        return unpool(y, i, 2)

    check(f, t(*(1, 2, *(4,) * dim)), fullgraph=True)


def test_check_with_false_at_trace_time_raises_eagers_error():
    def f(x):
        torch._check_with(IndexError, x.shape[0] > 10, lambda: "too small")
        return x + 1

    check(f, t(3), raises=IndexError, graphs=0, breaks=1, gb_types=["unsupported runtime check"])


# ---- autograd.Function.apply however it is reached ------------------------------------------------------

class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 3  # not the true derivative: shows the Function's own backward runs


double = Double.apply  # the Mamba pattern (pscan = PScan.apply)
APPLIES = {"by": Double.apply}


class Holder:
    fn = Double.apply


HOLDER = Holder()
HOLDER.bound = Double.apply

WAYS = {
    "Cls.apply": lambda x: Double.apply(x),
    "module alias": lambda x: double(x),
    "dict value": lambda x: APPLIES["by"](x),
    "class attribute": lambda x: Holder.fn(x),
    "instance attribute": lambda x: HOLDER.bound(x),
    "functools.partial": lambda x: functools.partial(Double.apply)(x),
    "partial global": functools.partial(Double.apply),
    "Function.apply unbound": lambda x: torch.autograd.Function.apply.__func__(Double, x),
}


@pytest.mark.parametrize("way", list(WAYS))
def test_function_apply_however_reached(way):
    fn = WAYS[way]
    check(lambda x: fn(x) + 1, t(4), fullgraph=True)
    # gradients compared with eager's: the Function's own backward (3, not the true 2) on both sides
    check(lambda y: fn(y) + 1, t(4).requires_grad_(True), fullgraph=True, backward=True, backend="aot_eager")


@pytest.mark.parametrize("way", ["Cls.apply", "module alias", "functools.partial"])
def test_function_apply_under_no_grad(way):
    fn = WAYS[way]

    def f(x):
        with torch.no_grad():
            y = fn(x)
        return y, y.requires_grad

    check(f, t(4).requires_grad_(True), fullgraph=True)


# ---- a fake run that needs a ShapeEnv is retried with one ----------------------------------------------

@pytest.mark.parametrize("sections", [torch.tensor([1, 4]), torch.tensor([[1, 5]])[0], torch.tensor([], dtype=torch.int64)])
def test_tensor_split_by_a_tensor_of_indices(sections):
    check(lambda x, i: torch.tensor_split(x, i), t(7, 3), sections, fullgraph=True)


def test_a_failing_operator_still_raises_eagers_error_after_the_retry():
    def f(x):
        return x + torch.ones(3, 4)

    # the graph holds torch.ones; the add breaks and runs natively, raising eager's error
    check(f, t(7, 3), raises=RuntimeError, graphs=1, breaks=1, gb_types=["operator error at trace time"])
