"""``torch.func.grad``/``grad_and_value``/``vmap`` of Python code called inside compiled code.

``torch.func.grad(f)(x)`` with ``f`` a Python function (a ``def`` or a
``lambda``, made in the trace or read from a source) becomes one graph node
whose target rebuilds ``f`` and calls the real transform on it, so the values
are eager's own (the transform runs ``f`` natively when the graph runs); the
node's output comes from running the same target on FakeTensors. Running
``f`` outside the trace is sound only when ``f`` does nothing but compute
from its arguments, so before the node is made ``f``'s body is traced once
speculatively (its nodes removed after), with stand-ins for what the transform passes
(``x`` itself for ``grad``, ``x`` selected at its ``in_dims`` entry for
``vmap``). The transformed call is a graph break unless that trace:

- takes no graph break and raises nothing;
- records no side effect (no write to a global, an attribute or a container
  that outlives the call; no print or log; ``f`` is no generator and assigns
  none of its free variables, checked on its bytecode) and finds none pending
  from before (``f`` would read the real objects, not their traced state);
- draws nothing from the random number generator, sets no grad mode and
  writes in place to no tensor it did not create, but for ``vmap``'s batched
  arguments (written by the node as eager's vmap writes them; the node then
  counts as writing its arguments, for the aliasing guard);
- reads no tensor other than its arguments and closure cells.

What ``f`` itself reads is checked on its bytecode: names of autograd and
transform state (``requires_grad``, ``grad_fn``, ``is_grad_enabled``...),
which the transform answers otherwise than the speculative trace does, are a
graph break; in functions it calls, a read of such process-wide state (a
folded state query) or of such a tensor attribute is one too
(``OutputGraph.forbidden_tensor_attrs`` while ``f`` is traced speculatively).

``f``'s closure cells must hold tensors, symbolic numbers or constants: the
first two become node arguments (so the graph reads their current value),
constants are guarded (as the speculative trace reads them) and baked into the
rebuilt function; its defaults must be constants. The guards the speculative
trace installs (on ``f.__code__``, on the globals it reads) are kept.
"""
from __future__ import annotations

import dis
import inspect
import re
import types
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from bytegraph.breaks import unimplemented
from bytegraph.graph import backend_compile, output_graph, writes
from bytegraph.graph.side_effects import SideEffects
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.callables import functions
from bytegraph.variables.tensors.graph_calls import graph_call
from bytegraph.variables.tensors.symbolic import SymNodeVariable
from bytegraph.variables.tensors.tensor import TensorVariable
from bytegraph.variables.tx import wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: closure constants baked into the rebuilt function (immutable; guarded by the trace reading them)
_CONSTANT_TYPES = (int, float, bool, complex, str, bytes, type(None), torch.dtype, torch.device,
                   types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type)

#: closure values passed to the node as arguments: tensors and symbolic numbers
_GRAPH_VALUES = (TensorVariable, SymNodeVariable)


def _break(context: str, explanation: str) -> None:
    """A graph break at a transformed call: ``explanation`` (in the context)
    says what in the function makes running it in the graph unsound."""
    unimplemented(gb_type="unsupported torch.func transform", context=f"{context}: {explanation}",
                  explanation="Only a Python function proven to compute from its arguments alone (no side effect, "
                  "no random draw, no graph break) runs under a torch.func transform inside the graph; the "
                  "transformed call runs natively.",
                  hints=("Call the transform outside the compiled function, or make the transformed function "
                         "compute only from its arguments and the tensors and constants it closes over.",))


def _constant_value(value: Any) -> bool:
    """Whether ``value`` may be baked into the rebuilt function (an immutable constant, or a tuple of them)."""
    if isinstance(value, tuple):
        return all(_constant_value(v) for v in value)
    return isinstance(value, _CONSTANT_TYPES)


class FuncTransformVariable(ConstantCallableVariable):
    """``torch.func.grad``/``grad_and_value``/``vmap`` (``torch.vmap``) given a
    Python function and constant options: a :class:`TransformedFunctionVariable`.
    A function that is not Python code, or options that are not constants, is
    a graph break."""

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        fn = args[0] if args else None
        options = [*args[1:], *kwargs.values()]
        if not isinstance(fn, (functions.UserFunctionVariable, functions.NestedUserFunctionVariable)) or isinstance(
                fn, functions.UserMethodVariable) or not all(v.is_python_constant() for v in options):
            _break(f"{self.fn.__name__} of {fn}", "Only a Python function (def or lambda) with constant options is "
                   "traced under a torch.func transform.")
        return TransformedFunctionVariable(self.fn, fn, [a.as_python_constant() for a in args[1:]],
                                           {k: v.as_python_constant() for k, v in kwargs.items()})


