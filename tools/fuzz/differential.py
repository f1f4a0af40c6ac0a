"""Run a generated program eagerly and compiled and compare what each left
behind: the record ``main`` returns (values, dtypes, shapes, ``requires_grad``,
exception types, mutated inputs and state, Python values), the aliasing among
the record's tensors (which are the same object, which share storage), an
exception escaping ``main``, and torch's grad mode and default dtype.

A difference is named by a short signature, stable while the minimiser drops
statements: ``"<record key>: <what differs>"``. :func:`verdict` sorts it into
``wrong`` (the compiled run finished and left something else) or ``crash``
(the compiled run raised where eager did not, or another exception type).
A compiled run that left what eager left but had a graph raise and its frame
run again natively, in a program whose eager run raised nowhere, is a
``rerun``: a hidden fallback, not wrong, counted apart (:func:`signature`).
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import io
import random
import sys
import types
import warnings
from typing import Any, Callable, Iterator

import torch

import bytegraph
from bytegraph.runtime import metrics
from tools.fuzz.harness import Raised

#: settings of the compiled runs: bytegraph's own bugs raise (a frame that runs
#: natively after one would hide it); backend failures follow the user policy
#: unless the campaign asks for them (``--raise-backend-errors``)
SETTINGS = {"raise_on_internal_error": True, "raise_on_backend_error": False}

#: the compile options of each backend the fuzzer knows (inductor draws random
#: numbers as eager does, so that random programs compare)
BACKEND_OPTIONS: dict[str, dict] = {"inductor": {"options": {"fallback_random": True}}}

#: tolerances per backend (inductor reorders floating-point arithmetic)
TOLERANCE = {"inductor": 1e-3}


@dataclasses.dataclass
class Outcome:
    """What one run of ``main`` left behind."""

    record: Any
    error: str | None
    torch_state: tuple
    #: the frames (qualified names) of the calls whose graph raised and that then ran natively
    reruns: tuple[str, ...] = ()


def _module(source: str) -> types.ModuleType:
    module = types.ModuleType("fuzzed_program")
    module.__file__ = "<fuzzed program>"
    sys.modules["fuzzed_program"] = module  # dataclasses and pickling look classes up by module
    exec(compile(source, "<fuzzed program>", "exec"), module.__dict__)  # the fuzzer's own test program
    return module


def compiler_for(backend: str | None) -> Callable:
    """The ``compile`` a program's ``main`` receives: the identity for eager."""
    if backend is None:
        return lambda target, **options: target  # (the options are for the compiled run)
    extra = BACKEND_OPTIONS.get(backend, {})

    def compile_for_program(target: Any, capture: bool | None = None, **options: Any) -> Any:
        compiled = bytegraph.compile(target, backend=backend, **{**extra, **options})
        if capture is None:
            return compiled

        def call(*args: Any, **kwargs: Any) -> Any:  # the capture settings while this program runs
            with bytegraph.config.patch(capture_scalar_outputs=capture, capture_dynamic_output_shape_ops=capture):
                return compiled(*args, **kwargs)

        return call

    return compile_for_program


def run_once(source: str, backend: str | None) -> Outcome:
    """Run ``main`` of program ``source``, eagerly (``backend`` None) or compiled."""
    module = _module(source)
    grad, dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    torch.manual_seed(0)
    random.seed(0)
    with metrics.recording() as recorder:
        try:
            record, error = module.main(compiler_for(backend)), None
        except Exception as e:  # noqa: BLE001 (the exception type is part of the outcome)
            record, error = None, type(e).__name__
        finally:
            state = (torch.is_grad_enabled(), torch.get_default_dtype())
            torch.set_grad_enabled(grad)
            torch.set_default_dtype(dtype)
    return Outcome(record, error, state, tuple(recorder.graph_reruns))


def raised_anywhere(outcome: Outcome) -> bool:
    """Whether ``main`` raised, or a call it recorded did (eager did not run it through)."""
    def raised(value: object) -> bool:
        if isinstance(value, Raised):
            return True
        if isinstance(value, dict):
            return any(raised(v) for v in value.values())
        if isinstance(value, (list, tuple)):
            return any(raised(v) for v in value)
        return False

    return outcome.error is not None or raised(outcome.record)


def _tensors(value: Any, out: list, seen: set) -> list:
    """The tensors in ``value``, depth first, each once per position."""
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors(v, out, seen)
    elif isinstance(value, (list, tuple, set, frozenset)) and id(value) not in seen:
        seen.add(id(value))
        for v in value:
            _tensors(v, out, seen)
    return out


def _aliasing(record: Any) -> tuple:
    """Which of the record's tensors are one object, and which share storage,
    as first-occurrence labels."""
    tensors = _tensors(record, [], set())
    ids, storages = {}, {}
    same_object, same_storage = [], []
    for t in tensors:
        same_object.append(ids.setdefault(id(t), len(ids)))
        key = t.untyped_storage().data_ptr() if t.numel() and t.layout == torch.strided and not t.is_meta else None
        same_storage.append(None if key is None else storages.setdefault(key, len(storages)))
    return tuple(same_object), tuple(same_storage)


