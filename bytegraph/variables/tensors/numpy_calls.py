"""NumPy calls in the trace: how a NumPy operation on traced values becomes a
graph node (:func:`numpy_call`, :func:`numpy_operator`) and how its result is
wrapped, with NumPy's semantics (NumPy scalars, copies where ``torch._numpy``
aliases, breaks where it copies a view, writes into arguments), checked
against real NumPy run on stand-in values (:class:`_Reference`).

This module and :mod:`~bytegraph.variables.tensors.ndarray` use each other, so
each imports the other as a module.
"""
from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, NoReturn, Sequence

import torch
import torch.fx
from torch.utils import _pytree as pytree

from bytegraph.breaks import unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.containers.named_tuples import NamedTupleVariable
from bytegraph.variables.containers.sequences import ListVariable, SliceVariable, TupleVariable
from bytegraph.variables.tensors import ndarray, numpy_ops as npops
from bytegraph.variables.tensors.graph_calls import graph_call, graph_node, overloaded_args, wrap_fx_value
from bytegraph.variables.tensors.symbolic import FakeItemVariable, SYMBOLIC_TYPES, SymNodeVariable
from bytegraph.variables.tensors.tensor import TensorVariable
from bytegraph.variables.tx import wrap_const
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker


def _flat(values: Sequence[VT]) -> list[VT]:
    out = []
    for value in values:
        out += _flat(value.items) if isinstance(value, (TupleVariable, ListVariable)) else [value]
    return out


def _numpy_arg(vt: VT) -> VT:
    """A NumPy call's argument as the graph receives it: dtype-like constants as
    their names (torch._numpy accepts them), containers item by item."""
    if isinstance(vt, (TupleVariable, ListVariable)) and not isinstance(vt, NamedTupleVariable):
        return vt.with_items([_numpy_arg(v) for v in vt.items])
    if vt.is_python_constant() and not isinstance(vt, SliceVariable):
        name = npops.dtype_name(vt.as_python_constant())
        if name is not None:
            return ConstantVariable(name)
    return vt


def numpy_call(tx: Tx, op: npops.NumpyOp, args: Sequence[VT], kwargs: dict[str, VT], view_name: str = "") -> VT:
    """Add the NumPy operation ``op`` on ``args`` to the graph and wrap its result
    the way NumPy would return it.

    ``view_name`` overrides ``op.name`` for the view tables (basic vs advanced
    indexing). Results: ndarray VTs (NumPy scalars for the 0-d results NumPy
    gives as scalars), constants, tuples of them; an operation that writes into
    an argument (``a += b``, ``out=``) returns that argument's VT. Real NumPy
    runs the same call on stand-in values (:class:`_Reference`) to settle what
    torch._numpy cannot tell and to check it.

    Raises:
        Unsupported: for tensors among the arguments (mixing is not modelled),
            when torch._numpy fails or disagrees with NumPy (NumPy rejects the
            arguments, another dtype, a copy where NumPy gives a view), or for
            a write into a NumPy scalar.
    """
    ndarray.numpy_unavailable(f"NumPy {op.kind} {op.name}")
    flat = _flat([*args, *kwargs.values()])
    if any(isinstance(v, TensorVariable) for v in flat):
        args, kwargs = _tensors_as_arrays(tx, op, args, kwargs)
    if op.name in npops.TIE_ORDER_OPS:
        kind = kwargs.get("kind", args[2] if len(args) > 2 else ConstantVariable(None))
        if not (kind.is_python_constant() and kind.as_python_constant() in npops.STABLE_KINDS):
            unimplemented(
                gb_type="numpy tie order",
                context=f"NumPy {op.kind} {op.name} without kind='stable'",
                explanation="NumPy's default sort and torch's order equal elements differently, so the indices "
                "could differ from eager; only stable sorts are traced.",
                hints=("Pass kind='stable' (the result is then the same in NumPy and compiled code).",),
            )
    renames = npops.KWARG_RENAMES.get(op.name, {}) if op.kind == "function" else {}
    graph_args = [_numpy_arg(a) for a in args]
    graph_kwargs = {renames.get(k, k): _numpy_arg(v) for k, v in kwargs.items()}
    arrays = [v for v in flat if isinstance(v, ndarray.NumpyNdarrayVariable)]
    versions = [a.example._version for a in arrays]
    node, example = graph_node(tx, "call_function", op, graph_args, graph_kwargs)
    mutated = [a for a, v in zip(arrays, versions) if a.example._version != v]
    if mutated:
        node.meta["mutates_args"] = True  # OutputGraph.mutates_inputs reads it
        if any(a.scalar or a.readonly for a in mutated):
            unimplemented(
                gb_type="user error",
                context=f"NumPy {op.kind} {op.name} writes into a NumPy scalar or a read-only view",
                explanation="NumPy raises here (scalars are immutable; views such as np.diagonal's are read-only); "
                "the code runs natively so the error is NumPy's.",
                hints=("Write into a writeable array (a copy) instead.",),
            )
    leaves = pytree.tree_leaves(example)
    constant = not any(isinstance(leaf, (torch.Tensor, *SYMBOLIC_TYPES)) for leaf in leaves)
    reference = _Reference(op, args, kwargs, force=constant or op.name in npops.SHAPE_CHECKED_OPS or any(
        isinstance(leaf, torch.Tensor) and leaf.dim() == 0 for leaf in leaves))
    name = view_name or op.name
    if isinstance(example, torch.Tensor):
        for array in mutated:
            if array.example is example:
                return array  # written in place, like a += b
        if name in npops.IDENTITY_OPS and arrays and args and args[0] is arrays[0] and not arrays[0].scalar and (
            example.dtype == arrays[0].example.dtype and example.shape == arrays[0].example.shape
        ):
            if not node.users:
                tx.output.remove_node(node)
            return arrays[0]  # np.asarray(a) is a
        return _numpy_value(tx, op, name, node, example, arrays, reference.item(None))
    if constant:
        if not mutated:  # a metadata answer (np.ndim, np.shape...): nothing to run
            tx.output.remove_node(node)
        if example is not None:
            reference.check_constant(example)
        return wrap_const(tx, example)
    result = wrap_fx_value(tx, node, example)
    if isinstance(result, (TupleVariable, ListVariable)):
        return result.with_items([
            _numpy_value(tx, op, name, item.node, item.example, arrays, reference.item(index))
            if isinstance(item, TensorVariable) else item
            for index, item in enumerate(result.items)
        ])
    return result


