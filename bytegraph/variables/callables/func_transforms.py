"""``torch.func`` transforms of Python code called inside compiled code.

Two families, told apart by what the transform returns:

- **function transforms** -- ``grad``, ``grad_and_value``, ``vmap``
  (``torch.vmap``), ``jacrev``, ``jacfwd``, ``hessian`` -- return a function:
  ``transform(f, *options)`` with constant options is a
  :class:`TransformedFunctionVariable`, and its call is one graph node;
- **call transforms** -- ``jvp(f, primals, tangents)``, ``vjp(f, *primals)``
  -- compute at once: the call is one graph node. ``vjp`` also returns a
  function (``vjp_fn``): a :class:`PullbackVariable`, whose call is one more
  node that runs ``vjp`` again on the same inputs and calls the function it
  returns (the values are eager's, ``f`` being pure); it is refused (a graph
  break, or "cannot reconstruct" where it outlives the graph) once one of
  those inputs was written in place since, which eager's function would not
  see. (``linearize`` stays a call to a skipped function: it runs ``make_fx``,
  which a tracing backend cannot run inside its own trace.)

``f`` is a Python function (a ``def`` or a ``lambda``, made in the trace or
read from a source) or itself a transformed function (``vmap(grad(f))``,
``jacrev(jacfwd(f))``). The node's target rebuilds ``f`` (closure tensors and
symbolic numbers as node arguments, so the graph reads their current value;
constants guarded, as the speculative trace reads them, and baked in;
defaults must be constants; a module it closes over is held, its identity
guarded, :func:`.func_functional_call.held_module`; tensors ``f`` reaches
from globals or from such a module, a global ``nn.Module``'s or ``self.net``'s
parameters among them, node arguments put at their places while it runs; arguments are tensors, constants, or
tuples, lists and dicts of tensors) and calls the real transform on it, so
the values are eager's own (the transform runs ``f`` natively when the graph runs); the
node's output comes from running the same target on FakeTensors (on a
thread of its own, :mod:`.func_fake_runs`). That is
sound only when ``f`` computes from its arguments alone, which
:mod:`.func_purity` proves by tracing ``f`` once speculatively on stand-ins for
what the transform passes it (``vmap``: each argument selected at its
``in_dims`` entry; every other transform: the arguments, or primals,
themselves); otherwise the call is a graph break and runs natively (the
transformed function rebuilt for it by calling the transform again).
"""
from __future__ import annotations

import functools
import operator
import re
import types
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from bytegraph.breaks import unimplemented
from bytegraph.guards.source import AttrSource, ConstSource, GlobalSource, Source
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.callables import functions
from bytegraph.variables.callables.func_fake_runs import call_isolated
from bytegraph.variables.callables.func_functional_call import held_module
from bytegraph.variables.callables.func_purity import USER_FUNCTIONS, check_pure, rebased, transform_break
from bytegraph.variables.containers.dicts import DictVariable, LazyDictVariable
from bytegraph.variables.containers.sequences import ListVariable, TupleVariable
from bytegraph.variables.objects.nn_modules import NNModuleVariable
from bytegraph.variables.tensors.graph_calls import graph_call
from bytegraph.variables.tensors.symbolic import SymNodeVariable
from bytegraph.variables.tensors.tensor import TensorVariable
from bytegraph.variables.tx import wrap, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: closure constants baked into the rebuilt function (immutable; guarded by the trace reading them)
_CONSTANT_TYPES = (int, float, bool, complex, str, bytes, type(None), torch.dtype, torch.device,
                   types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type)

#: closure values passed to the node as arguments: tensors and symbolic numbers
_GRAPH_VALUES = (TensorVariable, SymNodeVariable)

#: the transforms that return a function of the inputs
FUNCTION_TRANSFORMS = (torch.func.grad, torch.func.grad_and_value, torch.func.vmap, torch.func.jacrev,
                       torch.func.jacfwd, torch.func.hessian)
#: the transforms called with the function and its inputs at once
CALL_TRANSFORMS = (torch.func.jvp, torch.func.vjp)


