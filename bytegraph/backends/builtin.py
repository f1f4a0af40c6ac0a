"""The built-in backends: torch's own compilers behind the standard names.

- ``eager``: runs the captured GraphModule as Python (``gm.forward``);
- ``aot_eager``: AOTAutograd (forward and backward graphs) without a compiler,
  the standard check that a graph survives functionalization;
- ``inductor``: TorchInductor (``torch._inductor.compile_fx.compile_fx``).

Compiler-specific settings (``mode``, ``options`` of :func:`bytegraph.compile`)
are passed to inductor as config patches, as torch.compile does.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func

from bytegraph.backends.registry import register_backend


@register_backend(name="eager")
def eager(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    """Run the graph eagerly: the captured program, unchanged."""
    return gm.forward


def _boxed_nop(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    return make_boxed_func(gm.forward)


@register_backend(name="aot_eager")
def aot_eager(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    """AOTAutograd with the identity compiler for forward and backward."""
    return aot_module_simplified(gm, example_inputs, fw_compiler=_boxed_nop, bw_compiler=_boxed_nop)


def inductor_with(mode: str | None, options: dict[str, Any] | None) -> Callable:
    """An inductor backend with ``mode``/``options`` applied as config patches.

    Raises:
        ValueError: for an unknown ``mode`` (from inductor's mode table).
    """
    # inductor is imported on first use only: importing it costs seconds.
    patches: dict[str, Any] = {}
    if mode is not None and mode != "default":
        from torch._inductor import list_mode_options

        patches.update(list_mode_options(mode))
    patches.update(options or {})

    def inductor_backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        from torch._inductor.compile_fx import compile_fx

        return compile_fx(gm, example_inputs, config_patches=patches)

    inductor_backend.__name__ = "inductor"
    return inductor_backend


register_backend(inductor_with(None, None), name="inductor")
