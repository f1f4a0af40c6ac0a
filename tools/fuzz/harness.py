"""What a generated program uses when it runs: every program's module starts
with ``from tools.fuzz.harness import *`` and defines ``main(compile)``, which
builds its inputs, calls ``compile(target)`` (the identity for the eager run),
calls the result, and returns a *record*: a dict of everything eager leaves
behind that the compiled run must reproduce (results, mutated inputs, module
and optimizer state, hook logs, cache statistics)."""
from __future__ import annotations

import collections
import dataclasses
import functools
import io
import itertools
import types
from typing import Any, Callable

import torch
from torch import nn

__all__ = ["Raised", "attempt", "make_inputs", "snapshot", "module_state", "optimizer_state", "SINK",
           "collections", "dataclasses", "functools", "itertools", "nn", "torch", "types"]

#: where programs print (a print is a graph break; its text is not compared)
SINK = io.StringIO()


@dataclasses.dataclass(frozen=True)
class Raised:
    """A call that raised: only the exception's type is compared."""

    name: str


def attempt(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, or :class:`Raised` with the exception's type name."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 (the exception type is the outcome)
        return Raised(type(e).__name__)


def make_inputs(seed: int) -> dict:
    """The arguments of a tensor-family program (fresh tensors each time, same values)."""
    g = torch.Generator().manual_seed(seed)
    requires_grad = seed % 3 == 0
    idx = torch.tensor([seed % 5 if seed % 4 == 0 else seed % 3])  # out of range for some seeds
    obj = types.SimpleNamespace(w=torch.ones(()), scale=1.5)
    return {
        "x": torch.randn(3, 4, generator=g),
        "y": torch.randn(3, 4, generator=g).requires_grad_(requires_grad),
        "idx": idx,
        "state": {"w": torch.randn(3, 4, generator=g), "n": 0},
        "log": [],
        "obj": obj,
    }


def snapshot(value: Any) -> Any:
    """A copy of ``value`` now (tensors cloned with their requires_grad,
    containers and namespaces copied): what it held at this point of the run."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad) if value.is_floating_point() \
            else value.clone()
    if isinstance(value, types.SimpleNamespace):
        return {k: snapshot(v) for k, v in vars(value).items()}
    if isinstance(value, dict):
        return {k: snapshot(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(snapshot(v) for v in value)
    return value


def module_state(module: nn.Module) -> dict:
    """A module's observable state: training flags, parameters and buffers, grads."""
    return {
        "training": [m.training for m in module.modules()],
        "state": {k: snapshot(v) for k, v in module.state_dict(keep_vars=True).items()},
        "grads": {k: None if p.grad is None else snapshot(p.grad) for k, p in module.named_parameters()},
    }


def optimizer_state(opt: torch.optim.Optimizer) -> dict:
    """An optimizer's state (moments, step counts) and hyperparameters."""
    sd = opt.state_dict()
    return {"state": snapshot(sd["state"]), "groups": [{k: v for k, v in g.items() if k != "params"}
                                                        for g in sd["param_groups"]]}
