"""The speculative purity proof of a function run under a ``torch.func`` transform.

A transformed call is one graph node whose target runs the function natively
(:mod:`.func_transforms`); that is sound only when the function does nothing
but compute from its arguments. :func:`check_pure` traces its body once
speculatively (its nodes removed after, its guards kept), with stand-ins for
what the transform passes, and breaks the graph unless that trace:

- takes no graph break and raises nothing;
- records no side effect (no write to a global, an attribute or a container
  that outlives the call; no print or log; the function is no generator and
  assigns none of its free variables, checked on its bytecode) and finds none
  pending from before (the function would read the real objects, not their
  traced state);
- draws nothing from the random number generator, sets no grad mode and
  writes in place to no tensor it did not create, but for ``vmap``'s batched
  arguments (written by the node as eager's vmap writes them; the node then
  counts as writing its arguments, for the aliasing guard);
- reads no tensor other than its arguments, closure cells and tensors
  reached from a module's globals (a global tensor, a parameter or buffer of
  a global ``nn.Module``: returned to the caller, who makes them node
  arguments; they must not be written in place).

What the function itself reads is checked on its bytecode: names of autograd
and transform state (``requires_grad``, ``grad_fn``, ``is_grad_enabled``...),
which the transform answers otherwise than the speculative trace does, are a
graph break; in functions it calls, a read of such process-wide state (a
folded state query) or of such a tensor attribute is one too
(``OutputGraph.forbidden_tensor_attrs`` while the function is traced
speculatively). A transformed function given to another transform
(``vmap(grad(f))``) is proven pure by its own call inside the outer trace.
"""
from __future__ import annotations

import dis
import inspect
import types
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from bytegraph.breaks import unimplemented
from bytegraph.graph import backend_compile, writes
from bytegraph.graph.writes import storage_id
from bytegraph.graph.side_effects import SideEffects
from bytegraph.guards.source import AttrSource, ConstSource, GetItemSource, GlobalSource, Source
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables import functions
from bytegraph.variables.containers.dicts import DictVariable
from bytegraph.variables.containers.sequences import ListVariable, TupleVariable
from bytegraph.variables.tensors.symbolic import SymNodeVariable
from bytegraph.variables.tensors.tensor import TensorVariable
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: the Python functions a transform may be given directly (a def or a lambda, not a bound method)
USER_FUNCTIONS = (functions.UserFunctionVariable, functions.NestedUserFunctionVariable)


def transform_break(context: str, explanation: str) -> None:
    """A graph break at a transformed call: ``explanation`` (in the context)
    says what in the function makes running it in the graph unsound."""
    unimplemented(gb_type="unsupported torch.func transform", context=f"{context}: {explanation}",
                  explanation="Only a Python function proven to compute from its arguments alone (no side effect, "
                  "no random draw, no graph break) runs under a torch.func transform inside the graph; the "
                  "transformed call runs natively.",
                  hints=("Call the transform outside the compiled function, or make the transformed function "
                         "compute only from its arguments and the tensors and constants it closes over.",))


def _check_code(name: str, code: types.CodeType) -> None:
    """The bytecode checks of a Python function run under a transform."""
    if code.co_flags & _NOT_PLAIN or _writes_freevars(code, frozenset(code.co_freevars)):
        transform_break(name, "The transformed function is a generator or coroutine, or assigns a variable it "
                        "closes over (nonlocal).")
    if _names(code) & TRANSFORM_DEPENDENT:
        transform_break(name, "The transformed function reads autograd or transform state (requires_grad, "
                        "grad_fn, is_grad_enabled...), which the transform answers differently from the trace.")


