"""Tensor subclasses with __torch_function__: every torch operation on them
goes through the user's override as in eager (same calls, same output types,
same instance attributes), construction by each route, guards on the class;
__torch_dispatch__ subclasses break cleanly."""
import pytest
import torch
import torch.nn.functional as F
from torch.utils import _pytree as pytree

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter
from tests.helpers import check, check_scenario
from bytegraph.variables.tensors.subclass import NO_TORCH_FUNCTION


# ---- a logging subclass --------------------------------------------------------------------------

LOG: list = []


class LoggingTensor(torch.Tensor):
    """Records the name of every torch function called on it."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        LOG.append(func.__name__)
        return super().__torch_function__(func, types, args, kwargs)


def logged_ops(x, y):
    z = x + y  # Tensor.add
    w = torch.relu(z) * 2  # torch.relu, then mul
    n = F.relu(w, inplace=False)  # a Python function that dispatches itself
    return w.sum(dim=0), x.shape, x.dim(), n, 1 - x, len(x), x[0], x.T, torch.cat([y, x]), x.split(2)


def test_logging_subclass_records_the_same_calls_as_eager():
    def run(compile):  # check_scenario compares the results and the logs, each call's
        args = torch.randn(4, 3).as_subclass(LoggingTensor), torch.randn(4, 3)
        fn, logs = compile(logged_ops), []
        for _ in range(2):  # the log is replayed on every compiled call
            LOG.clear()
            logs.append((fn(*args), list(LOG)))
        return logs

    logs = check_scenario(run)
    assert logs[0][1][:6] == ["add", "relu", "mul", "relu", "sum", "__get__"]


def test_plain_tensor_input_recompiles_on_the_subclass_type_guard():
    def fn(x):
        return x * 2

    def run(compile):
        compiled, logs = compile(fn), []
        for x in (torch.ones(3).as_subclass(LoggingTensor), torch.ones(3), torch.ones(3).as_subclass(LoggingTensor)):
            LOG.clear()
            logs.append((compiled(x), list(LOG)))
        return logs

    check_scenario(run, graphs=2)
    reasons = metrics.FRAMES[id(fn.__code__)].recompile_reasons
    assert "type mismatch" in reasons[0]


def test_replacing_torch_function_on_the_class_recompiles():
    class Swappable(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs)

    def fn(x):
        return x + 1

    # not check_scenario: the class is the changed state, shared by both runs
    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt)
    x = torch.ones(2).as_subclass(Swappable)
    assert type(compiled(x)) is Swappable
    Swappable.__torch_function__ = classmethod(lambda cls, func, types, args=(), kwargs=None: "replaced")
    assert compiled(x) == fn(x) == "replaced"
    assert cnt.frame_count == 1  # the new override returns a constant: nothing left to compile


# ---- subclasses that choose their output types ---------------------------------------------------

class Plain(torch.Tensor):
    """No override: Tensor.__torch_function__ converts results to Plain."""


class Retyping(torch.Tensor):
    """Returns plain tensors from additions and Plain tensors from everything else."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
            enabled = torch._C._is_torch_function_enabled()
        if func is torch.add or func.__name__ == "add":
            return out
        if isinstance(out, torch.Tensor):
            return Plain(out) if not enabled else out
        return out