def _constant_value(value: Any) -> bool:
    """Whether ``value`` may be baked into the rebuilt function (an immutable constant, or a tuple of them)."""
    if isinstance(value, tuple):
        return all(_constant_value(v) for v in value)
    return isinstance(value, _CONSTANT_TYPES)


def _tensors(values: Sequence[VT]) -> bool:
    """Whether every value is a tensor, or a tuple, list or dict (with
    constant keys) of them: a pytree torch.func walks."""
    return all(isinstance(v, TensorVariable)
               or isinstance(v, (TupleVariable, ListVariable)) and _tensors(v.items)
               or isinstance(v, DictVariable) and v.python_type() is dict and all(
                   k.is_python_constant() for k, _ in v.items.values()) and _tensors(
                   [item for _, item in v.items.values()])
               for v in values)


class FuncTransformVariable(ConstantCallableVariable):
    """A ``torch.func`` transform (``FUNCTION_TRANSFORMS`` or
    ``CALL_TRANSFORMS``) given a Python function or a transformed one. A
    function of any other kind, or options that are not constants, is a graph
    break."""

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        fn = args[0] if args else None
        if not isinstance(fn, (*USER_FUNCTIONS, TransformedFunctionVariable)) or isinstance(
                fn, functions.UserMethodVariable):
            transform_break(f"{self.fn.__name__} of {fn}", "Only a Python function (def or lambda), or a function "
                            "a transform returned, is traced under a torch.func transform.")
        if not all(v.is_python_constant() for v in kwargs.values()):
            transform_break(f"{self.fn.__name__} of {fn}", "The transform's keyword options are not constants.")
        kw_options = {k: v.as_python_constant() for k, v in kwargs.items()}
        if self.fn in CALL_TRANSFORMS:
            return _call_transform(tx, self.fn, fn, args[1:], kw_options)
        if not all(v.is_python_constant() for v in args[1:]):
            transform_break(f"{self.fn.__name__} of {fn}", "The transform's options are not constants.")
        return TransformedFunctionVariable(self.fn, fn, [a.as_python_constant() for a in args[1:]], kw_options)


class TransformedFunctionVariable(VariableTracker):
    """What ``transform(f, *options)`` returned for a Python or transformed
    function ``f``: a call is one graph node (see the module docstring).
    Rebuilt by calling the transform again where a graph break needs it."""

    def __init__(self, transform: Callable, fn: VT, options: list, kw_options: dict):
        super().__init__()
        self.transform, self.wrapped, self.options, self.kw_options = transform, fn, options, kw_options

    def python_type(self) -> type:
        return types.FunctionType

    def get_name(self) -> str:
        return f"{self.transform.__name__}({self.wrapped.get_name()})"

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        name = self.get_name()
        values, build = rebuilder(tx, name, self)
        args = [a.materialize(tx) if isinstance(a, LazyDictVariable) else a for a in args]  # all its leaves
        if not all(isinstance(a, TensorVariable) or a.is_python_constant() for a in kwargs.values()) or not all(
                _tensors([a]) or a.is_python_constant() for a in args):
            transform_break(name, "The transformed function is called with values that are neither tensors (or "
                            "tuples, lists or dicts of them) nor constants.")
        roots = _held_roots(tx, self)
        writes_args, global_tensors = check_pure(tx, name, self.wrapped, args, kwargs, self._stand_ins, values,
                                                 roots=roots)
        values, build = _reading_globals(tx, values, build, global_tensors, roots)
        return graph_call(tx, "call_function", _target(name, build, len(values), _call), [*values, *args], kwargs,
                          mutates_args=writes_args)

    def _stand_ins(self, tx: Tx, args: Sequence[VT]) -> list[VT]:
        """What ``f`` receives under the transform, per argument (vmap: the
        argument selected at its in_dims entry; the others: the argument)."""
        if self.transform is not torch.func.vmap:
            return list(args)
        in_dims = self.kw_options.get("in_dims", self.options[0] if self.options else 0)
        dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        if len(dims) != len(args) or not all(d is None or isinstance(d, int) and (
                _tensors([a]) or a.is_python_constant()) for a, d in zip(args, dims)):
            transform_break("vmap", "Only in_dims of ints and None, one per argument, an int only for a tensor "
                            "or a tuple, list or dict of them, are traced.")
        return [a if d is None or a.is_python_constant() else _select(tx, a, d) for a, d in zip(args, dims)]

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_callable(_transformed)
        codegen.load_const(self.transform)
        codegen.reconstruct(self.wrapped)
        codegen.load_const(tuple(self.options))
        codegen.load_const(tuple(self.kw_options.items()))
        codegen.call(4)

    def __repr__(self) -> str:
        return f"TransformedFunctionVariable({self.transform.__name__}, {self.wrapped})"


