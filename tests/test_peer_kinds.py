"""Kinds of ordinary Python that torch.compile traces into one graph and that
bytegraph used to break on (or answer differently from eager), found with the
peer suite (PyTorch's own function tests, see docs/peer_suite.md). Each test
compiles with ``fullgraph=True`` and compares with the eager result."""
import collections
import collections.abc
import dataclasses
import functools
import inspect
import itertools
import math
import operator
import typing

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same
from tests.helpers import check, check_module


# --- torch functions that answer about process state ----------------------------

def test_state_queries_fold_to_constants():
    def f(x):
        flags = (
            torch._C._is_any_autocast_enabled(),
            torch.get_autocast_dtype("cpu"),
            torch._C._get_privateuse1_backend_name(),
            torch.autograd._is_checkpoint_valid(),
            torch.fx._symbolic_trace.is_fx_tracing(),
            torch.onnx.is_in_onnx_export(),
            torch.distributed.is_available(),
        )
        return x + 1, flags

    check(f, torch.ones(3), fullgraph=True)


def test_autocast_dtype_query_is_guarded():
    def f(x):
        return x.to(torch.get_autocast_dtype("cpu"))

    x = torch.ones(2)
    check(f, x, fullgraph=True)
    torch.set_autocast_dtype("cpu", torch.float16)
    try:
        assert check(f, x, fullgraph=True).dtype == torch.float16
    finally:
        torch.set_autocast_dtype("cpu", torch.bfloat16)


def test_usage_logging_is_not_a_break():
    def f(x):
        return torch.nn.Softmax(dim=-1)(x)

    check(f, torch.randn(2, 3), fullgraph=True)


def test_small_torch_helpers_of_skipped_modules_are_traced():
    @torch.jit.script_if_tracing
    def helper(x, c=1.5):
        return x * c

    def f(x):
        y = torch.jit._unwrap_optional(x)
        return helper(y) + torch.jit.annotate(torch.Tensor, y)

    check(f, torch.randn(3), fullgraph=True)


# --- C library functions that call back into user code ---------------------------

def test_reduce_traces_the_reducing_function():
    def f(a, b, c):
        return functools.reduce(lambda x, y: x * 2 + y, [a, b, c]), functools.reduce(max, [1, 5, 3], 4)

    check(f, torch.randn(3), torch.randn(3), torch.randn(3), fullgraph=True)


def test_reduce_errors_are_eagers():
    def f(x):
        try:
            functools.reduce(lambda a, b: a + b, [])
        except TypeError as e:
            return x + 1, str(e)
        return x, ""

    check(f, torch.ones(2), fullgraph=True)


def test_filterfalse_and_chain_from_iterable():
    def f(a, b):
        total = a
        for v in itertools.chain.from_iterable([[a, b], (1, 2)]):
            total = total + v
        for v in itertools.filterfalse(lambda v: v > 0, [-1.5, 0, 2.5]):
            total = total * v
        return total

    check(f, torch.randn(3), torch.randn(3), fullgraph=True)


def test_lru_cache_wrapper_metadata_is_the_wrapped_functions():
    @functools.lru_cache
    def cached(n):
        """doc of cached"""
        return n * 2

    def f(x):
        return x + cached(3), cached.__name__, cached.__doc__, cached.__qualname__, cached.__wrapped__(4)

    check(f, torch.ones(2), fullgraph=True)


def test_a_returned_input_tensor_goes_through_one_graph():
    # torch.compile hands the backend a graph for every frame returning a lone tensor
    def f(a, b):
        itertools.product([a, b], [1, 2])
        return a

    check(f, torch.randn(2), torch.randn(2), fullgraph=True)  # the result is the compiled side's own a


# --- library functions evaluated on constants, dict classes' fromkeys -------------

def test_namedtuple_class_made_in_the_trace():
    def f(a, b):
        Pair = collections.namedtuple("Pair", ["x", "y"])
        p = Pair(a, b)
        return p.x * p[1], Pair._fields

    check(f, torch.randn(2), torch.randn(2), fullgraph=True)


def test_fromkeys_of_dict_classes_keeps_the_class():
    def f(x):
        plain = dict.fromkeys(["a", "b"], x + 1)
        ordered = collections.OrderedDict.fromkeys(("c",), 2)
        dd = collections.defaultdict.fromkeys(iter(plain), 3)
        return plain, ordered, dd, type(ordered) is collections.OrderedDict, type(dd).__name__

    check(f, torch.ones(2), fullgraph=True)


