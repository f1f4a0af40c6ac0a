"""The Tensor surface: attributes, methods, in-place ops, storage, data pointers
and hooks, each compiled vs eager (values, dtypes, input mutations, grads),
with graph counts; graph breaks asserted by gb_type."""
import copy
import operator

import pytest
import torch

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter, same

from tests.helpers import break_types, check, check_module


def graph_targets(cnt, index=0):
    return [n.target for n in cnt.graphs[index].graph.nodes if n.op in ("call_function", "call_method")]


# ---- attributes ---------------------------------------------------------------------------------


def test_static_attributes_are_constants_guarded_by_the_tensor_guard():
    def f(x):
        return (x.ndim, x.dtype, x.device, x.layout, x.is_cuda, x.shape, x.requires_grad, x.is_quantized,
                x.is_sparse, x.is_nested, x.__class__, x.is_leaf, x.itemsize, x.nbytes)

    xs = (torch.randn(2), torch.randn(2), torch.ones(2, dtype=torch.int64), torch.nn.Parameter(torch.randn(2)),
          torch.randn(2, requires_grad=True) * 2)
    check(f, calls=[(x,) for x in xs], graphs=0)  # all answered at trace time
    (stats,) = metrics.FRAMES.values()
    assert len(stats.recompile_reasons) == 3  # dtype, class, then is_leaf (a non-leaf input)
    assert "is_leaf" in stats.recompile_reasons[-1]


def test_data_is_a_detached_alias_with_its_own_version_counter():
    def f(x):
        d = x.data
        d.mul_(2)
        return d, d.requires_grad, d._version, x._version

    cnt = CompileCounter()
    out = check(f, torch.ones(3, requires_grad=True), backend=cnt)  # x written through d on both sides
    assert torch._C._autograd._get_data_attr in graph_targets(cnt)
    assert out[2:] == (1, 0)


def test_version_tracks_inplace_ops_on_inputs_and_views():
    def f(x):
        before = x._version
        x.add_(1)
        y = x.view(-1)
        y.mul_(2)
        z = (x + 1).sin_()
        return before, x._version, y._version, x.detach()._version, x.data._version, z._version

    check(f, calls=[(torch.ones(2, 2),)] * 4)
    # not check: one tensor across calls, its version counter growing
    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    x = torch.ones(2, 2)
    for _ in range(3):  # the input's version grows on every call: read at call time, not baked in
        version = x._version
        assert compiled(x)[:2] == (version, version + 2)
    assert cnt.frame_count == 2  # the version is guarded, then symbolic once it changed


def test_grad_is_read_from_the_input_and_recompiles_when_it_appears():
    def f(x):
        g = x.grad
        return (x * 2 if g is None else x * g), x.grad_fn, (x * 3).detach().grad

    with_grad = torch.ones(2, requires_grad=True)
    with_grad.grad = torch.full((2,), 5.0)
    check(f, calls=[(torch.ones(2, requires_grad=True),), (with_grad,)], graphs=2)
    assert "grad" in metrics.FRAMES[next(iter(metrics.FRAMES))].recompile_reasons[0]


def test_grad_and_grad_fn_of_non_leaf_tensors_break():
    def f(x):
        y = x * 2
        return y.grad_fn, y + 1

    def g(x):
        y = x * 2
        return y.grad, y + 1

    # not check: eager's grad_fn and the compiled one are different autograd nodes (compared by name here)
    x, cnt = torch.ones(2, requires_grad=True), CompileCounter()
    out = bytegraph.compile(f, backend=cnt)(x)
    assert out[0] is not None and out[0].name() == "MulBackward0" and same(out[1], x * 2 + 1)
    assert break_types() == ["tensor grad_fn"] and cnt.frame_count == 2
    with pytest.warns(UserWarning, match="is not a leaf"):
        check(g, x, graphs=2, breaks=1, gb_types=["grad of non-leaf tensor"])