class TransformedFunctionVariable(VariableTracker):
    """What ``transform(f, *options)`` returned for a Python function ``f``: a
    call is one graph node (see the module docstring). Rebuilt by calling the
    transform again where a graph break needs it."""

    def __init__(self, transform: Callable, fn: VT, options: list, kw_options: dict):
        super().__init__()
        self.transform, self.wrapped, self.options, self.kw_options = transform, fn, options, kw_options

    def python_type(self) -> type:
        return types.FunctionType

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        name = f"{self.transform.__name__}({self.wrapped.get_name()})"
        cells = self._closure(tx, name)
        defaults, kwdefaults = self.wrapped.get_defaults(tx)
        if not all(v.is_python_constant() and _constant_value(v.as_python_constant())
                   for v in (*defaults, *kwdefaults.values())):
            _break(name, "The transformed function's defaults are not constants.")
        if not all(isinstance(a, TensorVariable) or a.is_python_constant() for a in (*args, *kwargs.values())):
            _break(name, "The transformed function is called with values that are neither tensors nor constants.")
        writes_args = self._check_pure(tx, name, args, kwargs)
        tensors = [c for c in cells if isinstance(c, _GRAPH_VALUES)]
        target = _target(self.transform, self.options, self.kw_options, self.wrapped.get_code(),
                         self.wrapped.get_globals(), tuple(d.as_python_constant() for d in defaults),
                         {k: v.as_python_constant() for k, v in kwdefaults.items()},
                         [c if isinstance(c, _GRAPH_VALUES) else c.as_python_constant() for c in cells], name)
        return graph_call(tx, "call_function", target, [*tensors, *args], kwargs, mutates_args=writes_args)

    def _closure(self, tx: Tx, name: str) -> list[VT]:
        """The closure cells' current values (tensors, symbolic numbers or guarded constants)."""
        cells = [self.wrapped.get_closure_cell(tx, i) for i in range(len(self.wrapped.get_code().co_freevars))]
        for cell in cells:
            if not (isinstance(cell, _GRAPH_VALUES) or cell.is_python_constant()
                    and _constant_value(cell.as_python_constant())):
                _break(name, f"The transformed function closes over {cell}, neither a tensor, a number nor a constant.")
        return cells

    def _stand_ins(self, tx: Tx, args: Sequence[VT]) -> list[VT]:
        """What ``f`` receives under the transform, per argument (vmap: the
        argument selected at its in_dims entry)."""
        if self.transform is not torch.func.vmap:
            return list(args)
        in_dims = self.kw_options.get("in_dims", self.options[0] if self.options else 0)
        dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        if len(dims) != len(args) or not all(d is None or isinstance(d, int) for d in dims):
            _break("vmap", "Only in_dims of ints and None, one per argument, are traced.")
        return [a if d is None or not isinstance(a, TensorVariable)
                else a.call_method(tx, "select", [wrap_const(tx, d), wrap_const(tx, 0)], {})
                for a, d in zip(args, dims)]

    def _check_pure(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> bool:
        """Trace ``f`` once speculatively; a graph break unless it is pure
        (see the module docstring). Its guards are kept. Returns whether ``f``
        writes its batched arguments in place (allowed under ``vmap`` only: the
        node then counts as writing its arguments)."""
        output = tx.output
        if not output.side_effects.is_empty():
            _break(name, "Writes to Python objects are pending in the trace; the transformed function would read "
                   "the objects as they were before them.")
        code = self.wrapped.get_code()
        if code.co_flags & _NOT_PLAIN or _writes_freevars(code, frozenset(code.co_freevars)):
            _break(name, "The transformed function is a generator or coroutine, or assigns a variable it closes "
                   "over (nonlocal).")
        if _names(code) & TRANSFORM_DEPENDENT:
            _break(name, "The transformed function reads autograd or transform state (requires_grad, grad_fn, "
                   "is_grad_enabled...), which the transform answers differently from the trace.")
        graph, saved, effects = output.graph, output.trace_state(), output.side_effects
        existing = set(graph.nodes)
        unbacked = len(_pending_symbols(output))
        scratch = output.side_effects = SideEffects()
        queried: list[str] = []
        add_guard, patched = output.guards.add, vars(output.guards).get("add")  # patched: by an outer transform
        output.guards.add = lambda guard: (queried.append(getattr(guard, "label", "")), add_guard(guard))[1]
        reason, writes_args = None, False
        forbidden, output.forbidden_tensor_attrs = output.forbidden_tensor_attrs, TRANSFORM_DEPENDENT
        try:
            stand_ins = self._stand_ins(tx, args)
            outside = [n for n in graph.nodes if isinstance(n.meta.get("example_value"), torch.Tensor)]
            given = {output_graph.storage_id(n.meta["example_value"]) for n in outside}
            batched = {output_graph.storage_id(a.example) for a, b in zip(args, stand_ins)
                       if a is not b and isinstance(a, TensorVariable)}  # vmap's arguments with an in_dim
            tx.inline_call(self.wrapped, stand_ins, dict(kwargs))
            added = [n for n in graph.nodes if n not in existing]
            writes_args = any(_writes_given(n, batched) for n in added)
            if TRANSFORM_STATE.intersection(queried):
                reason = "It reads state the transform changes (grad mode, functorch transforms)."
            elif not scratch.is_empty():
                reason = "It has side effects (writes to objects, globals or cells, print or logging)."
            elif len(output.inputs) != len(saved["inputs"]):
                reason = "It reads tensors other than its arguments and the tensors it closes over."
            elif len(_pending_symbols(output)) != unbacked or any(n.meta.get("unbacked_bindings") for n in added):
                reason = "It reads a tensor's value (item(), a data-dependent size)."
            elif any(backend_compile.draws_random(n) or n.target is torch._C._set_grad_enabled for n in added):
                reason = "It draws random numbers or sets the grad mode."
            elif any(_writes_given(n, given - batched) for n in added):
                reason = "It writes in place to a tensor it did not create (a closure tensor, or an argument of " \
                         "grad or one vmap does not batch)."
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
            _break(name, reason)
        return writes_args

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_callable(_transformed)
        codegen.load_const(self.transform)
        codegen.reconstruct(self.wrapped)
        codegen.load_const(tuple(self.options))
        codegen.load_const(tuple(self.kw_options.items()))
        codegen.call(4)

    def __repr__(self) -> str:
        return f"TransformedFunctionVariable({self.transform.__name__}, {self.wrapped})"


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


def _pending_symbols(output: Any) -> list:
    """The trace's data-dependent symbols not yet bound to an output (none without a ShapeEnv)."""
    return output.shape_env.pending_fresh_unbacked_symbols if output.shape_env is not None else []


def _writes_given(node: torch.fx.Node, given: set) -> bool:
    """Whether ``node`` may write a tensor sharing storage with one in ``given``
    (storage ids of the tensors that exist before the function runs)."""
    targets = writes.written_args(node)
    return targets is None or any(output_graph.storage_id(t.meta["example_value"]) in given for t in targets)


def _transformed(transform: Callable, fn: Callable, options: tuple, kw_options: tuple) -> Callable:
    """``transform(fn, *options, **dict(kw_options))``: what a graph break rebuilds."""
    return transform(fn, *options, **dict(kw_options))


def _target(transform: Callable, options: list, kw_options: dict, code: types.CodeType, f_globals: dict,
            defaults: tuple, kwdefaults: dict, cell_values: list, name: str) -> Callable:
    """The graph node's target (``cell_values``: constants, and the closure
    tensors' and numbers' VTs where they go): ``target(*closure_values, *args, **kwargs)``
    rebuilds the function (closure tensors in their cells) and returns
    ``transform(f, *options, **kw_options)(*args, **kwargs)``."""
    slots = [i for i, v in enumerate(cell_values) if isinstance(v, _GRAPH_VALUES)]
    cell_values = [None if i in slots else v for i, v in enumerate(cell_values)]

    def target(*args: Any, **kwargs: Any) -> Any:
        values = list(cell_values)
        for slot, tensor in zip(slots, args):
            values[slot] = tensor
        fn = types.FunctionType(code, f_globals, code.co_name, defaults or None,
                                tuple(types.CellType(v) for v in values) or None)
        fn.__kwdefaults__ = kwdefaults or None
        return transform(fn, *options, **kw_options)(*args[len(slots):], **kwargs)

    target.__name__ = target.__qualname__ = re.sub(r"\W", "_", name)
    return target