def check_pure(tx: Tx, name: str, fn: VT, args: Sequence[VT], kwargs: dict[str, VT],
               stand_ins: Callable[[Tx, Sequence[VT]], list[VT]], closure: Sequence[VT] = (),
               replaced: frozenset[int] = frozenset(), roots: dict[Source, Any] | None = None
               ) -> tuple[bool, list[tuple[Source, Any]]]:
    """Trace ``fn(*stand_ins(tx, args), **kwargs)`` once speculatively; a graph
    break unless it is pure (see the module docstring). Its guards are kept.
    Returns whether ``fn`` writes its batched arguments in place (the
    arguments ``stand_ins`` replaced; allowed under ``vmap`` only: the node
    then counts as writing its arguments), and the tensors it reads from
    globals (source and value), which the caller makes node arguments. ``closure``:
    the values ``fn`` closes over that the node is given; ``replaced``: ids
    of the tensors the node puts others in place of (functional_call's), read
    freely; ``roots``: the modules the node holds, by source (tensors read
    through them count as read from globals: see :func:`rebased`)."""
    output = tx.output
    if not output.side_effects.is_empty():
        transform_break(name, "Writes to Python objects are pending in the trace; the transformed function would "
                        "read the objects as they were before them.")
    if isinstance(fn, USER_FUNCTIONS):
        _check_code(name, fn.get_code())
    graph, saved, effects = output.graph, output.trace_state(), output.side_effects
    existing = set(graph.nodes)
    unbacked = len(_pending_symbols(output))
    scratch = output.side_effects = SideEffects()
    queried: list[str] = []
    add_guard, patched = output.guards.add, vars(output.guards).get("add")  # patched: by an outer transform
    output.guards.add = lambda guard: (queried.append(getattr(guard, "label", "")), add_guard(guard))[1]
    reason, writes_args, global_tensors = None, False, []
    forbidden, output.forbidden_tensor_attrs = output.forbidden_tensor_attrs, TRANSFORM_DEPENDENT
    try:
        given_stand_ins = stand_ins(tx, args)
        outside = [n for n in graph.nodes if isinstance(n.meta.get("example_value"), torch.Tensor)]
        given = {storage_id(n.meta["example_value"]) for n in outside}
        batched = {storage_id(a.example) for a, b in zip(args, given_stand_ins)
                   if a is not b and isinstance(a, TensorVariable)}  # vmap's arguments with an in_dim
        if isinstance(fn, USER_FUNCTIONS):
            tx.inline_call(fn, given_stand_ins, dict(kwargs))
        else:  # a transformed function: its own call proves its function pure
            fn.call_function(tx, given_stand_ins, dict(kwargs))
        added = [n for n in graph.nodes if n not in existing]
        writes_args = any(_writes_given(n, batched) for n in added)
        used = {node for n in added for node in n.all_input_nodes} | set(added)
        passed = {v.as_proxy() for v in _graph_values_in([*args, *closure])}
        read = [i for i in output.inputs if i.node in used and i.node not in passed  # by fn, not given to it
                and id(i.value) not in replaced]
        global_tensors = [(i.source, i.value) for i in read]
        given |= {storage_id(i.example) for i in read if isinstance(i.example, torch.Tensor)}
        if TRANSFORM_STATE.intersection(queried):
            reason = "It reads state the transform changes (grad mode, functorch transforms)."
        elif not scratch.is_empty():
            reason = "It has side effects (writes to objects, globals or cells, print or logging)."
        elif not all((from_globals(s) or rebased(s, roots or {}) is not None) and isinstance(v, torch.Tensor)
                     for s, v in global_tensors):
            reason = "It reads tensors other than its arguments, the tensors it closes over and tensors reached " \
                     "from globals (through a local object or a module it closes over)."
        elif len(_pending_symbols(output)) != unbacked or any(n.meta.get("unbacked_bindings") for n in added):
            reason = "It reads a tensor's value (item(), a data-dependent size)."
        elif any(backend_compile.draws_random(n) or n.target is torch._C._set_grad_enabled for n in added):
            reason = "It draws random numbers or sets the grad mode."
        elif any(_writes_given(n, given - batched) for n in added):
            reason = "It writes in place to a tensor it did not create (a closure or global tensor, or an " \
                     "argument of grad or one vmap does not batch)."
    except Exception as e:  # noqa: BLE001 - any failure of the speculative trace: run natively
        reason = f"Tracing its body failed: {e}"
    finally:  # the speculative nodes, inputs and data-dependent symbols go; its guards stay
        output.forbidden_tensor_attrs = forbidden
        if patched is None:
            del output.guards.add
        else:
            output.guards.add = patched
        for node in reversed([n for n in graph.nodes if n not in existing]):
            graph.erase_node(node)
        del _pending_symbols(output)[unbacked:]
        output.restore_trace_state(saved)
        output.side_effects = effects
    if reason is not None:
        transform_break(name, reason)
    return writes_args, global_tensors