def test_typing_introspection_and_recursion_limit_fold():
    import sys
    import typing

    optional, listed = int | None, typing.List[int]  # annotations, as library code reads them

    def f(x):
        return x * sys.getrecursionlimit(), typing.get_args(optional), typing.get_origin(listed)

    check(f, torch.ones(2), fullgraph=True)


# --- attributes of builtin-typed objects and functions ------------------------------

@pytest.mark.parametrize("name", ["__name__", "__qualname__", "__code__", "__defaults__", "func", "args",
                                  "keywords", "__dict__", "__call__", "__module__", "__doc__"])
def test_hasattr_on_a_partial_answers_as_the_real_object(name):
    # the partial type has __name__/__qualname__ (from its metaclass); its instances do not
    def f(t):
        p = functools.partial(lambda x, y: x * y, y=t)
        return p(t) if hasattr(p, name) else torch.zeros_like(t)

    check(f, torch.randn(3), fullgraph=True)


def test_hasattr_on_builtin_objects_made_in_the_trace():
    def f(t):
        return t + 1, [hasattr(obj, n) for obj in ([1], {1: 2}, (1,), map(abs, [1]), zip([1]))
                       for n in ("__name__", "__qualname__", "append", "keys", "count", "__next__")]

    check(f, torch.ones(2), fullgraph=True)


def test_missing_function_attribute_raises_attribute_error():
    def outer():
        def inner(x):
            return x

        return inner

    def g(x):
        return x

    def f(x):
        out = []
        for fn in (outer(), g):
            try:
                out.append(x + fn.not_there)
            except AttributeError as e:
                out.append(x - 1)
                out.append(str(e))
        return out, hasattr(outer(), "not_there"), hasattr(g, "__defaults__")

    check(f, torch.ones(2), fullgraph=True)


def test_attribute_set_on_a_function_is_read_and_guarded():
    def fn(x):
        return x * 2 if fn.tag else x - 2

    fn.tag = True  # not check: the function's own attribute changes between calls
    compiled = bytegraph.compile(fn, backend="eager", fullgraph=True)
    x = torch.ones(2)
    assert same(compiled(x), fn(x))
    fn.tag = False
    assert same(compiled(x), fn(x))


# --- consumers of lazy iterators see the container they fill ------------------------

def test_list_extend_takes_a_lazy_iterator_one_item_at_a_time():
    def f(a):
        y = [1]
        y.extend(map(lambda z: z + y[-1], range(3)))  # each step reads what the last step appended
        w = [1]
        w += (z + w[-1] for z in range(3))
        same_list = [1, 2]
        same_list.extend(same_list)  # read whole first: doubles, never loops
        return a + 1, y, w, same_list

    assert check(f, torch.ones(1), fullgraph=True)[1] == [1, 1, 2, 4]


def test_deque_extend_and_extendleft_take_a_lazy_iterator_one_item_at_a_time():
    def f(a):
        left = collections.deque([1])
        left.extendleft(map(lambda z: z + left[0], range(3)))
        right = collections.deque([1])
        right.extend(map(lambda z: z + right[-1], range(3)))
        return a + 1, left, right

    check(f, torch.ones(1), fullgraph=True)


def test_dict_update_from_a_generator_of_pairs_stores_one_pair_at_a_time():
    def f(a):
        d = {0: 1}
        d.update((k, len(d)) for k in range(1, 4))
        return a + 1, d

    assert check(f, torch.ones(1), fullgraph=True)[1] == {0: 1, 1: 1, 2: 2, 3: 3}


def test_dict_from_a_mapping_object_reads_keys_then_items():
    class Box(collections.abc.Mapping):
        def __init__(self):
            self.data = {"a": torch.ones(2) * 2}

        def __getitem__(self, k):
            return self.data[k]

        def __iter__(self):
            return iter(self.data)

        def __len__(self):
            return len(self.data)

    box = Box()

    def f(x):
        return x * dict(box)["a"]

    check(f, torch.randn(2), fullgraph=True)


def test_dict_update_with_a_bad_pair_raises_eagers_value_error():
    def f(x):
        try:
            {}.update([("a", 1), ("b",)])
        except ValueError as e:
            return x + 1, str(e)
        return x, ""

    check(f, torch.ones(1), fullgraph=True)


# --- lazy iterators live after the graph; Python iterators stepped lazily ----------

