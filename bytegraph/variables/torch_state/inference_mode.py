"""``torch.inference_mode(mode)``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.autograd.grad_mode as grad_mode

from bytegraph.variables.base import VariableTracker
from bytegraph.variables.torch_state.base import SwitchedStateVariable

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

class InferenceModeVariable(SwitchedStateVariable):
    """``torch.inference_mode(mode)``: ``torch.autograd.grad_mode._enter_inference_mode``
    now and in the graph; exit on what entering returned."""

    enter_fn = staticmethod(grad_mode._enter_inference_mode)
    exit_fn = staticmethod(grad_mode._exit_inference_mode)

    def __init__(self, mode: bool, source=None):
        super().__init__(source)
        self.mode = mode
        self.prev_grad_mode: bool | None = None  # restored by the real guard's exit

    def python_type(self) -> type:
        return torch.inference_mode

    def grad_mode_to_reenter(self) -> bool | None:
        return self.prev_grad_mode

    def enter_args(self) -> tuple:
        return (self.mode,)

    def constructor(self) -> tuple[Callable[..., Any], tuple]:
        return torch.inference_mode, (self.mode,)

    def enter(self, tx: Tx) -> VT:
        self.prev_grad_mode = torch.is_grad_enabled()
        return super().enter(tx)