def test_retain_grad_breaks():
    def f(x):
        y = x * 2
        y.retain_grad()
        return y

    check(f, torch.ones(2, requires_grad=True), graphs=1, breaks=1, gb_types=["unsupported tensor method"])


def test_other_getset_attributes_are_graph_ops():
    def f(x, c):
        return x.T, x.mT, x.H, x.mH, x.real, c.real, c.imag, c.mH

    x, c = torch.randn(2, 3), torch.randn(2, 3, dtype=torch.complex64)
    cnt = CompileCounter()
    check(f, x, c, backend=cnt)
    assert graph_targets(cnt).count(getattr) == 8


def test_non_tensor_attributes_break():
    def f(x):
        return x + 1, x.output_nr

    check(f, torch.ones(2), graphs=1, breaks=1, gb_types=["unsupported tensor attribute"])


def test_attribute_assignment():
    def f(x, c, g):
        c.imag = x * 2
        c.real = 3.0
        x.requires_grad = False  # unchanged: a no-op
        g.grad = x + 1
        return c, x

    check(f, torch.randn(2), torch.zeros(2, dtype=torch.complex64), torch.zeros(2, requires_grad=True))  # g.grad too


def test_attribute_assignment_that_changes_autograd_breaks():
    def f(x, g):
        g.grad = torch.zeros(3)  # wrong shape: eager raises
        return x

    def h(x):
        y = x * 2
        x.requires_grad = True
        return y

    # torch.zeros before the store is a graph; the store runs natively and raises there
    check(f, torch.ones(2), torch.ones(2, requires_grad=True), raises=RuntimeError, graphs=1, breaks=1,
          gb_types=["tensor attribute store"])
    check(h, torch.ones(2), graphs=1, breaks=1, gb_types=["tensor attribute store"])  # x * 2 before the break


# ---- metadata methods ------------------------------------------------------------------------------


def test_metadata_methods_are_constants():
    def f(x):
        return (x.size(), x.size(1), x.size(dim=-1), x.stride(), x.stride(0), x.numel(), x.nelement(), x.dim(),
                x.ndimension(), x.is_floating_point(), x.is_complex(), x.is_contiguous(),
                x.is_contiguous(memory_format=torch.channels_last), x.is_inference(), x.get_device(),
                x.element_size(), x.storage_offset(), x.type(), len(x), x.is_conj(), x.is_neg())

    check(f, torch.randn(2, 3, 4, 5), graphs=0)
    check(f, torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last), graphs=0)
    with torch.inference_mode():
        x = torch.randn(2, 3, 4, 5)
    # not check: a copy of an inference tensor made outside inference mode is no inference tensor
    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    assert compiled(x) == f(x) and compiled(x)[13] is True  # is_inference(), read from the input
    assert cnt.frame_count == 0


def test_storage_offset_is_guarded_through_the_owning_input():
    def f(x):
        return x.storage_offset(), x[1:].storage_offset()

    base = torch.randn(10)
    # x[1:] is a graph op; one graph per offset (guarded: 0, 2 and 3)
    check(f, calls=[(view,) for view in (base[:4], base[2:6], base[2:6], base[3:7])], graphs=3)
    (stats,) = metrics.FRAMES.values()
    assert len(stats.recompile_reasons) == 2 and "storage_offset()" in stats.recompile_reasons[0]


def test_len_and_size_errors_match_eager():
    def f(x):
        return len(x)

    def g(x):
        return x.size(3)

    for fn, error in ((f, TypeError), (g, IndexError)):
        check(fn, torch.tensor(1.0), raises=error, graphs=0, breaks=1, gb_types=["user error"])


def test_type_with_an_argument_converts_in_the_graph():
    def f(x):
        return x.type(torch.float64), x.type(torch.IntTensor), x.type("torch.LongTensor"), x.type(torch.float32)

    cnt = CompileCounter()
    check(f, torch.randn(3) * 5, backend=cnt)
    assert graph_targets(cnt) == ["to", "to", "to"]  # the last returns x itself


