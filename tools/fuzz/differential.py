"""Run a generated program eagerly and compiled and compare everything eager
leaves behind: the result (values, dtypes, shapes, ``requires_grad``), the
exception type, the mutated inputs, the module's globals, and torch's grad
mode and default dtype."""
from __future__ import annotations

import copy
import dataclasses
import io
import types
from typing import Any

import torch

import bytegraph
from bytegraph.testing import same


@dataclasses.dataclass
class Outcome:
    """What one run left behind."""

    result: Any
    error: str | None
    inputs: dict
    module: dict
    torch_state: tuple


def make_inputs(seed: int) -> dict:
    """The arguments of a program (fresh tensors each time, same values)."""
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


def _module(source: str) -> types.ModuleType:
    module = types.ModuleType("fuzzed_program")
    exec(compile(source, "<fuzzed program>", "exec"), module.__dict__)  # the fuzzer's own test program
    return module


def _snapshot(module: types.ModuleType, inputs: dict) -> tuple[dict, dict]:
    inputs = {k: (vars(v).copy() if isinstance(v, types.SimpleNamespace) else v) for k, v in inputs.items()}
    keep = ("G", "COUNTER", "NOTES")
    return inputs, {k: copy.copy(module.__dict__[k]) for k in keep}


def run_once(source: str, seed: int, backend: str | None) -> Outcome:
    """Run program ``source`` on inputs ``seed``, eagerly (``backend`` None) or compiled."""
    module = _module(source)
    inputs = make_inputs(seed)
    fn = module.program if backend is None else bytegraph.compile(module.program, backend=backend)
    grad, dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    torch.manual_seed(seed)
    try:
        result, error = fn(**inputs), None
    except Exception as e:  # noqa: BLE001 (the exception type is part of the outcome)
        result, error = None, type(e).__name__
    finally:
        state = (torch.is_grad_enabled(), torch.get_default_dtype())
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
    snap_inputs, snap_module = _snapshot(module, inputs)
    return Outcome(result, error, snap_inputs, snap_module, state)


def _same(a: Any, b: Any) -> bool:
    if isinstance(b, dict) and isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in b)
    if isinstance(b, (list, tuple)) and isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return same(a, b, atol=1e-4, rtol=1e-4)


#: settings of the compiled runs: bytegraph's own bugs raise (a frame that runs
#: natively after one would hide it); backend failures follow the user policy
#: unless the campaign asks for them (``--raise-backend-errors``)
SETTINGS = {"raise_on_internal_error": True, "raise_on_backend_error": False}


def compare(source: str, seed: int, backend: str) -> str | None:
    """None when the compiled run left what eager left; else what differs (a
    short signature, stable across minimisation)."""
    expected = run_once(source, seed, None)
    try:
        with bytegraph.config.patch(**SETTINGS):
            actual = run_once(source, seed, backend)
    finally:
        bytegraph.reset()
    if actual.error != expected.error:
        return f"exception: eager {expected.error}, compiled {actual.error}"
    if expected.error is None and not _same(actual.result, expected.result):
        return "result differs"
    for name in expected.inputs:
        if not _same(actual.inputs[name], expected.inputs[name]):
            return f"input {name} differs"
    for name in expected.module:
        if not _same(actual.module[name], expected.module[name]):
            return f"global {name} differs"
    if actual.torch_state != expected.torch_state:
        return "torch state differs"
    return None


def silence() -> Any:
    """A context that swallows the warnings and prints of compiled programs."""
    import contextlib
    import warnings

    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    return stack