def _select(tx: Tx, value: VT, dim: int) -> VT:
    """``value`` (a tensor, or a tuple, list or dict of them) with each tensor
    selected at index 0 of ``dim``: one sample, as vmap passes it."""
    if isinstance(value, TensorVariable):
        return value.call_method(tx, "select", [wrap_const(tx, dim), wrap_const(tx, 0)], {})
    if isinstance(value, DictVariable):
        return DictVariable({k: (key, _select(tx, item, dim)) for k, (key, item) in value.items.items()})
    return type(value)([_select(tx, item, dim) for item in value.items])


def _call_transform(tx: Tx, transform: Callable, fn: VT, args: Sequence[VT], kw_options: dict) -> VT:
    """``jvp(fn, primals, tangents)`` or ``vjp(fn, *primals)``: one graph node
    (and a :class:`PullbackVariable` for the function vjp returns)."""
    name = f"{transform.__name__}({fn.get_name()})"
    values, build = rebuilder(tx, name, fn)
    if transform is torch.func.jvp:
        if len(args) != 2 or not all(isinstance(a, (TupleVariable, ListVariable)) for a in args):
            transform_break(name, "jvp's primals and tangents are not tuples.")
        primals = args[0].items
    else:
        primals = list(args)
    if not _tensors(args) or not all(isinstance(p, TensorVariable) for p in primals):
        transform_break(name, "The transform's inputs are not tensors.")
    roots = _held_roots(tx, fn)
    _, global_tensors = check_pure(tx, name, fn, primals, {}, lambda _, given: list(given), values, roots=roots)
    values, build = _reading_globals(tx, values, build, global_tensors, roots)
    if transform is torch.func.jvp:
        return graph_call(tx, "call_function", _target(name, build, len(values), functools.partial(
            transform, **kw_options)), [*values, *args], {})
    out = graph_call(tx, "call_function", _target(name, build, len(values), functools.partial(
        _without_function, transform, kw_options)), [*values, *primals], {})
    pullback = PullbackVariable(transform, kw_options, build, values, primals, name)
    return TupleVariable([out.items[0], pullback, *out.items[1:]])


class PullbackVariable(VariableTracker):
    """The function ``vjp`` returned (``vjp_fn``) for a pure function: a call
    is one graph node running ``vjp`` again on the same inputs (the closure
    and global values and primals it was made with) and calling the function
    it returns. Refused once one of those inputs was written in place since
    (their FakeTensors' versions moved)."""

    def __init__(self, transform: Callable, kw_options: dict, build: Callable, values: list[VT],
                 primals: list[VT], name: str):
        super().__init__()
        self.transform, self.kw_options, self.build, self.name = transform, kw_options, build, f"{name}_fn"
        self.values, self.primals = values, primals
        self.inputs = [*values, *primals]
        self.versions = [v.example._version for v in self.inputs if isinstance(v, TensorVariable)]

    def python_type(self) -> type:
        return types.FunctionType

    def _written_since(self) -> bool:
        return self.versions != [v.example._version for v in self.inputs if isinstance(v, TensorVariable)]

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if self._written_since():
            transform_break(self.name, "A tensor the transform read was written in place since; the function it "
                            "returned computes from the values it saw.")
        if not _tensors([*args, *kwargs.values()]):
            transform_break(self.name, "It is called with values that are not tensors (or tuples of them).")
        call = functools.partial(_call_returned, self.transform, self.kw_options, len(self.primals))
        return graph_call(tx, "call_function", _target(self.name, self.build, len(self.values), call),
                          [*self.inputs, *args], kwargs)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self._written_since():
            unimplemented(gb_type="cannot reconstruct", context=f"{self.name} is live after the graph",
                          explanation="A tensor the transform read was written in place since it returned this "
                          "function, which computes from the values it saw: it cannot be made again.")
        codegen.load_callable(_returned_function)
        for value in (self.transform, tuple(self.kw_options.items()), self.build,
                      len(self.values)):
            codegen.load_const(value)
        for value in self.inputs:
            codegen.reconstruct(value)
        codegen.call(4 + len(self.inputs))

    def __repr__(self) -> str:
        return f"PullbackVariable({self.name})"