def test_id_of_an_input_is_guarded():
    def f(x, y):
        return id(x), id(x) == id(y), x + 1

    # not check: the result is the arguments' id(), which differs between two copies by design
    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    a, b = torch.ones(2), torch.ones(2)
    for first, second in ((a, b), (a, a), (b, a)):
        out = compiled(first, second)
        assert out[:2] == (id(first), first is second)
    assert cnt.frame_count == 3


def test_id_of_an_intermediate_breaks():
    def f(x):
        y = x + 1
        return id(y) > 0, y

    check(f, torch.ones(2), graphs=1, breaks=1, gb_types=["id of traced value"])


# ---- indexing and membership -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "index",
    [lambda x, i: x[1], lambda x, i: x[-1, 1:3], lambda x, i: x[None, ..., ::2], lambda x, i: x[i],
     lambda x, i: x[i, None], lambda x, i: x[[0, 2]], lambda x, i: x[x.shape[0] - 2],
     lambda x, i: x[1:, x.shape[0] - 3], lambda x, i: x[x.shape[0] // 2, 1:]],
    ids=["int", "int-slice", "none-ellipsis-step", "tensor", "tensor-none", "list", "symbolic-int",
         "slice-symbolic-int", "symbolic-int-int-slice"],
)
def test_getitem(index):
    def f(x, i):
        return index(x, i)

    check(f, calls=[(torch.randn(n, 4), torch.tensor([0, 2])) for n in (4, 5)], dynamic=True)


def test_bool_mask_getitem_and_setitem_mutates():
    def f(x, m):
        x[m] = 0.0
        x[0, 1:] += 1
        return x[m]

    check(f, torch.randn(3, 3), torch.randn(3, 3) > 0, graphs=1)  # an unbacked size (the default)
    bytegraph.reset()
    with bytegraph.config.patch(capture_dynamic_output_shape_ops=False):
        check(f, torch.randn(3, 3), torch.randn(3, 3) > 0, graphs=1, breaks=1, gb_types=["data-dependent operator"])


def test_contains_is_an_equality_any_reduction():
    def f(x, y):
        return 2.0 in x, y in x, 7 in x

    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    with bytegraph.config.patch(capture_scalar_outputs=True):
        cnt = CompileCounter()
        check(f, x, torch.tensor([3.0, 4.0]), backend=cnt)
    assert {operator.eq, "any", "item"} <= set(graph_targets(cnt))
    bytegraph.reset()
    with bytegraph.config.patch(capture_scalar_outputs=False):
        check(f, x, torch.tensor([3.0, 4.0]), graphs=0, breaks=3, gb_types=["data-dependent tensor method"] * 3)


def test_contains_of_other_objects_raises_like_eager():
    def f(x):
        return "a" in x

    check(f, torch.ones(2), raises=RuntimeError, graphs=0, breaks=1, gb_types=["user error"])


# ---- in-place ops ------------------------------------------------------------------------------------------


def test_inplace_ops_with_scalars_are_bit_exact():
    # one graph op each: decomposing add_(y, alpha=a) into add_(y * a) changes the last bit
    # (eager fuses the multiply-add), as does addcmul_/addcdiv_ into mul/div and add_
    def f(x, a, b):
        x.add_(a, alpha=3)
        x.add_(2, alpha=0.5)
        x.mul_(0.9).add_(a, alpha=0.1)
        x.addcmul_(a, b, value=0.5)
        x.addcdiv_(a, b + 2, value=-2)
        x.addcmul_(a, b)
        return x

    cnt = CompileCounter()
    check(f, torch.randn(64), torch.randn(64), torch.randn(64), backend=cnt, atol=0, rtol=0)
    assert {"addcmul_", "addcdiv_", "add_"} <= set(graph_targets(cnt))


def test_inplace_ops_keep_eager_errors():
    def f(x, y):
        return x.add_(y, alpha=1.5)

    # the graph raises; the frame reruns natively
    check(f, torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64), raises=RuntimeError)


