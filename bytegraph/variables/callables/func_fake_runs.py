"""Running a transformed call on FakeTensors on a thread of its own.

A ``torch.func`` transform that fails on FakeTensors part way (torch's
forward-mode AD kernels under ``vmap`` of ``jacfwd`` of a reverse-mode
transform assert, for one) can leave the thread's dispatcher state (its
local exclude set) as the failing kernel had it: every later operation on
that thread, eager ones included, then misbehaves. A transformed call's node
target therefore runs its FakeTensor evaluation on a fresh thread, which
carries the caller's FakeTensorMode, Python dispatcher, grad, inference and
autocast modes (the state a transform's output metadata depends on), and
leaves the tracing thread's dispatcher state as it was whatever happens. Real
runs (the graph at run time) are plain calls.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree
from torch._dispatch.python import enable_python_dispatcher
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

#: the devices whose autocast state a transform's FakeTensor run carries
_AUTOCAST_DEVICES = ("cpu", "cuda")


def call_isolated(call: Callable, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)``; on a thread of its own when the arguments
    are FakeTensors and their FakeTensorMode is the only mode active (the
    trace's FakeTensor run, see the module docstring)."""
    fakes = [a for a in pytree.tree_leaves((args, kwargs)) if isinstance(a, FakeTensor)]
    if not fakes or _get_current_dispatch_mode_stack() != [fakes[0].fake_mode] or (
            torch._C._len_torch_function_stack()):  # a tracing backend's modes (make_fx) record the call here
        return call(*args, **kwargs)
    mode, grad, inference = fakes[0].fake_mode, torch.is_grad_enabled(), torch.is_inference_mode_enabled()
    python_dispatcher = torch._C._dispatch_tls_is_dispatch_key_included(torch._C.DispatchKey.PythonDispatcher)
    autocasts = [torch.autocast(device, torch.get_autocast_dtype(device)) for device in _AUTOCAST_DEVICES
                 if torch.is_autocast_enabled(device)]
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            with contextlib.ExitStack() as state:
                for context in (mode, torch.set_grad_enabled(grad), torch.inference_mode(inference), *autocasts):
                    state.enter_context(context)
                if python_dispatcher:
                    state.enter_context(enable_python_dispatcher())
                outcome["value"] = call(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - raised again on the calling thread
            outcome["error"] = e

    thread = threading.Thread(target=run, name="bytegraph-fake-transform")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