def rebuilder(tx: Tx, name: str, fn: VT) -> tuple[list[VT], Callable[[Sequence[Any]], Callable]]:
    """The values ``fn`` closes over that go to the node as arguments (tensors
    and symbolic numbers, innermost function's first), and how the node's target
    rebuilds ``fn`` from their run-time values: ``build(values)``."""
    if isinstance(fn, TransformedFunctionVariable):
        values, inner = rebuilder(tx, name, fn.wrapped)
        transform, options, kw_options = fn.transform, fn.options, fn.kw_options
        return values, lambda given: transform(inner(given), *options, **kw_options)
    cells = [fn.get_closure_cell(tx, i) for i in range(len(fn.get_code().co_freevars))]
    for cell in cells:
        if not (isinstance(cell, _GRAPH_VALUES) or cell.is_python_constant() and _constant_value(
                cell.as_python_constant()) or held_module(tx, cell)):
            transform_break(name, f"The transformed function closes over {cell}, neither a tensor, a number, a "
                            "constant nor a module read from a source.")
    defaults, kwdefaults = fn.get_defaults(tx)
    if not all(v.is_python_constant() and _constant_value(v.as_python_constant())
               for v in (*defaults, *kwdefaults.values())):
        transform_break(name, "The transformed function's defaults are not constants.")
    code, f_globals = fn.get_code(), fn.get_globals()
    default_values = tuple(d.as_python_constant() for d in defaults) or None
    kwdefault_values = {k: v.as_python_constant() for k, v in kwdefaults.items()} or None
    slots = [i for i, c in enumerate(cells) if isinstance(c, _GRAPH_VALUES)]
    constants = [None if i in slots else c.value if isinstance(c, NNModuleVariable) else c.as_python_constant()
                 for i, c in enumerate(cells)]

    def build(given: Sequence[Any]) -> Callable:
        cell_values = list(constants)
        for slot, value in zip(slots, given):
            cell_values[slot] = value
        rebuilt = types.FunctionType(code, f_globals, code.co_name, default_values,
                                     tuple(types.CellType(v) for v in cell_values) or None)
        rebuilt.__kwdefaults__ = kwdefault_values
        return rebuilt

    return [cells[i] for i in slots], build


def _held_roots(tx: Tx, fn: VT) -> dict[Source, Any]:
    """The modules the innermost function of ``fn`` closes over, by source: the
    node holds them (their identity guarded by :func:`rebuilder`)."""
    while isinstance(fn, TransformedFunctionVariable):
        fn = fn.wrapped
    cells = (fn.get_closure_cell(tx, i) for i in range(len(fn.get_code().co_freevars)))
    return {c.source: c.value for c in cells if isinstance(c, NNModuleVariable) and c.source is not None}