def test_sampling_in_place_is_in_the_graph_with_eager_randomness():
    def f(x):
        x.uniform_(-1, 1)
        x.normal_(0, 2)
        return x.bernoulli_(0.3) + x.exponential_().cauchy_()

    check(f, torch.ones(5))  # both sides from the same random state


@pytest.mark.parametrize(
    "name,args,kwargs",
    [("random_", (), {}), ("random_", (0, 10), {}), ("uniform_", (), {"from": 0.0, "to": 2.0}),
     ("resize_", (3,), {}), ("resize_as_", (torch.ones(3),), {})],
    ids=["random_", "random_range", "uniform_from", "resize_", "resize_as_"],
)
def test_inplace_ops_that_break(name, args, kwargs):
    def f(x):
        y = x * 2
        getattr(x, name)(*args, **kwargs)
        return x + y

    check(f, torch.ones(3), graphs=2, breaks=1, gb_types=["unsupported tensor method"])  # before and after the break
    (stats,) = [s for s in metrics.FRAMES.values() if s.breaks]
    assert "Hint:" in stats.breaks[0].message  # each says what to do instead


@pytest.mark.parametrize("name,args", [("unsqueeze_", (0,)), ("t_", ()), ("transpose_", (0, 1)),
                                       ("as_strided_", ((2,), (1,))), ("squeeze_", ()), ("detach_", ())])
def test_inplace_view_ops_on_inputs_break_at_the_call(name, args):
    def f(x):
        method = getattr(x, name)  # reading the method does not break
        y = x * 2
        z = y + 1
        method(*args)
        return z, x.shape

    cnt = CompileCounter()
    check(f, torch.ones(2, 2, requires_grad=(name == "detach_")), backend=cnt, breaks=1,
          gb_types=["in-place view op on graph input"])
    assert cnt.op_count == 2  # the graph before the call holds both ops


def test_set_with_storage_arguments_breaks_and_set_of_an_intermediate_is_a_graph_op():
    def f(x, y):
        z = x * 1
        z.set_(y)
        z.add_(1)
        w = y * 1
        w.set_(x.untyped_storage(), 0, (2,))
        return z, w

    # nothing to compute after the break
    check(f, torch.ones(3), torch.zeros(2), graphs=1, breaks=1, gb_types=["unsupported tensor method"])


def test_inplace_view_ops_on_intermediates_are_graph_ops():
    def f(x):
        y = x * 2
        y.t_().unsqueeze_(0)
        y.transpose_(0, 2).squeeze_()
        return y.as_strided_((2,), (2,))

    check(f, torch.arange(4.0).reshape(2, 2))


def test_mutating_a_view_of_an_input_guards_against_aliased_inputs():
    def f(x, y):
        x[0].add_(1)
        return y * 2

    c = torch.zeros(2)
    check(f, calls=[(torch.zeros(2), torch.zeros(2)), (c, c)], graphs=2)  # the second call aliases the inputs


# ---- constructors and autograd ----------------------------------------------------------------------------


def test_new_with_sizes_is_new_empty():
    def f(x):
        return x.new(2, 3).shape, x.new().shape, x.new(torch.Size([4])).dtype, x.new(x.shape[0]).shape

    cnt = CompileCounter()
    check(f, torch.randn(3, dtype=torch.float64), backend=cnt)
    assert graph_targets(cnt) == ["new_empty"] * 4


def test_new_with_data_breaks():
    def f(x):
        return x.new([1, 2]) + x

    check(f, torch.randn(2), graphs=1, breaks=1, gb_types=["unsupported tensor method"])


def test_requires_grad_():
    def keep(x):
        return x.requires_grad_(False) * 2

    def change(x):
        y = x * 2
        return y, x.requires_grad_()

    check(keep, torch.ones(2))
    check(change, torch.ones(2), graphs=1, breaks=1, gb_types=["requires_grad change"])


def test_backward_breaks_and_grads_match():
    def f(x):
        loss = (x * x).sum()
        loss.backward()
        return x.grad * 2

    # the loss before backward() and the product after it are a graph each; check compares x.grad
    check(f, torch.ones(3, requires_grad=True), graphs=2, breaks=1, gb_types=["unsupported tensor method"])


