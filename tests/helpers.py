"""Shared helpers of the differential tests: compile with a counting backend,
run compiled and eager on equal inputs, compare."""
from __future__ import annotations

import copy
from typing import Any, Callable

import torch

import bytegraph
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter, same


def clone_inputs(args: Any) -> Any:
    """A deep copy of ``args`` in which every tensor is a fresh clone (same
    requires_grad), so eager and compiled runs can mutate their own copies."""
    def clone(t: torch.Tensor) -> torch.Tensor:
        out = t.detach().clone()
        out.requires_grad_(t.requires_grad)
        return out

    memo: dict = {}
    def walk(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            if id(value) not in memo:
                memo[id(value)] = clone(value)
            return memo[id(value)]
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, tuple) and type(value) is tuple:
            return tuple(walk(v) for v in value)
        if isinstance(value, dict):
            return type(value)((k, walk(v)) for k, v in value.items())
        return copy.copy(value) if not callable(value) else value

    return walk(args)


def _is_data(value: Any) -> bool:
    """Values whose contents ``same`` can compare (not arbitrary objects)."""
    if isinstance(value, (list, tuple)):
        return all(_is_data(v) for v in value)
    if isinstance(value, dict):
        return all(_is_data(v) for v in value.values())
    return isinstance(value, (torch.Tensor, int, float, str, bool, type(None))) or type(value).__module__ == "numpy"


def check_compiled(fn: Callable, *args: Any, graphs: int | None = 1, **kwargs: Any) -> tuple[Any, CompileCounter]:
    """Run ``fn`` eagerly and compiled (CompileCounter backend) on equal copies
    of the arguments; assert that results and mutated arguments agree and that
    ``graphs`` graphs were compiled (None: do not check).

    Returns:
        The compiled result and the counter.
    """
    eager_args, eager_kwargs = clone_inputs((args, kwargs))
    expected = fn(*eager_args, **eager_kwargs)
    cnt = CompileCounter()
    compiled = bytegraph.compile(fn, backend=cnt)
    actual = compiled(*args, **kwargs)
    assert same(actual, expected), f"compiled {actual!r} != eager {expected!r}"
    for name, a, e in [*zip(range(len(args)), args, eager_args), *((k, kwargs[k], eager_kwargs[k]) for k in kwargs)]:
        if _is_data(e):
            assert same(a, e), f"argument {name} was mutated differently: {a!r} vs {e!r}"
    if graphs is not None:
        assert cnt.frame_count == graphs, f"expected {graphs} graph(s), got {cnt.frame_count}"
    return actual, cnt


def check_fullgraph(fn: Callable, *args: Any, compare: Callable[[Any, Any], bool] = same, backend: Any = None,
                    graphs: int | None = 1, clone: bool = True, **options: Any) -> Any:
    """Compile ``fn`` whole (``fullgraph=True``, a counting backend unless
    ``backend`` is given), run it and eager on equal copies of the arguments
    (on the same arguments, eager first, with ``clone`` False: for objects a
    copy would not rebuild faithfully); assert with ``compare`` that results
    and arguments (written in place) agree, and, when counting, that ``graphs``
    graphs were compiled (None: not checked). Returns the result."""
    eager_args = clone_inputs(args) if clone else args
    expected = fn(*eager_args)
    cnt = CompileCounter()
    actual = bytegraph.compile(fn, backend=backend or cnt, fullgraph=True, **options)(*args)
    assert compare(actual, expected), f"compiled {actual!r} != eager {expected!r}"
    assert all(compare(a, e) for a, e in zip(args, eager_args)), "arguments were written differently"
    if backend is None and graphs is not None:
        assert cnt.frame_count == graphs, f"expected {graphs} graph(s), got {cnt.frame_count}"
    return actual


def t(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A random tensor of ``shape`` (standard normal) and ``dtype``."""
    return torch.randn(*shape).to(dtype)


def compile_counted(fn: Callable, **kwargs: Any) -> tuple[Callable, CompileCounter]:
    """``bytegraph.compile(fn, **kwargs)`` with a counting backend: (compiled, counter)."""
    cnt = CompileCounter()
    return bytegraph.compile(fn, backend=cnt, **kwargs), cnt


def breaks_of(fn: Callable) -> list[str]:
    """The gb_types of the graph breaks recorded for ``fn``'s frame."""
    return [b.gb_type for b in metrics.FRAMES[id(fn.__code__)].breaks]


def break_types() -> list[str]:
    """The gb_types of every graph break recorded since the last reset."""
    return [b.gb_type for stats in metrics.FRAMES.values() for b in stats.breaks]