def _reading_globals(tx: Tx, values: list[VT], build: Callable, global_tensors: list[tuple[Source, Any]],
                     roots: dict[Source, Any]) -> tuple[list[VT], Callable[[Sequence[Any]], Callable]]:
    """``values`` and ``build`` extended with the tensors the function reads
    from globals (a global tensor, a global module's parameter): node
    arguments (read, and guarded, as any global), which their places hold while
    the rebuilt function runs (so a tracing backend sees the graph's inputs
    there, not the real tensors as constants). The places are found from the
    globals on each call (a module is guarded by its type, not its identity), or
    from a module the node holds (``roots``)."""
    if not global_tensors:
        return values, build
    n_values, sources = len(values), [rebased(source, roots) or source for source, _ in global_tensors]

    def with_globals(given: Sequence[Any]) -> Callable:
        return functools.partial(_call_with_globals, build(given[:n_values]), sources, given[n_values:])

    return [*values, *(wrap(tx, value, source) for source, value in global_tensors)], with_globals


def _call_with_globals(fn: Callable, sources: list[Source], tensors: Sequence[Any], *args: Any,
                       **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with ``tensors`` at the places ``sources`` name while it runs."""
    places = [_place(source) for source in sources]
    saved = [get(holder, key) for holder, key, get, _ in places]
    for (holder, key, _, put), tensor in zip(places, tensors):
        put(holder, key, tensor)
    try:
        return fn(*args, **kwargs)
    finally:
        for (holder, key, _, put), value in zip(reversed(places), reversed(saved)):
            put(holder, key, value)


def _place(source: Source) -> tuple[Any, Any, Callable, Callable]:
    """Where ``source`` (a global, or attributes and items from one) is now:
    (holder, key, get, put)."""
    if isinstance(source, GlobalSource):
        return source.f_globals, source.var_name, operator.getitem, operator.setitem
    if isinstance(source, AttrSource):
        return _value(source.base), source.attr, getattr, setattr
    return _value(source.base), source.key, operator.getitem, operator.setitem


def _value(source: Source) -> Any:
    """The current value at ``source`` (a global or a held object, or attributes and items from one)."""
    if isinstance(source, ConstSource):
        return source.value
    holder, key, get, _ = _place(source)
    return get(holder, key)


def _target(name: str, build: Callable, n_values: int, call: Callable) -> Callable:
    """The graph node's target: ``target(*values, *args, **kwargs)`` is
    ``call(build(values), *args, **kwargs)`` (on FakeTensors: on a thread of
    its own, :mod:`.func_fake_runs`)."""
    def target(*args: Any, **kwargs: Any) -> Any:
        return call_isolated(lambda *given, **named: call(build(given[:n_values]), *given[n_values:], **named),
                             *args, **kwargs)

    # no trailing "_": a name like grad__f_ would read as an in-place operation writing its first argument
    target.__name__ = target.__qualname__ = re.sub(r"\W+", "_", name).strip("_")
    return target


def _call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``: the call of a rebuilt transformed function."""
    return fn(*args, **kwargs)


def _without_function(transform: Callable, kw_options: dict, fn: Callable, *primals: Any) -> tuple:
    """``transform(fn, *primals)`` (vjp) without the function it returns at index 1."""
    result = transform(fn, *primals, **kw_options)
    return (result[0], *result[2:])


def _call_returned(transform: Callable, kw_options: dict, n_primals: int, fn: Callable, *args: Any,
                   **kwargs: Any) -> Any:
    """``transform(fn, *primals)[1](*rest)`` for ``args`` the primals then the rest."""
    return transform(fn, *args[:n_primals], **kw_options)[1](*args[n_primals:], **kwargs)


def _returned_function(transform: Callable, kw_options: tuple, build: Callable, n_values: int,
                       *inputs: Any) -> Callable:
    """The function ``transform`` returns (index 1), made again where a graph break needs it."""
    return transform(build(inputs[:n_values]), *inputs[n_values:], **dict(kw_options))[1]


def _transformed(transform: Callable, fn: Callable, options: tuple, kw_options: tuple) -> Callable:
    """``transform(fn, *options, **dict(kw_options))``: what a graph break rebuilds."""
    return transform(fn, *options, **dict(kw_options))