def test_item_and_tolist_follow_scalar_capture():
    def f(x):
        return x.sum().item() * 2, x.tolist()

    with bytegraph.config.patch(capture_scalar_outputs=False):
        # x.sum() before the break
        check(f, torch.arange(3.0), graphs=1, breaks=2, gb_types=["data-dependent tensor method"] * 2)
    with bytegraph.config.patch(capture_scalar_outputs=True):
        check(f, torch.arange(3.0))


# ---- storage and data pointers -----------------------------------------------------------------------------------


def test_untyped_storage_size_is_answered_and_guarded():
    def f(x):
        s = x.untyped_storage()
        return s.size(), s.nbytes(), x[1:].untyped_storage().nbytes(), (x * 2).untyped_storage().nbytes(), x + 1

    base = torch.randn(12)  # the storage size is guarded: a 4-element storage recompiles
    check(f, calls=[(base[:4],), (base[:4],), (torch.randn(4),)], graphs=2)


@pytest.mark.parametrize("make", [
    lambda: torch.randn(12).resize_(4),  # shrunk: the storage keeps its 12 elements
    lambda: torch.empty(0).set_(torch.randn(12).untyped_storage(), 0, (4,), (1,)),
    lambda: copy.deepcopy(torch.randn(12)[:4]),  # a copy of a view: the whole storage, no view
], ids=["resize_", "set_", "deepcopy_of_a_view"])
def test_untyped_storage_size_of_an_input_whose_storage_outgrows_its_elements(make):
    # the FakeTensor of such an input has a storage just as large as its elements
    def f(x):
        s = x.untyped_storage()
        return s.size(), s.nbytes(), x[1:].untyped_storage().nbytes(), x + 1

    check(f, make=lambda: (make(),))


def test_untyped_storage_resize_is_a_graph_op():
    def f(x):
        y = x * 2
        x.untyped_storage().resize_(0)
        return y, x.untyped_storage().nbytes()

    cnt = CompileCounter()
    check(f, torch.ones(3), backend=cnt)
    assert torch.ops.inductor.resize_storage_bytes_ in graph_targets(cnt)


def test_data_ptr_equality_is_traced_and_guarded():
    def f(x, y):
        return (x.data_ptr() == y.data_ptr(), x.view(-1).data_ptr() == x.data_ptr(), x[1:].data_ptr() != x.data_ptr(),
                x[1:].untyped_storage().data_ptr() == y.untyped_storage().data_ptr(),
                (x + 1).data_ptr() == x.data_ptr(), x.contiguous().data_ptr() == x.data_ptr(), x * 2)

    a, b = torch.randn(4), torch.randn(4)  # distinct storages, then shared, then a different offset
    check(f, calls=[(a, b), (a, a[:]), (a[1:], a), (a, b), (b, a)], graphs=3)


def test_data_ptr_arithmetic_breaks_and_the_rest_stays_compiled():
    def f(x):
        y = x * 2
        aligned = x.data_ptr() % 16 == 0
        return y + 1, aligned

    # before the break and the resume function
    check(f, torch.randn(4), graphs=2, breaks=1, gb_types=["data pointer arithmetic"])


# ---- hooks ------------------------------------------------------------------------------------------------------


def double(grad):
    return grad * 2


def test_register_hook_on_input_fires_in_backward():
    def f(x, w):
        handle = x.register_hook(double)
        w.register_hook(lambda g: g + 1)
        return (x * w).sum(), handle

    def run(fn):
        x, w = torch.ones(3, requires_grad=True), torch.full((3,), 2.0, requires_grad=True)
        loss, handle = fn(x, w)
        loss.backward()
        handle.remove()
        (x * w).sum().backward()  # the removed hook no longer doubles
        return x.grad, w.grad

    # not check: the result holds a hook handle, whose id differs between runs; run() gives each
    # side fresh inputs and compares the gradients
    cnt = CompileCounter()
    assert same(run(bytegraph.compile(f, backend=cnt)), run(f))
    assert cnt.frame_count == 1 and break_types() == []