def _same_type(a: Any, e: Any) -> bool:
    """Same type, a class of the program counting as the same in both runs
    (each run executes the program's module afresh)."""
    ta, te = type(a), type(e)
    return ta is te or (ta.__module__ == te.__module__ == "fuzzed_program" and ta.__qualname__ == te.__qualname__)


def _value_difference(a: Any, e: Any, tol: float) -> str | None:
    """What differs between actual ``a`` and expected ``e`` (None: nothing)."""
    if isinstance(e, Raised) or isinstance(a, Raised):
        if isinstance(e, Raised) and isinstance(a, Raised) and a.name == e.name:
            return None
        return (f"exception: eager {e.name if isinstance(e, Raised) else 'none'}, "
                f"compiled {a.name if isinstance(a, Raised) else 'none'}")
    if isinstance(e, torch.Tensor):
        if not isinstance(a, torch.Tensor) or not _same_type(a, e):
            return "type differs"
        if a.dtype != e.dtype:
            return "dtype differs"
        if a.shape != e.shape:
            return "shape differs"
        if a.requires_grad != e.requires_grad:
            return "requires_grad differs"
        if not torch.allclose(a.detach(), e.detach(), atol=tol, rtol=tol, equal_nan=True):
            return "values differ"
        return None
    if not _same_type(a, e):
        return "type differs"
    if isinstance(e, types.SimpleNamespace) or type(e).__module__ == "fuzzed_program" and hasattr(e, "__dict__"):
        d = _value_difference(vars(a), vars(e), tol)  # a user object: its attributes
        if d is not None or isinstance(e, types.SimpleNamespace):
            return d and f"attribute {d}"
    if isinstance(e, dict):
        if list(a) != list(e):
            return "keys differ"
        return next((d for k in e if (d := _value_difference(a[k], e[k], tol))), None)
    if isinstance(e, (list, tuple, collections.deque)):
        if len(a) != len(e):
            return "length differs"
        return next((d for x, y in zip(a, e) if (d := _value_difference(x, y, tol))), None)
    if isinstance(e, float) and isinstance(a, float):
        return None if abs(a - e) <= tol * (1 + abs(e)) or (a != a and e != e) else "values differ"
    try:
        return None if a == e else "values differ"
    except Exception:  # noqa: BLE001 (values without a usable ==: compare their reprs)
        return None if repr(a) == repr(e) else "values differ"


def difference(expected: Outcome, actual: Outcome, tol: float = 1e-4) -> str | None:
    """The signature of the first difference between two outcomes, or None."""
    if actual.error != expected.error:
        return f"main: exception: eager {expected.error or 'none'}, compiled {actual.error or 'none'}"
    if expected.error is None:
        if not isinstance(expected.record, dict) or not isinstance(actual.record, dict):
            return "main: did not return a record dict"
        for key in expected.record:
            if key not in actual.record:
                return f"{key}: missing"
            d = _value_difference(actual.record[key], expected.record[key], tol)
            if d is not None:
                return f"{key}: {d}"
        if _aliasing(actual.record) != _aliasing(expected.record):
            return "aliasing differs"
    if actual.torch_state != expected.torch_state:
        return "torch state differs"
    return None


def compare(source: str, backend: str, expected: Outcome | None = None) -> str | None:
    """None when the compiled run of ``source`` left what eager left
    (``expected``: an eager run's outcome, made here when not given); else
    what differs (see :func:`difference`)."""
    return signature(source, backend, expected)[0]


def signature(source: str, backend: str, expected: Outcome | None = None) -> tuple[str | None, tuple[str, ...]]:
    """What differs (see :func:`compare`) and the hidden reruns: the frames
    whose graph raised and reran natively in the compiled run, when eager's
    run raised nowhere (else none: a rerun is how eager's exception is
    raised after eager's side effects)."""
    if expected is None:
        expected = run_once(source, None)
    try:
        with bytegraph.config.patch(**SETTINGS):
            actual = run_once(source, backend)
    finally:
        bytegraph.reset()
    return (difference(expected, actual, TOLERANCE.get(backend, 1e-4)),
            () if raised_anywhere(expected) else actual.reruns)


def eager_is_deterministic(source: str, first: Outcome | None = None) -> bool:
    """Whether two eager runs of ``source`` (``first``: one made already)
    leave the same record (a program that does not is the generator's fault,
    not bytegraph's)."""
    return difference(first or run_once(source, None), run_once(source, None)) is None


def verdict(diff: str | None, reruns: tuple[str, ...] = ()) -> str:
    """``ok``, ``rerun`` (no difference, but ``reruns``: hidden reruns, see
    :func:`signature`), ``refused`` (a dimension marked with ``mark_dynamic``
    that the program specialises: ConstraintViolationError, as torch.compile
    raises), ``crash`` (the compiled run raised where eager did not, or
    another exception type) or ``wrong`` (any other difference)."""
    if diff is None:
        return "rerun" if reruns else "ok"
    if diff.endswith("compiled ConstraintViolationError"):
        return "refused"
    if "exception: eager" in diff and not diff.endswith("compiled none"):
        return "crash"
    return "wrong"


@contextlib.contextmanager
def silence() -> Iterator[None]:
    """Swallow the warnings and prints of compiled programs."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield
