"""One OpInfo case and how its compiled result is judged against eager.

A *case* is one OpInfo of ``op_db`` (its ``full_name``, e.g. ``"normal.number_mean"``)
called one way (``variant``: ``"op"`` calls ``op.op``; ``"inplace"`` calls
``op.inplace_variant``) on one sample input the OpInfo makes on CPU for its dtype
(``float32``, or the first of :data:`DTYPE_ORDER` it supports), by default the first
that eager runs without raising. Everything here is plain torch: no frontend is
imported, so both frontends' workers share it.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from typing import Any, Callable

import torch

#: the dtype a case uses: the first of these that the OpInfo supports on CPU
DTYPE_ORDER = (
    torch.float32, torch.float64, torch.complex64, torch.complex128, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.bfloat16, torch.float16,
)
#: samples looked at for one that eager runs without raising
MAX_SAMPLES = 10
VARIANTS = ("op", "inplace")


@functools.lru_cache(maxsize=None)
def op_db() -> dict[str, Any]:
    """``full_name`` -> OpInfo, in ``op_db``'s order (importing it costs a few seconds)."""
    from torch.testing._internal.common_methods_invocations import op_db as ops

    return {op.full_name: op for op in ops}


def case_dtype(op: Any) -> torch.dtype | None:
    """The dtype a case of ``op`` runs in; None when it supports none of :data:`DTYPE_ORDER` on CPU."""
    supported = op.supported_dtypes("cpu")
    return next((d for d in DTYPE_ORDER if d in supported), None)


def callable_of(op: Any, variant: str) -> Callable | None:
    """What the case calls: ``op.op``, or its in-place variant (None when it has none)."""
    return op.op if variant == "op" else op.inplace_variant


# ---- inputs ----------------------------------------------------------------------------------

def clone_tree(value: Any, memo: dict | None = None) -> Any:
    """``value`` with every tensor replaced by a fresh copy of the same sizes, strides and
    requires_grad (one copy per distinct tensor, so inputs that are one tensor stay one);
    lists, tuples and dicts are rebuilt, anything else is shared."""
    memo = {} if memo is None else memo
    if isinstance(value, torch.Tensor):
        if id(value) not in memo:
            memo[id(value)] = _copy_tensor(value)
        return memo[id(value)]
    if isinstance(value, list):
        return [clone_tree(v, memo) for v in value]
    if isinstance(value, tuple) and type(value) is tuple:
        return tuple(clone_tree(v, memo) for v in value)
    if isinstance(value, dict):
        return {k: clone_tree(v, memo) for k, v in value.items()}
    return value


def _copy_tensor(t: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        if t.layout == torch.strided and not t.is_quantized:
            try:
                out = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device).copy_(t)
            except RuntimeError:  # overlapping strides: a dense copy
                out = t.clone()
        else:
            out = t.clone()
    return out.requires_grad_(t.requires_grad)


def tensors_of(value: Any) -> list[torch.Tensor]:
    """The tensors in ``value`` (lists, tuples, dicts, named tuples), depth first."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_of(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_of(v)]
    return []


@dataclasses.dataclass
class Case:
    """A callable and the sample it is called on: ``fn(*args, **kwargs)``."""

    name: str
    variant: str
    fn: Callable
    dtype: torch.dtype
    index: int  # which sample of the OpInfo's
    args: tuple
    kwargs: dict
    random: bool  # the result depends on the RNG seed or on nothing at all (uninitialised memory)
    error: str | None = None  # the exception type eager raises (no sample ran), e.g. "RuntimeError"

    def fresh(self) -> tuple[tuple, dict]:
        """Equal copies of the arguments, for one run."""
        return clone_tree((self.args, self.kwargs))


class Skip(Exception):
    """The case cannot run (no CPU dtype, no sample, no in-place variant)."""


def run(fn: Callable, args: tuple, kwargs: dict, seed: int = 0) -> Any:
    """``fn(*args, **kwargs)`` after seeding torch's RNG."""
    torch.manual_seed(seed)
    return fn(*args, **kwargs)


def make_cases(name: str, variant: str, count: int = 1) -> list[Case]:
    """The cases of OpInfo ``name`` called as ``variant``: its first ``count`` samples that
    eager runs (among the first ``max(count, MAX_SAMPLES)``), each with whether its result is
    random; when eager raises on every one of them, the first sample, with the exception
    eager raises as the expected outcome.

    Raises:
        Skip: when there is nothing to run (the reason is the message).
    """
    op = op_db()[name]
    fn = callable_of(op, variant)
    if fn is None:
        raise Skip("no in-place variant")
    dtype = case_dtype(op)
    if dtype is None:
        raise Skip("no CPU dtype")
    torch.manual_seed(0)  # the samples' values are the same in every process
    samples = list(itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=False), max(count, MAX_SAMPLES)))
    if not samples:
        raise Skip("no sample")
    found, errors = [], []
    for index, sample in enumerate(samples):
        args, kwargs = (sample.input, *sample.args), dict(sample.kwargs)
        try:
            first = run(fn, *clone_tree((args, kwargs)))
        except Exception as e:  # noqa: BLE001 - eager refuses this sample: try the next
            errors.append(type(e).__name__)
            continue
        again = run(fn, *clone_tree((args, kwargs)))
        other_seed = run(fn, *clone_tree((args, kwargs)), seed=1)
        random = (op.has_nondeterministic_output or op.skip_correctness_check_compile_vs_eager
                  or difference(again, first, exact=True) is not None
                  or difference(other_seed, first, exact=True) is not None)
        found.append(Case(name, variant, fn, dtype, index, args, kwargs, random))
        if len(found) == count:
            break
    if found:
        return found
    first_sample = samples[0]
    return [Case(name, variant, fn, dtype, 0, (first_sample.input, *first_sample.args), dict(first_sample.kwargs),
                 random=False, error=errors[0])]


# ---- comparison ------------------------------------------------------------------------------

def difference(actual: Any, expected: Any, exact: bool, values: bool = True) -> str | None:
    """How ``actual`` differs from ``expected`` (None: it does not): type, then for tensors
    dtype, shape, layout, requires_grad and (with ``values``) the values, NaN equal to NaN,
    bit-exact with ``exact`` else within ``torch.testing.assert_close``'s tolerances for the
    dtype; containers element by element; other values with ``==`` (NaN equal to NaN)."""
    if type(actual) is not type(expected):
        return f"type {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, torch.Tensor):
        for attr in ("dtype", "shape", "layout", "device", "requires_grad"):
            if getattr(actual, attr) != getattr(expected, attr):
                return f"{attr} {getattr(actual, attr)} != {getattr(expected, attr)}"
        if not values:
            return None
        return _tensor_values(actual, expected, exact)
    if isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            return f"length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            diff = difference(a, e, exact, values)
            if diff is not None:
                return f"[{i}] {diff}"
        return None
    if isinstance(expected, dict):
        if list(actual) != list(expected):
            return f"keys {list(actual)} != {list(expected)}"
        for k in expected:
            diff = difference(actual[k], expected[k], exact, values)
            if diff is not None:
                return f"[{k!r}] {diff}"
        return None
    if isinstance(expected, float) and math.isnan(expected) and math.isnan(actual):
        return None
    if isinstance(expected, complex) and _nan_equal_complex(actual, expected):
        return None
    if not values and isinstance(expected, (int, float, complex)):
        return None
    return None if actual == expected else f"{actual!r} != {expected!r}"


def _nan_equal_complex(a: complex, e: complex) -> bool:
    same = lambda x, y: x == y or (math.isnan(x) and math.isnan(y))  # noqa: E731
    return same(a.real, e.real) and same(a.imag, e.imag)


def _tensor_values(actual: torch.Tensor, expected: torch.Tensor, exact: bool) -> str | None:
    a, e = actual.detach(), expected.detach()
    if a.is_quantized:
        a, e = a.dequantize(), e.dequantize()
    if a.layout != torch.strided:
        a, e = a.to_dense(), e.to_dense()
    tolerances = {"rtol": 0.0, "atol": 0.0} if exact else {}
    try:
        torch.testing.assert_close(a, e, equal_nan=True, check_stride=False, **tolerances)
    except AssertionError as err:
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        return "values: " + "; ".join(lines[:3])
    return None


def alias_map(result: Any, inputs: Any) -> list[str]:
    """For each tensor of ``result`` (depth first), what it is to the call's inputs:
    ``"input k"`` (the very object), ``"view of input k"`` (shares its storage),
    ``"output j"`` (the same object as an earlier output) or ``"new"``. Equal maps for
    eager and compiled runs mean the compiled call aliased as eager did."""
    ins = tensors_of(inputs)
    outs = tensors_of(result)
    kinds = []
    for j, out in enumerate(outs):
        kind = next((f"input {k}" for k, t in enumerate(ins) if out is t), None)
        kind = kind or next((f"output {i}" for i, o in enumerate(outs[:j]) if out is o), None)
        kind = kind or next((f"view of input {k}" for k, t in enumerate(ins) if _shares_storage(out, t)), None)
        kinds.append(kind or "new")
    return kinds


def _shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.layout != torch.strided or b.layout != torch.strided or a.is_quantized or b.is_quantized:
        return False
    try:
        sa, sb = a.untyped_storage(), b.untyped_storage()
    except (RuntimeError, NotImplementedError):
        return False
    return sa.nbytes() > 0 and sa.data_ptr() == sb.data_ptr()


def judge(case: Case, expected: Any, eager_inputs: Any, actual: Any, compiled_inputs: Any, exact: bool) -> str | None:
    """Why a compiled run is wrong (None: it matches eager): the result, the inputs after the
    call (mutations), and the aliasing of outputs to inputs. A random case is compared on
    types, dtypes and shapes only."""
    values = not case.random
    diff = difference(actual, expected, exact, values)
    if diff is not None:
        return f"result {diff}"
    diff = difference(compiled_inputs, eager_inputs, exact, values)
    if diff is not None:
        return f"inputs after the call {diff}"
    got, want = alias_map(actual, compiled_inputs), alias_map(expected, eager_inputs)
    if got != want:
        return f"aliasing {got} != eager's {want}"
    return None