class Wrapping(torch.Tensor):
    """Returns the subclass from every torch op, without super()."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and not isinstance(out, cls):
            return out.as_subclass(cls)
        return out


@pytest.mark.parametrize(
    "fn",
    [
        lambda r: (r + 1, r * 2, torch.add(r, 1), r.sum(), r.shape),
        lambda r: (torch.sin(r), r.max(0), r.view(-1).unsqueeze(0), r.mean()),
        lambda r: (r @ r.T, torch.where(r > 0, r, -r), r[:, 1], 2 ** r, r.abs_()),
    ],
)
@pytest.mark.parametrize("cls", [Plain, Retyping, Wrapping])
def test_subclasses_that_choose_output_types_match_eager(cls, fn):
    def make():
        return torch.arange(6.0).reshape(2, 3).sub(2).as_subclass(cls)

    check(fn, make())  # check compares output types and instance attributes


def test_torch_return_types_keep_their_type_when_converted():
    def fn(p):
        return p.max(dim=1)

    out = check(fn, torch.ones(2, 3).as_subclass(Plain))
    assert type(out) is torch.return_types.max and type(out.values) is Plain


# ---- a unit-carrying subclass with its own methods -------------------------------------------------

class Quantity(torch.Tensor):
    @staticmethod
    def __new__(cls, data, unit):
        obj = torch.Tensor._make_subclass(cls, data)
        obj.unit = unit
        return obj

    def __init__(self, data, unit):
        self.checked = True

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        flat = [b for a in args for b in (a if isinstance(a, (list, tuple)) else [a])]
        units = {a.unit for a in flat if isinstance(a, Quantity)}
        out = super().__torch_function__(func, types, args, kwargs)
        if isinstance(out, Quantity):
            out.unit = units.pop() if len(units) == 1 else "mixed"
        return out

    def to_cm(self):
        if self.unit == "m":
            return Quantity(self * 100, "cm")
        return self

    @property
    def label(self):
        return f"[{self.unit}]"

    def __add__(self, other):
        if isinstance(other, Quantity) and other.unit != self.unit:
            other = other.to_cm() if self.unit == "cm" else other
        return super().__add__(other)


def quantities(q, t):
    r = q * 2 + t
    cm = q.to_cm()
    return r, r.unit, cm, cm + q, q.label, cm.label, torch.stack([q, q]).unit


def test_unit_carrying_subclass_with_methods_matches_eager():
    def make():
        return Quantity(torch.arange(3.0), "m"), torch.ones(3)

    check(quantities, make=make)


def test_attribute_writes_on_a_subclass_input_are_replayed():
    def fn(q):
        q.unit = "km"
        q.history = [q.unit]
        return q * 1

    check(fn, make=lambda: (Quantity(torch.ones(2), "m"),))  # and each side's q.__dict__


# ---- construction --------------------------------------------------------------------------------

class SuperNew(torch.Tensor):
    def __new__(cls, data, tag):
        obj = super().__new__(cls, data)
        obj.tag = tag
        return obj

    def __init__(self, data, tag):
        self.seen = tag * 2


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: Plain(t) * 2,  # default __new__: an alias of t
        lambda t: (lambda s: (s, s + 1))(SuperNew(t, "a")),  # super().__new__ in a Python __new__
        lambda t: torch.Tensor.__new__(Plain, t),
        lambda t: (t.as_subclass(Plain) + 1, t),
        lambda t: torch.Tensor._make_subclass(Plain, t) - 1,
        lambda t: Quantity(t, "s").to_cm(),
        lambda t: Quantity(t * 2, "m").to_cm() + Quantity(t, "cm"),
        lambda t: (lambda s: (s, s))(t.as_subclass(Wrapping) * 2),
    ],
)
def test_construction_routes_match_eager(fn):
    def make():
        return torch.arange(3.0, requires_grad=True)

    check(fn, make=lambda: (make(),))  # check compares types, attributes and aliasing


def test_default_constructor_aliases_and_keeps_autograd_history():
    def fn(t):
        p = Plain(t)
        return p * 3

    check(fn, torch.arange(3.0, requires_grad=True), backend="aot_eager", backward=True)  # t.grad: 3 each


@pytest.mark.parametrize("fn", [lambda: Plain([1.0, 2.0]), lambda t: Plain(t, t)])
def test_other_constructors_break_with_a_reason(fn):
    args = (torch.ones(2),) if fn.__code__.co_argcount else ()
    raises = TypeError if args else None  # Plain(t, t) is eager's TypeError
    check(fn, *args, raises=raises, graphs=0, breaks=1, gb_types=["tensor subclass construction"])  # runs natively


# ---- dispatch rules ------------------------------------------------------------------------------

class Base(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        LOG.append(("Base", cls.__name__, tuple(t.__name__ for t in types)))
        return super().__torch_function__(func, types, args, kwargs)


class Derived(Base):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        LOG.append(("Derived", cls.__name__, tuple(t.__name__ for t in types)))
        if func.__name__ == "mul":
            return NotImplemented
        return super().__torch_function__(func, types, args, kwargs)


def make_base_and_derived():
    return torch.ones(2).as_subclass(Base), torch.ones(2).as_subclass(Derived)


def test_several_subclasses_dispatch_in_eagers_order():
    def fn(b, d):
        return b + d, torch.sub(d, b)

    def run(compile):
        LOG.clear()
        return compile(fn)(*make_base_and_derived()), list(LOG)

    assert check_scenario(run)[1][0][0] == "Derived"


def test_every_override_returning_not_implemented_raises_eagers_type_error():
    def fn(b, d):
        # Derived returns NotImplemented; Base's default declines too (Base is not a subclass of Derived)
        return torch.mul(b, d)

    def run(compile):
        LOG.clear()
        try:
            compile(fn)(*make_base_and_derived())
        except TypeError as e:
            return e, list(LOG)

    _, log = check_scenario(run, graphs=0, breaks=1, gb_types=["user error"])
    assert [entry[0] for entry in log] == ["Derived", "Base"]


def test_subclass_with_disabled_torch_function_returns_plain_tensors():
    class NoDispatch(torch.Tensor):
        __torch_function__ = torch._C._disabled_torch_function_impl

        def double(self):
            return self * 2

    def fn(x):
        return x.double(), x + 1

    check(fn, torch.ones(2).as_subclass(NoDispatch))


def test_module_with_subclass_input_dispatches_functional_calls():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())

    def fn(x):
        return model(x)

    def run(compile):
        LOG.clear()
        return compile(fn)(torch.randn(2, 3).as_subclass(LoggingTensor)), list(LOG)

    assert check_scenario(run)[1] == ["linear", "relu"]


def test_gradients_flow_through_subclass_inputs():
    def fn(x, w):
        return (x * w).sum()

    for backend in ("eager", "aot_eager"):  # check compares x.grad and w.grad
        check(fn, torch.arange(3.0).as_subclass(Plain).requires_grad_(), torch.ones(3, requires_grad=True),
              backend=backend, backward=True)


def test_iterating_a_dispatching_subclass_breaks():
    def fn(x):
        return [row * 2 for row in x]

    def run(compile):
        LOG.clear()
        return compile(fn)(torch.ones(2, 2).as_subclass(LoggingTensor)), list(LOG)

    # each step of the iteration runs natively; the products are one graph
    check_scenario(run, breaks=1, gb_types=["tensor subclass operation"])


# ---- __torch_dispatch__ wrapper subclasses -------------------------------------------------------

class WrapperTensor(torch.Tensor):
    """A wrapper subclass: the data lives in ``inner`` (flattened by __tensor_flatten__)."""

    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype, device=inner.device)

    def __init__(self, inner):
        self.inner = inner

    def __tensor_flatten__(self):
        return ["inner"], None

    @staticmethod
    def __tensor_unflatten__(inner_tensors, meta, outer_size, outer_stride):
        return WrapperTensor(inner_tensors["inner"])

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        args, kwargs = pytree.tree_map_only(WrapperTensor, lambda w: w.inner, (args, kwargs or {}))
        return pytree.tree_map_only(torch.Tensor, WrapperTensor, func(*args, **kwargs))

    __torch_function__ = torch._C._disabled_torch_function_impl


def test_torch_dispatch_subclass_input_breaks_cleanly():
    def fn(w, t):
        return w * 2 + 1, t + 1

    # the input cannot be a FakeTensor: the frame runs natively
    check(fn, make=lambda: (WrapperTensor(torch.arange(3.0)), torch.ones(3)), graphs=0, breaks=1,
          gb_types=["tensor subclass with __torch_dispatch__"])


# ---- interplay with the rest of the frontend -----------------------------------------------------

def test_subclass_instances_made_in_the_trace_survive_a_graph_break():
    def fn(t):
        r = Quantity(t * 2, "m")
        r.note = "kept"
        print("graph break")
        return r, r + 1, r.label

    check(fn, torch.ones(2), graphs=2, breaks=1, gb_types=["print"])


def test_dynamic_shapes_with_subclass_inputs_do_not_run_the_override_while_tracing():
    def fn(x):
        return x * x.shape[0], x.sum(0)

    def run(compile):
        compiled, logs = compile(fn), []
        for n in (2, 3, 4):
            LOG.clear()
            logs.append((compiled(torch.ones(n, 3).as_subclass(LoggingTensor)), list(LOG)))
        return logs

    check_scenario(run, dynamic=True)


def test_numpy_of_a_subclass_dispatches_then_converts():
    def fn(x):
        return x.numpy().sum(), (x + 1).numpy()

    def run(compile):
        LOG.clear()
        return compile(fn)(torch.ones(2, 3).as_subclass(LoggingTensor)), list(LOG)

    assert check_scenario(run)[1] == ["numpy", "add", "numpy"]


class ClassLogged(torch.Tensor):
    calls: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(func.__name__)  # a class attribute reached through the cls argument
        return super().__torch_function__(func, types, args, kwargs)


def test_writes_to_class_attributes_from_torch_function_are_replayed():
    def fn(x):
        plain = x.as_subclass(torch.Tensor)  # as_subclass does not call __torch_function__
        return x + 1, plain.as_subclass(ClassLogged) * 2, type(x).calls[-1]

    def run(compile):
        ClassLogged.calls.clear()
        return compile(fn)(torch.ones(2).as_subclass(ClassLogged)), list(ClassLogged.calls)

    assert check_scenario(run)[1] == ["add", "mul"]


def test_tensor_attributes_listed_as_skipping_torch_function_do_skip_it():
    class Probe(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            raise AssertionError(f"{func} dispatched")

    p = torch.ones(2).as_subclass(Probe)
    p.as_subclass(torch.Tensor), p._use_count(), p._fix_weakref()
    p._has_symbolic_sizes_strides, p._python_dispatch
    assert {"as_subclass", "_use_count", "_fix_weakref", "_has_symbolic_sizes_strides", "_python_dispatch"} <= (
        NO_TORCH_FUNCTION
    )
    with pytest.raises(AssertionError, match="dispatched"):
        p.stride()  # not in the overridable list of torch.overrides, yet it dispatches