def test_map_filter_zip_enumerate_returned_are_rebuilt_at_their_position():
    def f(a):
        m = map(lambda v: v * 2, [1, 2, 3])
        first = next(m)
        flt = filter(lambda p: p[0] + p[1] < 5, zip([1, 2, 3], [1, 2, 3]))
        z = zip([1, 2, 3], map(lambda v: v + 1, [1, 2, 3]))
        e = enumerate([a, a + 1], start=3)
        next(e)
        return a + first, m, flt, z, e

    # check compares each lazy iterator by what it has left (map, filter and zip objects keep no readable
    # state: by type; they are consumed here)
    actual = check(f, torch.ones(2), fullgraph=True)
    expected = f(torch.ones(2))
    for got, want in zip(actual[1:], expected[1:]):
        assert same(list(got), list(want))


def test_python_iterator_steps_interleave_with_the_loop_body():
    class Countdown:
        def __init__(self):
            self.n = 0

        def __iter__(self):
            return self

        def __next__(self):
            if self.n >= 3:
                raise StopIteration
            self.n += 1
            return self.n

    def f(x):
        it = Countdown()
        seen = []
        for i, v in enumerate(it):
            seen.append((i, v, it.n))  # __next__ ran once per step, not all up front
            x = x + v
        return x, seen

    check(f, torch.ones(2), fullgraph=True)


# --- structural pattern matching ------------------------------------------------------

@dataclasses.dataclass
class _Point:
    x: int
    y: int


def _matcher(a, point, cfg):
    match point:
        case (0, 0):
            a = a + 100
        case (0, y):
            a = a - y
        case [x, *rest]:
            a = a + x + len(rest)
    match cfg:
        case {"lr": lr, **rest}:
            a = a * lr + len(rest)
        case {"b": b}:
            a = a / b
    match _Point(1, 2):
        case _Point(x=0):
            a = a - 1
        case _Point(1, y):
            a = a + y
    match "ab":
        case [*_]:  # a str is no sequence pattern subject
            a = a * 1000
        case str(s):
            a = a + len(s)
    return a


@pytest.mark.parametrize("point, cfg", [((5, 8), {"lr": 0.5, "z": 1}), ((0, 3), {"b": 2.0}), ([1, 2, 3], {}),
                                        ((0, 0), {"c": 1})])
def test_match_statement_takes_eagers_case(point, cfg):
    check(_matcher, torch.ones(2), point, cfg, fullgraph=True)


# --- what bytegraph.compile accepts -------------------------------------------------------

def test_compile_accepts_any_callable_as_torch_compile_does():  # the API under test: compiled directly
    @functools.lru_cache
    def cached(n):
        return n + 1

    class Doubler:
        def __call__(self, x):
            return x * 2

    assert bytegraph.compile(len)([1, 2]) == 2
    assert bytegraph.compile(cached)(3) == 4
    assert same(bytegraph.compile(torch.ops.aten.add.Tensor)(torch.ones(1), torch.ones(1)), torch.full((1,), 2.0))
    cnt = CompileCounter()
    assert same(bytegraph.compile(Doubler(), backend=cnt, fullgraph=True)(torch.ones(2)), torch.full((2,), 2.0))
    assert cnt.frame_count == 1  # an object with a Python __call__ is compiled through it
    with pytest.raises(TypeError, match="must be callable"):
        bytegraph.compile(3)


@pytest.mark.parametrize("backend", ["aot_eager_default_partitioner", "aot_eager_decomp_partition"])
def test_debug_backends_of_torch_compile_are_registered(backend):
    def f(x):
        return (x.sin() * 2).sum()

    check(f, torch.randn(3, requires_grad=True), backend=backend, backward=True)


# --- methods of Python numbers that read the value -----------------------------------------

@pytest.mark.parametrize("method, value", [("is_integer", 1.0), ("is_integer", 1.5), ("as_integer_ratio", 2.5),
                                           ("hex", 0.5), ("conjugate", 3.0), ("bit_length", 5),
                                           ("as_integer_ratio", 6), ("conjugate", 7)])
def test_number_methods_on_arguments_specialise_and_fold(method, value):
    def f(t, m):
        return t * 2 if getattr(m, method)() else t, getattr(m, method)()

    # each value is specialised: an entry per call, whose graph is t * 2 (none where the method's
    # answer is falsy and t itself is returned)
    values = (value, type(value)(0))
    check(f, calls=[(torch.ones(2), v) for v in values], fullgraph=True,
          graphs=sum(1 for v in values if getattr(v, method)()))


# --- builtins on user objects and library aliases ------------------------------------------

