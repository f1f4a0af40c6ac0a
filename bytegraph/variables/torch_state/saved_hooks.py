"""``torch.autograd.graph.disable_saved_tensors_hooks(error_message)``: while the block runs,
registering saved-tensor hooks raises ``error_message``. Modelled, recognised by identity
(``TORCH_MODELS``), as ``sdpa_kernel`` is: entering runs ``graph/state_setters.py``'s
``disable_saved_tensors_hooks`` now and as a graph node, leaving runs ``restore_saved_tensors_hooks``
on what entering returned; a graph that raises inside the block has the state put back before the
frame reruns natively (``graph/rerun.py``). (``saved_tensors_hooks(pack, unpack)`` itself stays a
graph break: its hooks run during autograd, which no graph holds; torch.compile breaks there too.)
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch.autograd.graph

from bytegraph.breaks import unimplemented
from bytegraph.graph.state_setters import disable_saved_tensors_hooks, restore_saved_tensors_hooks
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.torch_state.base import SwitchedStateVariable

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class SavedTensorsHooksDisabledVariable(SwitchedStateVariable):
    """``disable_saved_tensors_hooks(message)`` made in the trace."""

    enter_fn = staticmethod(disable_saved_tensors_hooks)
    exit_fn = staticmethod(restore_saved_tensors_hooks)

    def __init__(self, message: str):
        super().__init__()
        self.message = message

    def python_type(self) -> type:
        return contextlib._GeneratorContextManager  # what calling the contextmanager function returns

    def enter_args(self) -> tuple:
        return (self.message,)

    def constructor(self) -> tuple[Callable[..., Any], tuple]:
        return torch.autograd.graph.disable_saved_tensors_hooks, (self.message,)

    def __repr__(self) -> str:
        return "SavedTensorsHooksDisabledVariable()"


def call_disable_saved_tensors_hooks(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """The model of ``disable_saved_tensors_hooks``: one constant string argument only."""
    given = [*args, *kwargs.values()]
    if not (len(given) == 1 and (not kwargs or "error_message" in kwargs) and given[0].is_python_constant()
            and type(given[0].as_python_constant()) is str):
        unimplemented(
            gb_type="unsupported context manager",
            context=f"disable_saved_tensors_hooks with {len(args)} positional, {sorted(kwargs)} keyword arguments",
            explanation="disable_saved_tensors_hooks is traced with one constant string, error_message; other "
                        "arguments run natively.",
            hints=("Pass the message as a string constant.",),
        )
    return SavedTensorsHooksDisabledVariable(given[0].as_python_constant())
