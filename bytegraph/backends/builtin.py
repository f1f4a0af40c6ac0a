"""The built-in backends: torch's own compilers behind the standard names.

- ``eager``: runs the captured GraphModule as Python (``gm.forward``);
  ``eager_noexcept`` the same for callers that assert the graph never raises
  (torch.compile's debugging backend of that name, which CPython's ported
  semantics tests ask for): an exception from the graph is wrapped in a
  RuntimeError naming the backend;
- ``aot_eager``: AOTAutograd (forward and backward graphs) without a compiler,
  the standard check that a graph survives functionalization;
  ``aot_eager_default_partitioner`` and ``aot_eager_decomp_partition`` the same
  with the default partitioner, or with inductor's decompositions and min-cut
  partitioner (torch.compile's debugging backends of those names);
- ``inductor``: TorchInductor (``torch._inductor.compile_fx.compile_fx``).

Compiler-specific settings (``mode``, ``options`` of :func:`bytegraph.compile`)
are passed to inductor as config patches, as torch.compile does.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from bytegraph import compat, imports
from bytegraph.backends.registry import register_backend


@register_backend(name="eager")
def eager(gm: torch.fx.GraphModule, example_inputs: list, **kwargs: Any) -> Callable:
    """Run the graph eagerly: the captured program, unchanged. Keyword
    arguments (torch.compile's ``mode``/``options``) are ignored, with a warning."""
    _ignored("eager", kwargs)
    return gm.forward


def _ignored(backend: str, kwargs: dict) -> None:
    if kwargs:
        compat.unsupported(f"{', '.join(f'{k}={v!r}' for k, v in kwargs.items())} with backend={backend!r}",
                           f"the {backend} backend ignores them (torch.compile's does too)")


@register_backend(name="eager_noexcept")
def eager_noexcept(gm: torch.fx.GraphModule, example_inputs: list, **kwargs: Any) -> Callable:
    """Run the graph eagerly; an exception it raises becomes a RuntimeError naming this backend.

    The wrapped error is an Exception, so the runtime's native rerun of a frame whose graph
    raised (graph/rerun.py) still applies: the caller sees eager's exception, never this one,
    unless the graph had already written an input.
    """
    _ignored("eager_noexcept", kwargs)

    def run(*args: Any) -> Any:
        try:
            return gm(*args)
        except Exception as error:
            raise RuntimeError("eager_noexcept: the captured graph raised " + type(error).__name__) from error

    return run


def _boxed_nop(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    from torch._functorch.aot_autograd import make_boxed_func

    return make_boxed_func(gm.forward)


@register_backend(name="aot_eager")
def aot_eager(gm: torch.fx.GraphModule, example_inputs: list, **kwargs: Any) -> Callable:
    """AOTAutograd with the identity compiler for forward and backward."""
    _ignored("aot_eager", kwargs)
    # AOTAutograd is imported on first use: importing it loads much of torch (about a second)
    with imports.first_use("AOTAutograd"):
        from torch._functorch.aot_autograd import aot_module_simplified

    return aot_module_simplified(gm, example_inputs, fw_compiler=_boxed_nop, bw_compiler=_boxed_nop)


@register_backend(name="aot_eager_default_partitioner")
def aot_eager_default_partitioner(gm: torch.fx.GraphModule, example_inputs: list, **kwargs: Any) -> Callable:
    """``aot_eager`` splitting forward and backward with AOTAutograd's default partitioner."""
    _ignored("aot_eager_default_partitioner", kwargs)
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._functorch.partitioners import default_partition

    return aot_module_simplified(gm, example_inputs, fw_compiler=_boxed_nop, bw_compiler=_boxed_nop,
                                 partition_fn=default_partition)


@register_backend(name="aot_eager_decomp_partition")
def aot_eager_decomp_partition(gm: torch.fx.GraphModule, example_inputs: list, **kwargs: Any) -> Callable:
    """``aot_eager`` with inductor's decompositions and its min-cut partitioner: the graphs
    inductor would compile, run without inductor (torch.compile's debugging backend of that name)."""
    _ignored("aot_eager_decomp_partition", kwargs)
    import functools

    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._inductor.compile_fx import select_decomp_table

    return aot_module_simplified(
        gm, example_inputs, fw_compiler=_boxed_nop, bw_compiler=_boxed_nop, decompositions=select_decomp_table(),
        partition_fn=functools.partial(min_cut_rematerialization_partition, compiler="inductor"),
    )


def inductor_with(mode: str | None, options: dict[str, Any] | None) -> Callable:
    """An inductor backend with ``mode``/``options`` applied as config patches.

    Raises:
        ValueError: for an unknown ``mode`` (from inductor's mode table), an
            option inductor's config does not have, or both ``mode`` and
            ``options`` given (mirrors torch.compile, which refuses the pair).
    """
    # inductor is imported on first use only: importing it costs seconds.
    if mode is not None and options:
        raise ValueError("bytegraph.compile: give either mode or options, not both (as torch.compile)")
    if options:
        from torch._inductor import config as inductor_config

        unknown = sorted(set(options) - set(inductor_config.get_config_copy()))
        if unknown:
            raise ValueError(f"bytegraph.compile: options has keys inductor's config does not know: {unknown}")
    patches: dict[str, Any] = {}
    if mode is not None:
        from torch._inductor import list_mode_options

        modes = list_mode_options()
        if mode not in modes:
            raise ValueError(f"bytegraph.compile: unknown mode {mode!r}; inductor has {sorted(modes)}")
        patches.update(modes[mode])
    patches.update(options or {})
    try:
        key = (mode, tuple(sorted((options or {}).items())))
        hash(key)
    except TypeError:  # an option value that is a list or dict: a backend of its own
        return InductorBackend(patches)
    # one backend per setting, so that compiled code is shared across compile calls (cached by backend)
    return _INDUCTOR_WITH.setdefault(key, InductorBackend(patches))


_INDUCTOR_WITH: dict[tuple, "InductorBackend"] = {}


class InductorBackend:
    """TorchInductor with config patches (a class, not a closure, so compiled
    modules that use it can be pickled)."""

    __name__ = "inductor"

    def __init__(self, patches: dict[str, Any]):
        self.patches = patches

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        with imports.first_use("inductor"):
            from torch._inductor.compile_fx import compile_fx

        return compile_fx(gm, example_inputs, config_patches=self.patches)


register_backend(inductor_with(None, None), name="inductor")