def _numpy_value(tx: Tx, op: npops.NumpyOp, name: str, node: torch.fx.Node, example: torch.Tensor,
                 arrays: list[ndarray.NumpyNdarrayVariable], reference: Any) -> ndarray.NumpyNdarrayVariable:
    """An ndarray VT for one tensor result of ``op``, with NumPy's view and scalar
    semantics. ``reference``: NumPy's result for it (:data:`_UNKNOWN` when not asked)."""
    np = npops.np
    if reference is not _UNKNOWN:
        if not isinstance(reference, (np.ndarray, np.generic)) or reference.dtype != npops.numpy_dtype(example.dtype):
            unimplemented(
                gb_type="numpy dtype mismatch",
                context=f"NumPy {op.kind} {op.name}: NumPy gives {getattr(reference, 'dtype', type(reference))}, "
                f"torch._numpy {example.dtype}",
                explanation="torch._numpy computes a different dtype (or kind of result) than NumPy here.",
                hints=("Cast explicitly (astype) or run this outside the compiled function.",),
            )
        shape = _hint_shape(example)
        if reference.shape != shape:
            if reference.size > 1 or math.prod(shape) > 1:
                unimplemented(
                    gb_type="numpy shape mismatch",
                    context=f"NumPy {op.kind} {op.name}: NumPy gives shape {reference.shape}, torch._numpy "
                    f"{shape}",
                    explanation="torch._numpy computes a differently shaped result than NumPy here.",
                    hints=("Reshape explicitly or run this outside the compiled function.",),
                )
            # one element either way (np.median(a) is (1,) in torch._numpy): only the shape is off
            fixed = graph_call(tx, "call_method", "reshape", [TensorVariable(node, example), wrap_const(tx, 
                reference.shape)], {})
            node, example = fixed.node, fixed.example
    elif example.dim() == 0:
        unimplemented(
            gb_type="numpy result kind",
            context=f"0-d result of NumPy {op.kind} {op.name}",
            explanation="bytegraph could not ask NumPy whether it returns a scalar or a 0-d array here.",
            hints=("Use the operation outside the compiled function.",),
        )
    scalar = isinstance(reference, np.generic)
    storage = example.untyped_storage()
    sources = [a for a in arrays if a.example.untyped_storage()._cdata == storage._cdata]
    aliased = bool(sources)
    readonly = aliased and (name in npops.READONLY_VIEW_OPS or any(a.readonly for a in sources))
    if aliased and (scalar or name not in npops.VIEW_OPS):
        # NumPy returns new memory here (a scalar, a ufunc result...): copy what torch._numpy aliased
        clone = graph_call(tx, "call_method", "clone", [TensorVariable(node, example)], {})
        node, example, readonly = clone.node, clone.example, False
    elif name in npops.ALWAYS_VIEW_OPS and arrays and not aliased and example.numel() > 0:
        unimplemented(
            gb_type="numpy view semantics",
            context=f"NumPy {op.kind} {op.name}",
            explanation="NumPy returns a view here but torch._numpy returns a copy (e.g. np.flip, a[::-1]), so "
            "writes through one would not reach the other.",
            hints=("Use the operation outside the compiled function, or copy explicitly.",),
        )
    return ndarray.NumpyNdarrayVariable(node, example, scalar=scalar, readonly=readonly)