class _Named:
    def __str__(self):
        return "named"


class _OnlyRepr:
    def __repr__(self):
        return "only-repr"


def test_str_runs_a_python_str_or_repr():
    def f(x):
        return x + 1, str(_Named()), str(_OnlyRepr()), f"{_Named()}!"

    check(f, torch.ones(2), fullgraph=True)


def test_isinstance_with_typing_aliases_checks_their_origin():
    import typing

    def f(x):
        return x + 1, isinstance([x], typing.Sequence), isinstance({}, typing.Mapping), isinstance(
            (1,), (list, typing.MutableSequence)), isinstance([x], list | tuple)

    check(f, torch.ones(2), fullgraph=True)


def test_equal_containers_holding_the_same_tensors_compare_equal_without_tensor_eq():
    Pair = collections.namedtuple("Pair", "a b")

    def f(x, y):
        return x + 1 if Pair(x, y) == Pair(x, y) and [x] == [x] and (x, 1) != (x, 2) else x - 1

    check(f, torch.randn(2), torch.randn(2), fullgraph=True)


def test_operator_concat_and_iconcat_on_sequences():
    import operator

    def f(x):
        target = [x]
        same_list = operator.iconcat(target, [x + 1]) is target
        return operator.concat((1,), (2,)), operator.concat([x], [x * 2]), target, same_list

    check(f, torch.ones(2), fullgraph=True)


# --- a defaultdict read from outside the frame ---------------------------------------------

_counts = collections.defaultdict(list)


def test_defaultdict_read_through_a_source_calls_its_factory():
    _counts.clear()
    _counts["seen"].append(1)

    def f(x):
        _counts["new"].append(x.shape[0])  # missing: the factory runs, the new list is stored
        return x + len(_counts["seen"]), _counts.default_factory

    # not check: a module-level defaultdict both sides would write
    compiled = bytegraph.compile(f, backend="eager", fullgraph=True)
    out = compiled(torch.ones(2))
    assert same(out[0], torch.ones(2) + 1) and out[1] is list
    assert dict(_counts) == {"seen": [1], "new": [2]}


def test_iter_of_a_range_is_a_range_iterator():
    range_iterator = type(iter(range(0)))

    def f(x):
        it = iter(range(5))
        next(it)
        return (x + 1 if isinstance(it, range_iterator) else x - 1), it

    out = check(f, torch.ones(1), fullgraph=True)  # check compares the iterators by what they have left
    assert type(out[1]) is range_iterator and list(out[1]) == [1, 2, 3, 4]


def test_str_join_over_a_lazy_iterator_of_constants():
    def f(x):
        return x + 1, "-".join(map(str.upper, ["a", "b"])), "".join(c for c in "xyz" if c != "y")

    check(f, torch.ones(1), fullgraph=True)


# --- dict views and class __dict__ --------------------------------------------------------

def test_dict_keys_view_passed_in_is_read_through_its_mapping():
    d = {"a": 1, "b": 2}

    def f(x, keys):
        return (x + 1 if "c" in keys else x - 1), len(keys), list(keys)

    # not check: the view's mapping changes between calls (a copy of a keys view is a new mapping's)
    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt, fullgraph=True)
    x = torch.zeros(2)
    assert same(compiled(x, d.keys()), f(x, d.keys()))
    d["c"] = 3  # the view sees the change; the guard on the mapping recompiles
    assert same(compiled(x, d.keys()), f(x, d.keys())) and cnt.frame_count == 2


def test_keys_views_compare_and_combine_as_sets():
    def f(x):
        d = {3: x}
        keys = d.keys()
        d[4] = x + 1  # a live view
        return 3 in keys, {3: 0, 4: 1}.keys() == keys, keys & {3}, keys | {9}, keys - {3}, {4, 5} ^ keys

    check(f, torch.ones(1), fullgraph=True)


def test_class_dict_is_read_only_and_iterable():
    class A:
        x = 4

    def f(t):
        names = [k for k in A.__dict__ if not k.startswith("__")]
        try:
            A.__dict__["y"] = 1
        except TypeError as e:
            names.append(str(e))
        try:
            del A.__dict__["x"]
        except TypeError as e:
            names.append(str(e))
        return (t + 1 if "x" in A.__dict__ else t), names, type(A.__dict__.copy())

    check(f, torch.ones(1), fullgraph=True)


