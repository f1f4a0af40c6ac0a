"""The differential test harness: run a function eagerly and compiled on fresh,
equal arguments, compare everything a caller can see, and count exactly.

``check`` gives each side its own deep copy of the arguments (tensors keep
requires_grad, leaf-ness, subclass, views and version; ``make`` builds objects a
copy cannot rebuild, once per side), runs both from the same random state,
compiles with a counting backend (or counts the ``backend`` given), and asserts
that the results, the arguments as each side left them (eager's copy against
its compiled twin), aliasing and shared memory between them, raised exceptions
(type, message, chain) and the random generators' state agree, and that exactly
``graphs`` graphs were compiled and ``breaks`` graph breaks recorded::

    def test_scale_in_place():
        def f(x, out):
            out.mul_(2)
            print("a graph break")
            return x + out

        check(f, t(3), t(3), graphs=2, breaks=1, gb_types=["print"])
        check(f, calls=[(t(3), t(3)), (t(4), t(4))], graphs=4, breaks=2)  # one compiled f, two sizes
        check(f, make=lambda: (t(3), Buffer()), graphs=2, breaks=1)       # objects built per side

``check_module`` does the same for an ``nn.Module`` (each side its own copy;
parameters, buffers and, with ``backward``, gradients compared as state);
``check_scenario`` for a program that changes what a compiled function reads
between its calls. ``assert_same`` is the comparison all three use.
"""
from __future__ import annotations

import collections
import copy
import enum
import math
import random
import sys
import types
import weakref
from typing import Any, Callable, Sequence

import torch

import bytegraph
from bytegraph.backends.registry import lookup_backend
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter

Args = tuple
_ATOMS = (int, float, complex, str, bytes, bool, type(None), type(...), type(NotImplemented), range, slice,
          torch.dtype, torch.device, torch.layout, torch.memory_format, enum.Enum, types.ModuleType,
          types.BuiltinFunctionType, types.CodeType, types.MethodWrapperType, types.WrapperDescriptorType)
_IMMUTABLE = (tuple, frozenset)


