"""The scaled-dot-product attention backend flags in a graph: what entering and leaving
``torch.nn.attention.sdpa_kernel`` do, as graph nodes (the trace's model is
``variables/torch_state/sdpa_kernel.py``), and the snapshot a graph that raises inside
such a block is put back to (``rerun.py``)."""
from __future__ import annotations

import torch
import torch.nn.attention as attention


def enter_sdpa_kernel(backends: tuple[int, ...], set_priority: bool) -> tuple:
    """What entering ``sdpa_kernel`` does: enable exactly ``backends`` (by value: the graph's code
    holds ints), returning the backends enabled before, for :func:`exit_sdpa_kernel`."""
    previous = attention._cur_sdpa_kernel_backends(with_priority=set_priority)
    attention._sdpa_kernel([attention.SDPBackend(b) for b in backends], set_priority)
    return previous, set_priority


def exit_sdpa_kernel(entered: tuple) -> None:
    """What leaving ``sdpa_kernel`` does: the backends enabled before entering, again."""
    attention._sdpa_kernel(*entered)


def enters_sdpa_kernel(gm: torch.fx.GraphModule) -> bool:
    return any(n.op == "call_function" and n.target is enter_sdpa_kernel for n in gm.graph.nodes)


def sdp_flags() -> tuple:
    """Each backend's flag and the priority order."""
    return tuple(getattr(torch._C, f"_get_{name}_sdp_enabled")() for name in attention._backend_names), (
        torch._C._get_sdp_priority_order())


def restore_sdp_flags(flags: tuple) -> None:
    enabled, priority = flags
    for name, on in zip(attention._backend_names, enabled):
        getattr(torch._C, f"_set_sdp_use_{name}")(on)
    torch._C._set_sdp_priority_order(priority)