@pytest.mark.parametrize("kind", [set, frozenset])
def test_set_init_refills_a_set_and_leaves_a_frozenset(kind):
    def f(a):
        s = kind({"apple", "banana"})
        s.__init__({"kiwi", "apple"})
        return (a + 1 if "banana" in s else a - 1), sorted(s)

    check(f, torch.ones(1), fullgraph=True)


# --- properties whose getter is not a plain function ---------------------------------------

class _Getter:
    def __call__(self, obj):
        return obj.flag > 0


def _delta_getter(obj, *, delta):
    return obj.flag + delta > 0


class _WithProperties(torch.nn.Module):
    by_object = property(_Getter())
    by_partial = property(functools.partial(_delta_getter, delta=1))

    def __init__(self, flag):
        super().__init__()
        self.flag = flag

    def forward(self, x):
        return x + int(self.by_object) + int(self.by_partial)


@pytest.mark.parametrize("flag", [1, -5])
def test_property_getter_is_a_callable_object_or_a_partial(flag):
    check_module(_WithProperties(flag), torch.ones(2), fullgraph=True)


# --- typing.NamedTuple classes with methods, generic ones too --------------------------------

T = typing.TypeVar("T")


class _Pair(typing.NamedTuple):
    first: torch.Tensor
    second: torch.Tensor

    def total(self):
        return self.first + self.second

    @staticmethod
    def one():
        return 1

    @classmethod
    def name(cls):
        return cls.__name__


class _GenericPair(typing.NamedTuple, typing.Generic[T]):
    first: T
    second: T

    def total(self):
        return self.first + self.second


def test_namedtuple_methods_and_generic_namedtuples_stay_in_the_graph():
    def f(a, b):
        p, g = _Pair(a, b), _GenericPair(a, b)
        fields_ok = hasattr(g, "_asdict") and hasattr(g, "_fields")
        return p.total() * p.one(), p.name(), g.total(), fields_ok, p._replace(first=b).total()

    check(f, torch.randn(2), torch.randn(2), fullgraph=True)


def test_graph_break_message_shows_the_users_source_line():
    class NeedsArg:
        def __init__(self, cls):
            self.cls = cls

    def f(x):
        obj = NeedsArg()  # missing argument: eager's TypeError
        return x, obj

    with pytest.raises(bytegraph.Unsupported, match=r"obj = NeedsArg\(\)"):
        bytegraph.compile(f, backend="eager", fullgraph=True)(torch.ones(1))


# --- operator.length_hint, math.ceil/floor of user objects, torch.tensor(range) ---

class _NoHint:
    pass


class _Hinted:
    def __init__(self, hint):
        self.hint = hint

    def __length_hint__(self):
        if isinstance(self.hint, type):
            raise self.hint("from the hint")
        return self.hint


@pytest.mark.parametrize("call", [
    lambda: operator.length_hint([], 2),
    lambda: operator.length_hint([1, 2], 9),
    lambda: operator.length_hint(_Hinted(True)),  # a bool arrives as the int 1
    lambda: operator.length_hint(_Hinted(NotImplemented), 4),
    lambda: operator.length_hint(_Hinted(TypeError), 12),  # a TypeError from the hint gives the default
    lambda: operator.length_hint(_Hinted("abc")),
    lambda: operator.length_hint(_Hinted(-1)),
    lambda: operator.length_hint(_Hinted(2 ** 80)),
    lambda: operator.length_hint(_Hinted(LookupError)),
    lambda: operator.length_hint(_NoHint(), 7),
    lambda: operator.length_hint([], "x"),
    lambda: operator.length_hint([], default=3),
])
def test_length_hint_follows_cpython_step_by_step(call):
    def f(x):
        try:
            return ("ok", call()), x + 1
        except Exception as e:
            return ("raised", type(e).__name__, str(e)), x + 1

    check(f, torch.ones(2), fullgraph=True)


def test_length_hint_of_iterators_counts_what_is_left():
    def f(x):
        it = iter([1, 2, 3])
        next(it)
        rest = iter(range(10))
        return x + operator.length_hint(it) * 10 + type(rest).__length_hint__(rest)

    check(f, torch.ones(2), fullgraph=True)


@pytest.mark.parametrize("fn", [math.ceil, math.floor])
def test_math_rounding_of_user_objects(fn):
    class Text(str):
        pass

    class Rounded:
        def __ceil__(self):
            return "ceil"

        def __floor__(self):
            return "floor"

    text = Text("2.5")

    def f(x):
        out = [fn(Rounded())]
        for obj in (text, _NoHint()):
            try:
                out.append(fn(obj))
            except TypeError as e:
                out.append(str(e))
        return out, x - 1

    check(f, torch.ones(2), fullgraph=True)