def t(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A random tensor of ``shape`` (standard normal) and ``dtype``."""
    return torch.randn(*shape).to(dtype)


def beside_tensor(call: Callable[[], Any], catch: type[BaseException] | tuple = ()) -> Callable:
    """A function of a tensor ``x`` that runs the plain-Python ``call()`` beside a
    graph op: ``(x + 1, result)``, or, for an exception of a type in ``catch``,
    ``(x, its type name, its message)`` -- the shape of a test of one Python
    operation compared with eager (``check(beside_tensor(call, TypeError), t(2))``)."""
    def f(x):
        try:
            return x + 1, call()
        except catch as e:
            return x, type(e).__name__, str(e)

    return f


def fresh(args: Any) -> Any:
    """A deep copy of ``args`` that keeps sharing between its parts; tensors
    that are not graph leaves (which deepcopy refuses) become fresh non-leaf
    tensors with the same values."""
    memo: dict = {}
    seen: set = set()
    tensors: list[torch.Tensor] = []

    def walk(value: Any) -> None:
        if id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            tensors.append(value)
            if not value.is_leaf:
                memo[id(value)] = _fresh_tensor(value.detach()).requires_grad_(value.requires_grad).clone()
            elif type(value) not in (torch.Tensor, torch.nn.Parameter):
                memo[id(value)] = _fresh_tensor(value)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif hasattr(value, "__dict__") and not isinstance(value, (type, types.FunctionType, types.ModuleType)):
            walk(vars(value))

    with torch._C.DisableTorchFunctionSubclass():  # copying runs no user __torch_function__ (it may log)
        walk(args)
        copied = copy.deepcopy(args, memo)
    twins = [(memo[id(t)], t._version) for t in tensors if id(t) in memo]
    if twins:  # deepcopy writes its copies once: give them the originals' version counters
        torch._C._autograd._unsafe_set_version_counter(*zip(*twins))
    return copied


def _fresh_tensor(value: torch.Tensor) -> torch.Tensor:
    """A deep copy of a leaf tensor; of a subclass deepcopy cannot rebuild, a
    clone viewed as the subclass, with its attributes copied."""
    try:
        return copy.deepcopy(value)
    except RuntimeError:
        out = value.detach().clone().as_subclass(type(value)).requires_grad_(value.requires_grad)
        out.__dict__.update(copy.deepcopy(vars(value)))
        return out


class CountingBackend:
    """A backend that counts the graphs it is given and compiles each with
    ``backend`` (a name or callable; None: run the graph as it is)."""

    def __init__(self, backend: Any = None) -> None:
        self.inner = CompileCounter() if backend is None else lookup_backend(backend)
        self.__name__ = getattr(self.inner, "__name__", type(self.inner).__name__)
        self.frame_count = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        self.frame_count += 1
        return self.inner(gm, example_inputs)


def check(fn: Callable, *args: Any, make: Callable[[], Args] | None = None,
          calls: Sequence[Args | Callable[[], Args]] | None = None, kwargs: dict | None = None,
          graphs: int = 1, breaks: int = 0, gb_types: list[str] | None = None, fullgraph: bool = False,
          backend: Any = None, dynamic: bool | None = None, raises: type[BaseException] | None = None,
          backward: bool = False, atol: float = 1e-6, rtol: float = 1e-5, reruns: int | None = None) -> Any:
    """Run ``fn`` eagerly and compiled once per argument set and assert they agree.

    Args:
        args: the arguments of a single call (each side gets a ``fresh`` copy).
        make: instead of ``args``: a factory of the argument tuple, called once per side.
        calls: instead of either: one item per call of the same compiled function, an
            argument tuple or a factory of one.
        kwargs: keyword arguments of every call (copied like the arguments).
        graphs / breaks / gb_types: the exact number of graphs compiled, of distinct graph
            breaks recorded, and the breaks' gb_types in order (None: not checked), over all calls.
        backend: a backend name or callable to compile with (counted); None: run the graphs as traced.
        raises: the exception type eager raises; compiled must raise the same type and message.
        reruns: the exact number of calls whose graph raised and that then ran natively
            (None: 0 unless ``raises``, when it is not checked). A graph that raises where
            eager does not is a hidden fallback: right results, eager's speed.
        backward: after each call, backpropagate the sum of the tensor outputs that require
            grad on both sides (gradients are compared with the arguments).

    Returns:
        The compiled side's last result (its exception, with ``raises``).
    """
    return _differential(lambda: (fn, fn), _argument_sets(args, make, calls), kwargs or {}, graphs, breaks,
                         gb_types, fullgraph, backend, dynamic, raises, backward, atol, rtol, reruns)


def check_module(module: torch.nn.Module | Callable[[], torch.nn.Module], *args: Any, **options: Any) -> Any:
    """``check`` for a module: ``module`` (deep-copied for each side) or a factory
    of one (called once per side); the compiled side runs
    ``bytegraph.compile(its copy)``. The copies' state (parameters, buffers,
    their gradients, attributes) is compared after each call like an argument."""
    build = (lambda: fresh(module)) if isinstance(module, torch.nn.Module) else module

    def pair() -> tuple[Callable, Callable]:
        return build(), build()

    return _differential(pair, _argument_sets(args, options.pop("make", None), options.pop("calls", None)),
                         options.pop("kwargs", None) or {}, **options)


def check_scenario(run: Callable[[Callable], Any], graphs: int = 1, breaks: int = 0,
                   gb_types: list[str] | None = None, backend: Any = None, atol: float = 1e-6, rtol: float = 1e-5,
                   reruns: int | None = None, **options: Any) -> Any:
    """``check`` for programs that change what a compiled function reads between
    its calls (a module list appended to, a default replaced): ``run(compile)``
    builds everything it uses afresh, compiles with ``compile`` and returns what
    it saw. It runs once with ``compile`` the identity and once with bytegraph
    (counted; ``options`` as for ``bytegraph.compile``), from the same random
    state; the two returns must be the same. Returns the compiled run's."""
    counter = CountingBackend(backend)
    rng = _rng_state()
    expected = run(lambda fn: fn)
    _set_rng_state(rng)
    with metrics.recording() as record:
        actual = run(lambda fn: bytegraph.compile(fn, backend=counter, **options))
    assert_same(actual, expected, "scenario", atol, rtol)
    _assert_counts(counter, record, graphs, breaks, gb_types, 0 if reruns is None else reruns)
    return actual