_UNKNOWN = object()


class _Reference:
    """Real NumPy's result for a call, on stand-in values of the arguments'
    dtypes and shapes (:func:`bytegraph.variables.tensors.numpy_ops.standin`).

    NumPy is asked when the call has a 0-d or constant result (whether NumPy
    returns a scalar, and the constant, are needed: this costs at most one pass
    over the inputs) and when the inputs are small (:data:`REFERENCE_ELEMENTS`),
    to check dtypes and that NumPy accepts the arguments: a TypeError from
    NumPy is a graph break, so the native run raises it. Other errors
    (read-only stand-ins written in place, values) leave the answer unknown.
    """

    def __init__(self, op: npops.NumpyOp, args: Sequence[VT], kwargs: dict[str, VT], force: bool):
        self.op = op
        self.value: Any = _UNKNOWN
        try:
            sargs = [_standin(a) for a in args]
            skwargs = {k: _standin(v) for k, v in kwargs.items()}
        except _NoStandin:
            return
        size = sum(x.size for x in pytree.tree_leaves((sargs, skwargs)) if isinstance(x, npops.np.ndarray))
        if not force and size > REFERENCE_ELEMENTS:
            return
        raised, value = npops.numpy_reference(lambda: op.reference(*sargs, **skwargs))
        if raised and isinstance(value, TypeError):
            unimplemented(
                gb_type="numpy rejects arguments",
                context=f"NumPy {op.kind} {op.name}: {type(value).__name__}: {value}",
                explanation="NumPy raises for these arguments where torch._numpy accepts them; the call runs "
                "natively so the error is NumPy's.",
                hints=("Check the arguments against NumPy's signature.",),
            )
        if not raised:
            self.value = value

    def item(self, index: int | None) -> Any:
        """NumPy's result, or its ``index``-th item; :data:`_UNKNOWN` when not known."""
        if index is None or self.value is _UNKNOWN:
            return self.value
        if isinstance(self.value, (tuple, list)) and len(self.value) > index:
            return self.value[index]
        return _UNKNOWN

    def check_constant(self, value: Any) -> None:
        """Graph-break unless NumPy answers ``value`` too (torch._numpy has no NumPy
        scalars, so questions about them, like ``np.isscalar``, can differ)."""
        if type(self.value) is not type(value) or self.value != value:
            answer = "could not be asked" if self.value is _UNKNOWN else f"gives {self.value!r}"
            unimplemented(
                gb_type="numpy result kind",
                context=f"NumPy {self.op.kind} {self.op.name} gives {value!r} in torch._numpy; NumPy {answer}",
                explanation="torch._numpy answers this differently from NumPy (or NumPy could not be asked).",
                hints=("Use the operation outside the compiled function.",),
            )


#: inputs up to this many elements in all are checked against NumPy on every call
REFERENCE_ELEMENTS = 1 << 16


def _tensors_as_arrays(tx: Tx, op: npops.NumpyOp, args: Sequence[VT], kwargs: dict[str, VT]
                       ) -> tuple[list[VT], dict[str, VT]]:
    """A NumPy function given tensors (``np.ones_like(t)``), as the same call
    given ``t.numpy()`` for each: eager converts a tensor through the array
    protocol (``Tensor.__array__`` is ``t.numpy()``, sharing memory), unless the
    function calls the tensor's own methods (``np.sum(t)`` is ``t.sum()``) or
    wraps its result back into a tensor (ufuncs, ``Tensor.__array_wrap__``).
    Real NumPy tells the cases apart: run on stand-ins, it must answer alike
    (result types, dtypes, shapes) given tensors and given their arrays.

    Raises:
        Unsupported: ``tensor passed to numpy`` otherwise (an operator or method
            with a tensor operand, a tensor in a container, one ``numpy()``
            refuses, answers that differ, or NumPy could not be asked).
    """
    def refuse(why: str) -> NoReturn:
        unimplemented(
            gb_type="tensor passed to numpy",
            context=f"NumPy {op.kind} {op.name} given a tensor: {why}",
            explanation="Only NumPy functions that take a tensor as np.asarray(t) does are traced with tensors; "
            "this call runs natively.",
            hints=("Convert explicitly with t.numpy() or torch.from_numpy(a).",),
        )

    values = [*args, *kwargs.values()]
    tensors = [v for v in values if isinstance(v, TensorVariable)]
    if op.kind != "function" or len(tensors) != len([v for v in _flat(values) if isinstance(v, TensorVariable)]):
        refuse("the tensor is an operand of an ndarray operator or method, or inside a container")
    for t in tensors:
        ex = t.example
        if overloaded_args(tx, [t]) or npops.numpy_dtype(ex.dtype) is None or ex.requires_grad or (
            ex.device.type != "cpu" or ex.layout is not torch.strided or ex.is_conj() or ex.is_neg()
            or any(isinstance(s, torch.SymInt) for s in ex.shape) or ex.numel() > REFERENCE_ELEMENTS
        ):
            refuse(f"{t} is not a small plain CPU tensor numpy() converts")

    def standins(as_tensor: bool) -> tuple[list[Any], dict[str, Any]]:
        def one(vt: VT) -> Any:
            if not isinstance(vt, TensorVariable):
                return _standin(vt)
            array = npops.standin(vt.example.dtype, tuple(vt.example.shape), False)
            return torch.ones((), dtype=vt.example.dtype).expand(array.shape) if as_tensor else array
        try:
            return [one(a) for a in args], {k: one(v) for k, v in kwargs.items()}
        except _NoStandin:
            refuse("NumPy cannot be asked about these arguments")

    answers = []
    for as_tensor in (True, False):
        sargs, skwargs = standins(as_tensor)
        raised, value = npops.numpy_reference(lambda: op.reference(*sargs, **skwargs))
        answers.append(_ANY_EXCEPTION if raised else _answer_kind(value))
    if _ANY_EXCEPTION in answers or answers[0] != answers[1]:
        refuse("NumPy answers differently given the tensor than given its array (or raises)")
    arrays = {id(t): ndarray.tensor_to_numpy(tx, t, [], {}) for t in tensors}
    return [arrays.get(id(a), a) for a in args], {k: arrays.get(id(v), v) for k, v in kwargs.items()}