def test_tensor_from_a_range_is_the_tensor_of_its_ints():
    def f(a):
        return torch.tensor(range(a.size(0))), torch.as_tensor(range(2, 9, 3), dtype=torch.float32) + a.sum()

    check(f, torch.ones(5), fullgraph=True)


# --- a branch whose other side only raises is a runtime check in the graph ----------------------

def test_distribution_argument_validation_is_a_check_in_the_graph():
    def f(x, scale):
        normal = torch.distributions.Normal(x * 2, scale, validate_args=True)  # whatever the global default
        return torch.distributions.Independent(normal, 1, validate_args=True).log_prob(x)

    check(f, torch.randn(5), torch.tensor(1.5), fullgraph=True)
    calls = []

    def g(x, scale):
        calls.append(1)
        return f(x, scale)

    # an invalid scale: eager's ValueError, with its message, side effects once on each side
    check(g, torch.randn(5), torch.tensor(-1.0), raises=ValueError)
    assert calls == [1, 1]


def test_if_not_condition_raise_stays_in_one_graph():
    def f(x):
        if not (x.sum() > 0):
            raise RuntimeError(f"non-positive sum for shape {tuple(x.shape)}")
        if x.max() > 100:
            raise ValueError("too large")
        return x + 1

    check(f, torch.ones(3), fullgraph=True)
    for bad, error in ((-torch.ones(3), RuntimeError), (torch.full((3,), 200.0), ValueError)):
        check(f, bad, raises=error, fullgraph=True)  # the check in the graph raises eager's error


def test_list_indexed_by_a_tensor_built_from_a_constant():
    def f(a, b):
        items = [a, b, a + 1, b + 1]
        return items[torch.as_tensor(2)], (a, b)[torch.tensor(1)]

    check(f, torch.randn(3), torch.randn(3), fullgraph=True)


def test_list_indexed_by_a_tensor_of_data_breaks_with_eagers_value():
    def f(a, i):
        return [a, a + 1, a + 2][i] * 2

    check(f, torch.randn(3), torch.tensor(2), graphs=2, breaks=1, gb_types=["data-dependent operator"])


class _Processor:
    def __call__(self, attn, hidden, encoder_hidden=None, *, scale=1.0):
        return hidden * scale


class _Attention(torch.nn.Module):
    """Reads its processor's signature on every forward, as diffusers' Attention does."""

    def __init__(self):
        super().__init__()
        self.processor = _Processor()

    def forward(self, hidden, **kwargs):
        params = inspect.signature(self.processor.__call__).parameters
        accepted = set(params.keys())
        kwargs = {k: v for k, v in kwargs.items() if k in accepted}
        defaults = [name for name, p in params.items() if p.default is not inspect.Parameter.empty]
        return self.processor(self, hidden, **kwargs), defaults, list(params.values())[0].kind


def test_signature_parameters_of_a_method_are_read_in_the_graph():
    model = _Attention()
    check(lambda x: model(x, scale=2.0, unused=1), torch.randn(3), fullgraph=True)


def _doubled(v):
    return v * 2  # the line both products of the helper are printed under


def test_the_graph_a_backend_gets_prints_as_torch_compiles_does():
    # torch.compile's placeholders are spelt after their source (``L['x']``: parameter L_x_, node
    # l_x_) and each node carries the user's stack, which FX prints above each run of nodes made
    # under one innermost line: tests written against its printed graphs read ours the same way
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm

    def f(x, y):
        z = _doubled(x) + _doubled(y)
        return z.sum()

    x, y = torch.randn(3), torch.randn(3)
    assert same(bytegraph.compile(f, backend=backend, fullgraph=True)(x, y), f(x, y))
    (gm,) = graphs
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert [(n.target, n.name) for n in placeholders] == [("L_x_", "l_x_"), ("L_y_", "l_y_")]
    ops = [n for n in gm.graph.nodes if n.op == "call_function"]
    helper_line = _doubled.__code__.co_firstlineno + 1
    assert [n.stack_trace.strip().splitlines()[-2].strip() for n in ops[:2]] == [
        f'File "{__file__}", line {helper_line}, in _doubled'] * 2
    printed = gm.print_readable(print_output=False)
    assert printed.count(f"{__file__}:{helper_line} in _doubled") == 1  # one heading for the helper's run
    assert "l_x_ = L_x_" in printed