def _argument_sets(args: tuple, make: Callable | None, calls: Sequence | None) -> list[Callable[[], Args]]:
    given = [x for x in (args or None, make, calls) if x is not None]
    assert len(given) <= 1, "give the arguments, make or calls, not several"
    if calls is None:
        calls = [make if make is not None else args]
    return [c if callable(c) else _copies_of(c) for c in calls]


def _copies_of(args: tuple) -> Callable[[], Args]:
    """A factory of fresh copies of ``args``; the first is compared with ``args``
    (a copy that is not equal to what it copied is refused: give a factory)."""
    checked = []

    def copy_once_more() -> Args:
        copied = fresh(args)
        if not checked:
            try:
                assert_same(copied, args, "copy")
            except AssertionError as e:
                raise AssertionError(f"the arguments do not deep-copy faithfully: give a factory (make=)\n{e}") from None
            checked.append(True)
        return copied

    return copy_once_more


def _differential(pair: Callable, arg_sets: list, kwargs: dict, graphs: int = 1, breaks: int = 0,
                  gb_types: list[str] | None = None, fullgraph: bool = False, backend: Any = None,
                  dynamic: bool | None = None, raises: type[BaseException] | None = None,
                  backward: bool = False, atol: float = 1e-6, rtol: float = 1e-5, reruns: int | None = None) -> Any:
    eager_fn, compiled_fn = pair()
    counter = CountingBackend(backend)
    compiled = bytegraph.compile(compiled_fn, backend=counter, fullgraph=fullgraph, dynamic=dynamic)
    actual = None
    with metrics.recording() as record:
        for n, make_args in enumerate(arg_sets):
            rng = _rng_state()
            eager_args = (make_args(), fresh(kwargs))
            expected = _outcome(eager_fn, eager_args, raises, backward)
            eager_rng = _rng_state()
            _set_rng_state(rng)  # both sides build their arguments and run from the same random state
            compiled_args = (make_args(), fresh(kwargs))
            actual = _outcome(compiled, compiled_args, raises, backward)
            where = f"call {n}" if len(arg_sets) > 1 else "call"
            if raises is not None:
                assert isinstance(expected, raises), f"{where}: eager raised {expected!r}, not {raises.__name__}"
                assert type(actual) is type(expected) and str(actual) == str(expected), (
                    f"{where}: compiled raised {actual!r}, eager {expected!r}")
            pairs: dict = {}
            assert_same(compiled_args, eager_args, f"{where}: arguments", atol, rtol, pairs)
            if compiled_fn is not eager_fn:  # a module: each side's copy
                assert_same(compiled_fn, eager_fn, f"{where}: module state", atol, rtol, pairs)
            assert_same(actual, expected, f"{where}: result", atol, rtol, pairs)
            assert_same_memory(pairs)
            assert _same_rng_state(_rng_state(), eager_rng), f"{where}: the random generators' states differ"
    _assert_counts(counter, record, graphs, breaks, gb_types, 0 if reruns is None and raises is None else reruns)
    return actual


def _assert_counts(counter: CountingBackend, record: metrics.Recorder, graphs: int, breaks: int,
                   gb_types: list[str] | None, reruns: int | None = None) -> None:
    recorded = metrics.distinct(record.breaks)
    got = f"graphs={counter.frame_count}, breaks={len(recorded)}, gb_types={[b.gb_type for b in recorded]}"
    reasons = "".join(f"\n  {b.reason}" for b in recorded)
    assert (counter.frame_count, len(recorded)) == (graphs, breaks), (
        f"expected graphs={graphs}, breaks={breaks}; got {got}{reasons}")
    assert gb_types is None or [b.gb_type for b in recorded] == gb_types, (
        f"expected gb_types={gb_types}; got {got}{reasons}")
    assert reruns is None or len(record.graph_reruns) == reruns, (
        f"expected {reruns} graph(s) raising and the frame rerun natively; got {record.graph_reruns}")