def test_post_accumulate_grad_hook_and_removal_in_the_trace():
    seen = []

    def f(x):
        x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
        removed = x.register_hook(double)
        removed.remove()
        return (x * 3).sum()

    check(f, torch.ones(2, requires_grad=True), backward=True)
    assert len(seen) == 2 and same(seen[0], seen[1])  # the hook ran once on each side


def test_register_hook_with_aot_eager():
    def f(x):
        x.register_hook(double)
        return (x.sin() * 2).sum()

    check(f, torch.ones(3, requires_grad=True), backend="aot_eager", backward=True)


def test_register_hook_in_a_module_forward_compiles_once():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(2, 2)

        def forward(self, x):
            x.register_hook(double)
            return self.linear(x)

    # tensor hooks do not invalidate the module-hook guards: one graph for three calls
    check_module(Model(), calls=[(torch.ones(1, 2, requires_grad=True),)] * 3, backward=True)
    # not check: a hook added to the module between calls
    model = Model()
    compiled = bytegraph.compile(model, backend=CompileCounter())
    compiled(torch.ones(1, 2, requires_grad=True))
    model.register_forward_hook(lambda *args: None)
    compiled(torch.ones(1, 2, requires_grad=True))
    reasons = [r for stats in metrics.FRAMES.values() for r in stats.recompile_reasons]
    assert len(reasons) == 1 and reasons[0].endswith("now has hooks")  # a module hook still does


def test_hook_on_intermediate_is_in_the_graph_and_grads_match():
    def f(x):
        y = x * 2
        y.register_hook(double)
        return (y * y).sum()

    check(f, torch.ones(2, requires_grad=True), backward=True)  # tests/test_data_dependent.py: every backend


def test_hook_on_tensor_without_grad_raises_like_eager():
    def f(x):
        x.register_hook(double)
        return x

    check(f, torch.ones(2), raises=RuntimeError, graphs=0, breaks=1, gb_types=["user error"])


# ---- comparisons, identity, unpacking, generic methods --------------------------------------------------------------


def test_comparisons_with_tensors_and_scalars():
    def f(x, y):
        return x == y, x != 1.0, x < y, x <= 0, x > y, 2 >= x

    check(f, torch.randn(4), torch.randn(4))


def test_identity_with_none_and_other_objects():
    def f(x, y, n):
        return x is None, x is not None, x is y, x is not y, x is n, (x + 1) is x, x is x.contiguous()

    a = torch.ones(2)
    for args in ((a, torch.ones(2), None), (a, a, 3)):
        check(f, *args)


def test_unpacking_along_dim_zero():
    def f(x):
        a, b = x
        (c,) = x[:1]
        return a, b * 2, c

    check(f, torch.randn(2, 3))


def test_unpacking_a_0d_tensor_raises_like_eager():
    def f(x):
        a, b = x
        return a

    check(f, torch.tensor(1.0), raises=TypeError, graphs=0, breaks=1, gb_types=["user error"])


def test_unlisted_methods_go_in_the_graph_when_they_return_tensors():
    def f(x):
        values, indices = x.max(dim=0)
        return x.addmm(x, x).clamp_(min=0), values, indices, x.chunk(2), x.__reversed__()

    cnt = CompileCounter()
    check(f, torch.randn(2, 2), backend=cnt)
    assert {"max", "addmm", "clamp_", "chunk", "__reversed__"} <= set(graph_targets(cnt))


def test_unlisted_methods_with_non_tensor_results_break_with_their_name():
    def f(x):
        return x + 1, x.__sizeof__() > 0

    check(f, torch.randn(2), graphs=1, breaks=1, gb_types=["unsupported tensor method"])
    (stats,) = [s for s in metrics.FRAMES.values() if s.breaks]
    assert "__sizeof__" in stats.breaks[0].reason
