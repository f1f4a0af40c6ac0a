"""NumPy's global random generator called from the graph (``np.random.randn(2, 3)``).

``torch._numpy`` would draw from torch's generator: other numbers than eager,
and NumPy's own state left where it was. Instead the graph calls the real
NumPy function: ``bytegraph::numpy_random(key)`` is a ``torch.library``
operator that runs the call registered under ``key`` (function and constant
arguments) and returns its array as a tensor. It is registered as an ordered
side effect, so AOTAutograd and inductor neither drop it nor reorder it
against another draw, and each run of the graph draws once, in program order,
as eager does.

The output's shape and dtype are found at trace time by making the same call
between ``np.random.get_state()`` and ``set_state()``, which leaves NumPy's
generator as it was. Only the methods of NumPy's global ``RandomState``
(``np.random.randn``, ``normal``, ``randint``...) with constant arguments and
an array result are traced; :data:`STATE_CHANGING` ones are not.
"""
from __future__ import annotations

import functools
import itertools
from typing import Any, Callable

import torch

try:
    import numpy as np
except ImportError:  # pragma: no cover - NumPy is optional
    np = None  # type: ignore[assignment]

#: RandomState methods that set, read or shuffle state, or write their argument: never traced
STATE_CHANGING = frozenset({"seed", "set_state", "get_state", "shuffle", "__getstate__", "__setstate__",
                            "__reduce__"})

_CALLS: dict[int, tuple[Callable, tuple, dict, tuple[int, ...], torch.dtype]] = {}
_KEYS = itertools.count()


def is_global_draw(fn: Any) -> bool:
    """Whether ``fn`` is a method of NumPy's global generator (``np.random.randn``) traced here."""
    return np is not None and getattr(fn, "__self__", None) is np.random.mtrand._rand and (
        getattr(fn, "__name__", "") not in STATE_CHANGING)


def register(fn: Callable, args: tuple, kwargs: dict) -> int | None:
    """Keep the call ``fn(*args, **kwargs)`` for graphs to make; its key, or None
    when it raises or gives no array of a dtype torch has (it runs natively)."""
    state = np.random.get_state()
    try:
        sample = fn(*args, **kwargs)
    except Exception:  # noqa: BLE001 - eager raises; the native run does
        return None
    finally:
        np.random.set_state(state)
    if type(sample) is not np.ndarray:
        return None
    try:
        dtype = torch.from_numpy(np.empty(0, dtype=sample.dtype)).dtype
    except TypeError:
        return None
    key = next(_KEYS)
    _CALLS[key] = (fn, args, kwargs, sample.shape, dtype)
    return key


@functools.cache
def draw_op() -> torch._ops.OpOverload:
    """``bytegraph::numpy_random(int key) -> Tensor``, defined on first use."""
    from torch._higher_order_ops.effects import _EffectType, _register_effectful_op

    @torch.library.custom_op("bytegraph::numpy_random", mutates_args=())
    def numpy_random(key: int) -> torch.Tensor:
        fn, args, kwargs, _, _ = _CALLS[key]
        return torch.from_numpy(fn(*args, **kwargs))

    @numpy_random.register_fake
    def _(key: int) -> torch.Tensor:
        _, _, _, shape, dtype = _CALLS[key]
        return torch.empty(shape, dtype=dtype)

    _register_effectful_op(numpy_random._opoverload, _EffectType.ORDERED)
    return numpy_random._opoverload


def draws(gm: torch.fx.GraphModule) -> bool:
    """Whether graph ``gm`` draws from NumPy's global generator."""
    return any(node.target is draw_op() for node in gm.graph.nodes) if _CALLS else False


def saved_state() -> Any:
    return np.random.get_state()


def restore_state(state: Any) -> None:
    np.random.set_state(state)