def _rng_state() -> tuple:
    np = sys.modules.get("numpy")
    return torch.get_rng_state(), random.getstate(), np.random.get_state() if np is not None else None


def _same_rng_state(a: tuple, e: tuple) -> bool:
    """The states of torch's, Python's and NumPy's generators are equal (each its own type)."""
    return (torch.equal(a[0], e[0]) and a[1] == e[1]
            and (a[2] is e[2] is None or a[2][0] == e[2][0] and (a[2][1] == e[2][1]).all() and a[2][2:] == e[2][2:]))


def _set_rng_state(state: tuple) -> None:
    torch.set_rng_state(state[0])
    random.setstate(state[1])
    if state[2] is not None:
        sys.modules["numpy"].random.set_state(state[2])


def _outcome(fn: Callable, call_args: tuple, raises: type[BaseException] | None, backward: bool) -> Any:
    args, kwargs = call_args
    if raises is None:
        result = fn(*args, **kwargs)
    else:
        try:
            fn(*args, **kwargs)
        except Exception as exc:  # compared by the caller: eager's must be a ``raises``, compiled's the same
            return exc
        raise AssertionError(f"{getattr(fn, '__name__', fn)} did not raise {raises.__name__}")
    if backward:
        flat = [v for v in torch.utils._pytree.tree_leaves(result) if isinstance(v, torch.Tensor) and v.requires_grad]
        assert flat, "backward=True but no output requires grad"
        sum(v.sum() for v in flat).backward()
    return result


def assert_same(actual: Any, expected: Any, where: str = "value", atol: float = 1e-6, rtol: float = 1e-5,
                pairs: dict | None = None) -> None:
    """Assert that ``actual`` is what ``expected`` is, deeply: the same types;
    tensors with equal dtype, shape, device, requires_grad, leaf-ness, values
    (NaNs equal) and gradients; containers with equal structure; objects with
    equal state; and the same aliasing (two places holding one object in
    ``expected`` hold one object in ``actual``, and only then)."""
    own = pairs is None
    pairs = {} if own else pairs
    with torch._C.DisableTorchFunctionSubclass():  # comparing runs no user __torch_function__ (it may log)
        _same(actual, expected, where, atol, rtol, pairs)
    if own:
        assert_same_memory(pairs)


def assert_same_memory(pairs: dict) -> None:
    """Two tensors or arrays compared share memory in eager's values exactly
    when their compiled twins do (views of an argument stay views of it)."""
    buffers = pairs.get("buffers", [])
    with torch._C.DisableTorchFunctionSubclass():
        spans = [(where, _memory(a), _memory(e)) for where, a, e in buffers]
    for n, (where, a, e) in enumerate(spans):
        for where2, a2, e2 in spans[n + 1:]:
            if _overlap(e, e2) != _overlap(a, a2):
                raise AssertionError(f"{where} and {where2} share memory in one run and not in the other")


def _memory(value: Any) -> tuple[int, int] | None:
    """The memory a tensor's storage or an array spans, as (start, end) addresses."""
    np = sys.modules.get("numpy")
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided or value.device.type == "meta" or value.numel() == 0:
            return None
        try:
            storage = value.untyped_storage()
            start = storage.data_ptr()
        except (RuntimeError, NotImplementedError):  # a wrapper subclass without storage
            return None
        return (start, start + storage.nbytes()) if start else None
    if np is not None and isinstance(value, np.ndarray) and value.size:
        return np.lib.array_utils.byte_bounds(value)
    return None


def _overlap(x: tuple[int, int] | None, y: tuple[int, int] | None) -> bool:
    return x is not None and y is not None and x[0] < y[1] and y[0] < x[1]


