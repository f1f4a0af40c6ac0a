"""Backward hooks on tensors computed in the graph (``y.register_hook(fn)``).

Eager runs ``fn`` on the gradient of ``y`` during backward and uses what it
returns (if not None) in its place. In the graph, ``y`` is replaced by
``bytegraph::hooked(y, key)``, an opaque operator that copies ``y`` forward
and whose backward calls ``bytegraph::run_hook(grad, key)``, another opaque
operator calling the registered hook with the real gradient. Both are
``torch.library`` custom operators, so every backend keeps them as calls:
AOTAutograd puts ``run_hook`` in the backward graph instead of tracing the
hook (whose Python side effects must happen in backward, once per backward,
as in eager), and inductor calls it as a fallback kernel.

Hooks are kept in a registry under an int key for the life of the process
(one entry per traced registration; a graph holds its keys as constants).
"""
from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.fx

from bytegraph.graph.writes import storage_id

if TYPE_CHECKING:
    from bytegraph.graph.output_graph import OutputGraph

_HOOKS: dict[int, Callable] = {}
_KEYS = itertools.count()


def register(hook: Callable) -> int:
    """Keep ``hook`` for graphs to call; returns its key."""
    key = next(_KEYS)
    _HOOKS[key] = hook
    return key


def has_aliases(output: OutputGraph, node: torch.fx.Node, example: torch.Tensor) -> bool:
    """Whether an operation already in the graph made a tensor sharing
    ``node``'s storage (a view of it, or an in-place result)."""
    storage = storage_id(example)
    return any(isinstance(user.meta.get("example_value"), torch.Tensor)
               and storage_id(user.meta["example_value"]) == storage for user in node.users)


def reroute_through_hook(output: OutputGraph, node: torch.fx.Node, key: int) -> tuple[torch.fx.Node, Any]:
    """Insert ``bytegraph::hooked(node, key)`` right after ``node`` and make
    every user of ``node`` (earlier and later ones) use its result instead.

    Returns:
        The new node and its example.
    """
    op = hooked_op()
    example = output.run_fake("call_function", op, (node.meta["example_value"], key), {})
    with output.graph.inserting_after(node):
        new = output.graph.create_node("call_function", op, (node, key), {})
    new.meta["example_value"] = example
    node.replace_all_uses_with(new, delete_user_cb=lambda user: user is not new)
    output.operations += 1
    return new, example


def remove(key: int) -> None:
    """``handle.remove()`` traced before the backward: the hook never runs."""
    _HOOKS[key] = _removed


def _removed(grad: torch.Tensor) -> None:
    return None


@functools.lru_cache(maxsize=None)
def hooked_op() -> Callable:
    """``bytegraph::hooked(x, key) -> Tensor``: a copy of ``x`` (same shape,
    dtype, device) whose gradient goes through hook ``key`` in backward."""

    @torch.library.custom_op("bytegraph::run_hook", mutates_args=())
    def run_hook(grad: torch.Tensor, key: int) -> torch.Tensor:
        result = _HOOKS[key](grad)
        if result is None or result is grad or _aliases(result, grad):
            return grad.clone()  # an operator may not return (a view of) its input
        return result

    @run_hook.register_fake
    def _(grad: torch.Tensor, key: int) -> torch.Tensor:
        return torch.empty_like(grad)

    @torch.library.custom_op("bytegraph::hooked", mutates_args=())
    def hooked(x: torch.Tensor, key: int) -> torch.Tensor:
        return x.clone()

    @hooked.register_fake
    def _(x: torch.Tensor, key: int) -> torch.Tensor:
        return torch.empty_like(x)

    def setup_context(ctx, inputs, output) -> None:
        ctx.key = inputs[1]

    def backward(ctx, grad: torch.Tensor) -> tuple:
        return run_hook(grad, ctx.key), None

    hooked.register_autograd(backward, setup_context=setup_context)
    return torch.ops.bytegraph.hooked.default


def _aliases(a: torch.Tensor, b: torch.Tensor) -> bool:
    return isinstance(a, torch.Tensor) and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
