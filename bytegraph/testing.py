"""Helpers for tests of compiled code."""
from __future__ import annotations

import sys
from typing import Callable

import torch


class CompileCounter:
    """A backend that counts what it is given and runs each graph eagerly.

    Attributes:
        frame_count: graphs compiled (one per call of the backend).
        op_count: call_function/call_method nodes over all those graphs.
        graphs: the GraphModules received, in order.
    """

    def __init__(self) -> None:
        self.frame_count = 0
        self.op_count = 0
        self.graphs: list[torch.fx.GraphModule] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        self.frame_count += 1
        self.op_count += sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method"))
        self.graphs.append(gm)
        return gm.forward

    def clear(self) -> None:
        self.frame_count = 0
        self.op_count = 0
        self.graphs.clear()


def same(actual: object, expected: object, atol: float = 1e-6, rtol: float = 1e-5) -> bool:
    """Deep equality for test comparisons of compiled vs eager results.

    Tensors must agree in type, dtype, shape and values (``allclose`` with the
    given tolerances, NaNs equal), and so must NumPy arrays and scalars;
    containers must have the same type and length; other values compare with
    ``==`` and must have the same type.
    """
    np = sys.modules.get("numpy")  # NumPy values can only appear if NumPy was imported
    if np is not None and isinstance(expected, (np.ndarray, np.generic)):
        return (
            type(actual) is type(expected)
            and actual.dtype == expected.dtype
            and actual.shape == expected.shape
            and bool(np.allclose(actual, expected, atol=atol, rtol=rtol, equal_nan=True))
        )
    if isinstance(expected, torch.Tensor):
        return (
            type(actual) is type(expected)
            and actual.dtype == expected.dtype
            and actual.shape == expected.shape
            and actual.requires_grad == expected.requires_grad
            and torch.allclose(actual.detach(), expected.detach(), atol=atol, rtol=rtol, equal_nan=True)
        )
    if isinstance(expected, (list, tuple)):
        return (
            type(actual) is type(expected)
            and len(actual) == len(expected)
            and all(same(a, e, atol, rtol) for a, e in zip(actual, expected))
        )
    if isinstance(expected, dict):
        return (
            type(actual) is type(expected)
            and list(actual) == list(expected)
            and all(same(actual[k], expected[k], atol, rtol) for k in expected)
        )
    return type(actual) is type(expected) and actual == expected