def _same(a: Any, e: Any, where: str, atol: float, rtol: float, pairs: dict) -> None:
    def fail(what: str) -> None:
        raise AssertionError(f"{where}: {what}\n  compiled: {_short(a)}\n  eager:    {_short(e)}")

    if not _same_type(type(a), type(e)):
        fail(f"type {type(a).__name__} != {type(e).__name__}")
    if isinstance(e, float):
        if math.isnan(a) or math.isnan(e):
            equal = math.isnan(a) and math.isnan(e)
        elif a == e:
            equal = math.copysign(1, a) == math.copysign(1, e)  # 0.0 is not -0.0
        else:
            equal = math.isclose(a, e, rel_tol=rtol, abs_tol=atol)
        if not equal:
            fail("values differ")
        return
    if isinstance(e, _ATOMS) or isinstance(e, type):
        if not (a is e or a == e or (isinstance(e, type) and _same_type(a, e))):
            fail("values differ")
        return
    if not isinstance(e, _IMMUTABLE):
        if id(e) in pairs or id(a) in pairs:
            if pairs.get(id(e)) is not a or pairs.get(id(a)) is not e:
                fail("aliasing differs (an object eager returns in two places is two objects here, or the reverse)")
            return
        pairs[id(e)], pairs[id(a)] = a, e
        if isinstance(e, torch.Tensor) or type(e).__module__ == "numpy":
            pairs.setdefault("buffers", []).append((where, a, e))
    if isinstance(e, torch.Tensor):
        _same_tensor(a, e, fail, atol, rtol)
        if e.is_leaf and (e.grad is not None or a.grad is not None):
            _same(a.grad, e.grad, f"{where}.grad", atol, rtol, pairs)
        if _tensor_attributes(e) or _tensor_attributes(a):  # a subclass's, or the user's
            _same(_tensor_attributes(a), _tensor_attributes(e), f"{where} (attributes)", atol, rtol, pairs)
        return
    np = sys.modules.get("numpy")  # NumPy values can only appear if NumPy was imported
    if np is not None and isinstance(e, (np.ndarray, np.generic)):
        if a.dtype != e.dtype or a.shape != e.shape or a.flags.writeable != e.flags.writeable:
            fail("dtype, shape or writeability differs")
        close = np.allclose if e.dtype.kind in "fc" else np.array_equal
        if not (close(a, e, equal_nan=True) if e.dtype.kind in "fc" else close(a, e)):
            fail("values differ")
        return
    if isinstance(e, collections.deque) and a.maxlen != e.maxlen:
        fail(f"maxlen {a.maxlen} != {e.maxlen}")
    if isinstance(e, (list, tuple, collections.deque)):
        if len(a) != len(e):
            fail(f"length {len(a)} != {len(e)}")
        for n, (x, y) in enumerate(zip(a, e)):
            _same(x, y, f"{where}[{n}]", atol, rtol, pairs)
    elif isinstance(e, dict):
        if len(a) != len(e):
            fail(f"{len(a)} keys != {len(e)}")
        for n, ((ka, va), (ke, ve)) in enumerate(zip(a.items(), e.items())):
            _same(ka, ke, f"{where} key {n}", atol, rtol, pairs)
            _same(va, ve, f"{where}[{ke!r}]", atol, rtol, pairs)
        _same(getattr(a, "default_factory", None), getattr(e, "default_factory", None), f"{where}.default_factory",
              atol, rtol, pairs)
    elif isinstance(e, (set, frozenset)):  # members by value, or (objects hashed by identity) by twin
        atoms_a, atoms_e = ({m for m in x if isinstance(m, _ATOMS)} for x in (a, e))
        twins = {id(m) for m in a}
        if len(a) != len(e) or atoms_a != atoms_e or any(
                id(pairs[id(m)]) not in twins for m in e if not isinstance(m, _ATOMS) and id(m) in pairs):
            fail("set members differ")
    elif isinstance(e, types.FunctionType):
        if a.__code__ is not e.__code__:
            fail("different functions")
        _same(_cells(a), _cells(e), f"{where} closure", atol, rtol, pairs)
        _same(a.__defaults__, e.__defaults__, f"{where}.__defaults__", atol, rtol, pairs)
    elif isinstance(e, types.MethodType):
        _same((a.__func__, a.__self__), (e.__func__, e.__self__), f"{where} (bound method)", atol, rtol, pairs)
    elif isinstance(e, BaseException):  # its chain too, and whether it carries a traceback
        _same((a.args, a.__cause__, a.__context__, a.__suppress_context__, a.__traceback__ is None),
              (e.args, e.__cause__, e.__context__, e.__suppress_context__, e.__traceback__ is None),
              f"{where} (args, cause, context, suppress_context, no traceback)", atol, rtol, pairs)
    elif isinstance(e, weakref.ref):
        _same(a(), e(), f"{where} (referent)", atol, rtol, pairs)
        return
    elif hasattr(e, "__next__") and not hasattr(e, "__dict__"):
        _same(_iterator_state(a), _iterator_state(e), f"{where} (iterator state)", atol, rtol, pairs)
        return
    state_e, state_a = _state(e), _state(a)
    if state_e is None and not isinstance(e, (list, tuple, collections.deque, dict, set, frozenset)):
        if not (a is e or a == e):
            fail("values differ")
    elif state_e is not None:
        _same(state_a, state_e, f"{where} (attributes)", atol, rtol, pairs)