_ANY_EXCEPTION = object()


def _answer_kind(value: Any) -> Any:
    """What of a reference NumPy result must agree: container structure, the type
    of each item, an array's dtype and shape, a scalar's value."""
    if isinstance(value, (tuple, list)):
        return type(value), tuple(_answer_kind(v) for v in value)
    if isinstance(value, npops.np.ndarray):
        return npops.np.ndarray, value.dtype, value.shape
    if isinstance(value, torch.Tensor):
        return torch.Tensor, id(value)  # never equal: a tensor result is the tensor's own code
    return type(value), value


class _NoStandin(Exception):
    pass


def _standin(vt: VT) -> Any:
    """A real value standing for ``vt`` in a reference NumPy call (see
    :class:`_Reference`); raises _NoStandin for values it cannot stand for."""
    if isinstance(vt, ndarray.NumpyNdarrayVariable):
        return npops.standin(vt.example.dtype, _hint_shape(vt.example), vt.scalar)
    if isinstance(vt, SymNodeVariable) and not isinstance(vt, FakeItemVariable):
        return vt.example.node.hint
    if isinstance(vt, (TupleVariable, ListVariable)) and not isinstance(vt, NamedTupleVariable):
        return vt.python_type()([_standin(v) for v in vt.items])
    if isinstance(vt, SliceVariable):
        return slice(*(_standin(p) for p in vt.parts))
    if vt.is_python_constant():
        return vt.as_python_constant()
    raise _NoStandin


def _hint_shape(example: torch.Tensor) -> tuple[int, ...]:
    """The sizes of ``example`` at the example inputs (symbolic sizes by their hints: no guard)."""
    return tuple(int(s.node.hint) if isinstance(s, torch.SymInt) else int(s) for s in example.shape)


def _basic_index(index: VT) -> bool:
    """Whether ``a[index]`` is NumPy basic indexing (ints, slices, None, Ellipsis),
    which returns a view, rather than advanced indexing, which copies."""
    items = index.items if isinstance(index, TupleVariable) and not isinstance(index, NamedTupleVariable) else [index]
    for item in items:
        if isinstance(item, (SliceVariable, SymNodeVariable)):
            continue
        if not (item.is_python_constant() and (item.as_python_constant() in (None, Ellipsis) or type(
            item.as_python_constant()
        ) is int)):
            return False
    return True


def numpy_operator(tx: Tx, fn: Any, args: Sequence[VT]) -> VT:
    """An operator (``a + b``, ``-a``, ``a[i]``, ``a[i] = v``, ``a += b``) with an ndarray operand."""
    name = npops.OPERATOR_NAMES[fn]
    if fn is operator.getitem:
        name = "getitem" if _basic_index(args[1]) else "getitem_advanced"
    if fn is operator.setitem and isinstance(args[0], ndarray.NumpyNdarrayVariable) and args[0].scalar:
        unimplemented(
            gb_type="user error",
            context="item assignment into a NumPy scalar",
            explanation="NumPy scalars are immutable; the traced code raises, natively, as in eager.",
            hints=("Assign into an array instead.",),
        )
    return numpy_call(tx, npops.operator_op(fn, npops.OPERATOR_NAMES[fn]), list(args), {}, view_name=name)
