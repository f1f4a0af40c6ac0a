"""``torch.inference_mode(mode)``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import torch
import torch.autograd.grad_mode as grad_mode

from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.torch_state.base import StateContextVariable, enter_state, exit_state

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

class InferenceModeVariable(StateContextVariable):
    """``torch.inference_mode(mode)``: ``torch.autograd.grad_mode._enter_inference_mode``
    now and in the graph; exit on what entering returned."""

    reenter_on_reconstruct = True

    def __init__(self, mode: bool, source=None):
        super().__init__(source)
        self.mode = mode
        self.entered: list[tuple[Any, Any]] = []
        self.prev_grad_mode: bool | None = None  # restored by the real guard's exit

    def python_type(self) -> type:
        return torch.inference_mode

    def grad_mode_to_reenter(self) -> bool | None:
        return self.prev_grad_mode

    def enter(self, tx: Tx) -> VT:
        self.prev_grad_mode = torch.is_grad_enabled()
        enter_state(tx, self.entered, grad_mode._enter_inference_mode, grad_mode._exit_inference_mode, (self.mode,))
        return ConstantVariable(None)

    def exit(self, tx: Tx, args: Sequence[VT] = ()) -> VT:
        exit_state(tx, self, self.entered, grad_mode._exit_inference_mode)
        return ConstantVariable(None)

    def close_for_graph_break(self, tx: Tx) -> None:
        while self.entered:
            self.exit(tx)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(torch.inference_mode)
        codegen.load_const(self.mode)
        codegen.call(1)