def _same_tensor(a: torch.Tensor, e: torch.Tensor, fail: Callable, atol: float, rtol: float) -> None:
    for what in ("dtype", "shape", "device", "requires_grad", "is_leaf"):
        if getattr(a, what) != getattr(e, what):
            fail(f"{what} {getattr(a, what)} != {getattr(e, what)}")
    if _storage_bytes(e) == 0 or _storage_bytes(a) == 0:  # storage resized away: no values to read
        if _storage_bytes(a) != _storage_bytes(e):
            fail("one storage was resized to nothing, the other not")
        return
    a, e = a.detach(), e.detach()
    if e.is_floating_point() or e.is_complex():
        equal = torch.allclose(a, e, atol=atol, rtol=rtol, equal_nan=True)
    else:
        equal = torch.equal(a, e)
    if not equal:
        fail("values differ")


def _tensor_attributes(value: torch.Tensor) -> dict:
    """A tensor's Python attributes, without the ``_dynamo_*`` marks torch's
    compiled runtime puts on outputs (dynamic dims; torch.compile's too)."""
    return {k: v for k, v in vars(value).items() if not k.startswith("_dynamo_")}


def _storage_bytes(value: torch.Tensor) -> int | None:
    try:
        return value.untyped_storage().nbytes() if value.layout == torch.strided and value.numel() else None
    except (RuntimeError, NotImplementedError):  # a wrapper subclass without storage
        return None


def _same_type(a: type, e: type) -> bool:
    """The same type; or, for classes a call defines (one per run), the same definition."""
    return a is e or ("<locals>" in e.__qualname__ and (a.__qualname__, a.__module__) == (e.__qualname__, e.__module__))


def _state(value: Any) -> dict | None:
    """An object's attributes (``__dict__`` and slots); None for objects without any."""
    state = dict(vars(value)) if hasattr(value, "__dict__") and not isinstance(value, type) else None
    slots = [s for cls in type(value).__mro__ for s in getattr(cls, "__slots__", ())
             if s not in ("__dict__", "__weakref__")]
    if slots:
        state = state or {}
        state.update((s, getattr(value, s, "<unset>")) for s in (slots if not isinstance(slots, str) else [slots]))
    return state


def _cells(fn: types.FunctionType) -> tuple:
    def content(cell: types.CellType) -> Any:
        try:
            return cell.cell_contents
        except ValueError:  # an empty cell
            return "<empty>"
    return tuple(content(c) for c in fn.__closure__ or ())


def _iterator_state(it: Any) -> Any:
    """What is left to iterate, where the iterator can say without being consumed."""
    try:
        return it.__reduce__()[1:]
    except (TypeError, AttributeError):
        return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 300 else text[:300] + "..."



def break_types() -> list[str]:
    """The gb_types of every graph break recorded since the last reset, for the
    tests that compile without the harness (and say why)."""
    return [b.gb_type for stats in metrics.FRAMES.values() for b in stats.breaks]