def _pending_symbols(output: Any) -> list:
    """The trace's data-dependent symbols not yet bound to an output (none
    without a ShapeEnv; the body traced may start one: ``start_shape_env``)."""
    return output.shape_env.pending_fresh_unbacked_symbols if output.shape_env is not None else []


#: code flags of functions that do not simply run and return
_NOT_PLAIN = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE


def _writes_freevars(code: types.CodeType, names: frozenset[str]) -> bool:
    """Whether ``code`` or a function defined in it assigns or deletes one of
    ``names`` (the transformed function's free variables) through its cell."""
    for inst in dis.get_instructions(code):
        if inst.opname in ("STORE_DEREF", "DELETE_DEREF") and inst.argval in names:
            return True
    inner = (c for c in code.co_consts if isinstance(c, types.CodeType))
    return any(_writes_freevars(c, names & frozenset(c.co_freevars)) for c in inner)


#: names whose reads under a transform answer otherwise than in the speculative trace (a grad
#: transform's inputs require grad, have no grad_fn, and grad mode is on inside it)
TRANSFORM_DEPENDENT = frozenset({"requires_grad", "is_leaf", "grad_fn", "_version", "is_grad_enabled",
                                 "_are_functorch_transforms_active", "is_inference_mode_enabled",
                                 "is_inference", "_is_functorch_wrapped_tensor", "is_batchedtensor"})
#: labels of the process-wide state queries (GlobalStateMatch) the transform changes
TRANSFORM_STATE = frozenset({"grad mode", "functorch transforms", "inference mode"})


def _names(code: types.CodeType) -> frozenset[str]:
    """The global and attribute names ``code`` and the functions defined in it read."""
    inner = (_names(c) for c in code.co_consts if isinstance(c, types.CodeType))
    return frozenset(code.co_names).union(*inner)


def _writes_given(node: torch.fx.Node, given: set) -> bool:
    """Whether ``node`` may write a tensor sharing storage with one in ``given``
    (storage ids of the tensors that exist before the function runs)."""
    targets = writes.written_args(node)
    return targets is None or any(storage_id(t.meta["example_value"]) in given for t in targets)


def _graph_values_in(values: Sequence[VT]) -> list[VT]:
    """The tensors and symbolic numbers among ``values`` and inside their tuples, lists and dicts."""
    return [t for v in values for t in ([v] if isinstance(v, (TensorVariable, SymNodeVariable)) else
                                        _graph_values_in(v.items) if isinstance(v, (TupleVariable, ListVariable))
                                        else _graph_values_in([i for _, i in v.items.values()])
                                        if isinstance(v, DictVariable) else [])]


def rebased(source: Source, roots: dict[Source, Any]) -> Source | None:
    """``source`` (attributes and items from one of ``roots``) read from the
    object ``roots`` gives instead, as a constant; None when it starts elsewhere."""
    if source in roots:
        return ConstSource(roots[source], "a module the node holds")
    if isinstance(source, (AttrSource, GetItemSource)):
        base = rebased(source.base, roots)
        if base is not None:
            return AttrSource(base, source.attr) if isinstance(source, AttrSource) else GetItemSource(base, source.key)
    return None


def from_globals(source: Source) -> bool:
    """Whether ``source`` is a module's global, or attributes and items from one."""
    while isinstance(source, (AttrSource, GetItemSource)):
        source = source.base
    return isinstance(source, GlobalSource)
