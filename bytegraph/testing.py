"""Helpers for tests of compiled code."""
from __future__ import annotations

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
