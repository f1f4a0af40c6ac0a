"""Python builtins and ``operator`` functions applied to traced values.

:class:`BuiltinVariable` stands for one builtin callable (``len``,
``isinstance``, ``operator.add``...). A call is answered, in order, by:

1. a dedicated handler ``_call_<name>`` when the builtin needs VT-level logic
   (``len``, ``isinstance``, ``getattr``, ``enumerate``...);
2. the graph, when an argument is a tensor and the builtin is an operator;
3. constant folding, when every argument is a constant and the builtin is pure;
4. otherwise a graph break naming the builtin.

The bytecode's operators (``BINARY_OP``, ``COMPARE_OP``...) come here as the
matching ``operator`` functions.
"""
from __future__ import annotations

import builtins
import functools
import math
import operator
import types
from typing import TYPE_CHECKING, Any, Sequence

import torch

from bytegraph.breaks import HINT_REWRITE, Unsupported, unimplemented, user_error
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.constant import ConstantVariable, is_constant_value, raise_traced, raise_traced_from
from bytegraph.variables.exceptions import ExceptionVariable
from bytegraph.variables.misc import EnvironVariable
from bytegraph.variables.dicts import DictVariable, DictViewVariable, LazyDictVariable, as_dict
from bytegraph.variables.iteration import (
    EnumerateVariable,
    FilterVariable,
    IteratorVariable,
    ListIteratorVariable,
    MapVariable,
    ZipVariable,
)
from bytegraph.variables.sequences import BaseSequenceVariable, ListVariable, SizeVariable, SliceVariable, TupleVariable
from bytegraph.variables.sets import SetVariable
from bytegraph.variables.graph_calls import graph_call, overloaded_args
from bytegraph.variables.ndarray import NumpyNdarrayVariable, numpy_operator
from bytegraph.variables.symbolic import SymNodeVariable
from bytegraph.variables.tensor import TensorVariable
from bytegraph.variables.tensor_handles import DataPtrVariable
from bytegraph.variables.user_defined import SlotMethodVariable, SuperVariable, UserDefinedObjectVariable

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker

#: operator functions that become graph nodes when a tensor is involved.
TENSOR_OPERATORS = frozenset(
    {
        operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
        operator.mod, operator.pow, operator.matmul, operator.and_, operator.or_,
        operator.xor, operator.lshift, operator.rshift, operator.neg, operator.pos,
        operator.invert, operator.abs, operator.eq, operator.ne, operator.lt,
        operator.le, operator.gt, operator.ge, operator.getitem,
        operator.iadd, operator.isub, operator.imul, operator.itruediv,
        operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul,
        operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift,
        builtins.abs, builtins.pow,
    }
)

#: operators of sets (constant items): folded to a new set or a bool.
SET_OPERATORS = frozenset({
    operator.or_, operator.and_, operator.sub, operator.xor, operator.le, operator.lt, operator.ge,
    operator.gt, operator.eq, operator.ne,
})

#: in-place operator -> its out-of-place twin, for immutable operands.
INPLACE_TO_BINARY = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv,
    operator.imod: operator.mod, operator.ipow: operator.pow, operator.imatmul: operator.matmul,
    operator.iand: operator.and_, operator.ior: operator.or_, operator.ixor: operator.xor,
    operator.ilshift: operator.lshift, operator.irshift: operator.rshift,
}

#: in-place set operators -> the set method that performs them.
_SET_INPLACE = {
    operator.ior: "update", operator.iand: "intersection_update",
    operator.isub: "difference_update", operator.ixor: "symmetric_difference_update",
}

#: builtins safe to evaluate at trace time on constant arguments.
PURE_BUILTINS = frozenset(
    {
        abs, all, any, ascii, bin, bool, callable, chr, complex, divmod, float, format,
        frozenset, hash, hex, int, isinstance, issubclass, len, max, min, oct, ord, pow,
        repr, round, sorted, str, sum, tuple, type, range, slice, getattr, hasattr,
        reversed, enumerate, zip, list, dict, set, bytes, map, filter,
    }
    | {getattr(operator, name) for name in dir(operator) if not name.startswith("_")}
    | {getattr(math, name) for name in dir(math) if callable(getattr(math, name))}
) - {operator.setitem, operator.delitem, operator.iconcat,
     # identity is not a property of values: as_python_constant() of a list VT is a copy
     operator.is_, operator.is_not}

#: binary operator -> (method, reflected method), as Python looks them up
BINARY_DUNDERS = {
    operator.add: ("__add__", "__radd__"), operator.sub: ("__sub__", "__rsub__"),
    operator.mul: ("__mul__", "__rmul__"), operator.truediv: ("__truediv__", "__rtruediv__"),
    operator.floordiv: ("__floordiv__", "__rfloordiv__"), operator.mod: ("__mod__", "__rmod__"),
    operator.pow: ("__pow__", "__rpow__"), operator.matmul: ("__matmul__", "__rmatmul__"),
    operator.and_: ("__and__", "__rand__"), operator.or_: ("__or__", "__ror__"),
    operator.xor: ("__xor__", "__rxor__"), operator.lshift: ("__lshift__", "__rlshift__"),
    operator.rshift: ("__rshift__", "__rrshift__"), operator.eq: ("__eq__", "__eq__"),
    operator.ne: ("__ne__", "__ne__"), operator.lt: ("__lt__", "__gt__"), operator.le: ("__le__", "__ge__"),
    operator.gt: ("__gt__", "__lt__"), operator.ge: ("__ge__", "__le__"), pow: ("__pow__", "__rpow__"),
}
#: unary operator -> its method
UNARY_DUNDERS = {operator.neg: "__neg__", operator.pos: "__pos__", operator.invert: "__invert__",
                  operator.abs: "__abs__", abs: "__abs__"}



def _dict_union(tx: Tx, a: DictVariable, b: DictVariable) -> DictVariable:
    """``a | b``: ``b``'s kind (class, default factory) when its class is a
    proper subclass of ``a``'s (its ``__ror__`` goes first: OrderedDict,
    defaultdict), else ``a``'s; ``a``'s items updated with ``b``'s."""
    b_first = b.dict_cls is not a.dict_cls and issubclass(b.dict_cls, a.dict_cls)
    merged = (b if b_first else a).empty_like()
    for key, value in [*a.items.values(), *b.items.values()]:
        merged.store(tx, key, value)
    return merged


class BuiltinVariable(ConstantCallableVariable):
    """A builtin function or ``operator``/``math`` function."""

    def var_getattr(self, tx: Tx, name: str) -> VT:
        """``object.__setattr__``, ``dict.__setitem__``...: methods of builtin types
        applied explicitly to an instance; other attributes are read as constants."""
        if self.fn is object and name == "__new__":
            return SlotMethodVariable(object, "__new__", None)
        if isinstance(self.fn, type):
            attr = self.fn.__dict__.get(name)
            if isinstance(attr, (types.WrapperDescriptorType, types.MethodDescriptorType)):
                return SlotMethodVariable(self.fn, name, None)
            if hasattr(self.fn, name):
                return tx.wrap_const(getattr(self.fn, name))
        return super().var_getattr(tx, name)

    def __repr__(self) -> str:
        return f"BuiltinVariable({getattr(self.fn, '__name__', self.fn)})"

    # ---- dispatch ----------------------------------------------------------
    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        fn = self.fn
        if isinstance(fn, type) and issubclass(fn, BaseException) and not kwargs:
            return ExceptionVariable(fn, args)
        name = getattr(fn, "__name__", "")
        handler = getattr(self, f"_call_{name}", None) if _HANDLED.get(name) is fn else None
        if handler is not None:
            result = handler(tx, *args, **kwargs)
            if result is not None:
                return result
        if fn in TENSOR_OPERATORS and not kwargs and args:
            target = args[0]
            on_array = isinstance(target, NumpyNdarrayVariable) and not target.scalar
            container = target.mutable and not isinstance(target, NumpyNdarrayVariable)  # lst += a extends lst
            if any(isinstance(a, NumpyNdarrayVariable) for a in args) and not container:
                if fn in INPLACE_TO_BINARY and not on_array:
                    fn = INPLACE_TO_BINARY[fn]  # NumPy scalars and Python values are immutable: a = a op b
                return numpy_operator(tx, fn, args)
            if overloaded_args(tx, args):
                return tx.subclass_operator(fn, args)
        pointer = next((a for a in args if isinstance(a, DataPtrVariable)), None)
        if pointer is not None:
            return pointer.call_operator(tx, fn, args)
        # ``a op= b`` mutates ``a`` only when ``a`` is a tensor; on any other left
        # operand it is that type's own in-place rule (list extend, dict update)
        # or, for immutable values, the binary operator.
        inplace_on_tensor = fn in INPLACE_TO_BINARY and bool(args) and isinstance(args[0], TensorVariable)
        if fn in INPLACE_TO_BINARY and not inplace_on_tensor and not kwargs and len(args) == 2:
            result = self._inplace(tx, args)
            if result is not None:
                return result
        symbolic = any(isinstance(a, (TensorVariable, SymNodeVariable)) for a in args)
        if fn in TENSOR_OPERATORS and symbolic and not kwargs:
            if fn in INPLACE_TO_BINARY and not inplace_on_tensor and any(isinstance(a, TensorVariable) for a in args):
                unimplemented(
                    gb_type="unsupported builtin call",
                    context=f"{name}({', '.join(type(a).__name__ for a in args)})",
                    explanation=f"bytegraph cannot trace in-place {name} on a {args[0].python_type().__name__} "
                    "with a tensor operand.",
                    hints=(HINT_REWRITE,),
                )
            return self._tensor_operator(tx, args)
        if (fn in PURE_BUILTINS or bound_to_constant(fn)) and all(_foldable(a) for a in args) and all(_foldable(v) for v in kwargs.values()):
            result = self._fold(tx, args, kwargs)  # symbolic scalars are specialised (guarded) here
            if result is not None:
                return result
        result = self._sequence_operator(tx, args) if not kwargs else None
        if result is not None:
            return result
        result = tx.call_dunder(fn, args, kwargs)
        if result is not None:
            return result
        unimplemented(
            gb_type="unsupported builtin call",
            context=f"{name or fn}({', '.join(type(a).__name__ for a in args)})",
            explanation=f"bytegraph cannot trace builtin {name or fn} with these argument kinds.",
            hints=(HINT_REWRITE,),
        )

    def _fold(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
        """Evaluate the call on the arguments' constant values now.

        A mutable argument (list, dict, set) is folded as a *copy*; a result
        that is itself a mutable object may be (part of) that argument, whose
        identity the copy lost, so such folds return None (not folded).
        """
        values = [a.as_python_constant() for a in args]
        kw = {k: v.as_python_constant() for k, v in kwargs.items()}
        if any(_runs_user_code(v) for v in (*values, *kw.values())):
            return None  # calling it now would run user code at trace time only
        try:
            result = self.fn(*values, **kw)
        except Exception as e:  # the eager program raises the same error natively
            raise_traced_from(e)
        if any(a.mutable for a in (*args, *kwargs.values())) and not is_constant_value(result):
            return None
        if isinstance(result, (map, filter, zip, enumerate, reversed, type(iter([])), type(iter(())))):
            return ListIteratorVariable([tx.wrap_const(v) for v in result])
        return tx.wrap_const(result)

    def _tensor_operator(self, tx: Tx, args: Sequence[VT]) -> VT:
        fn = self.fn
        if fn is operator.getitem and isinstance(args[0], TensorVariable):
            return args[0].call_method(tx, "__getitem__", args[1:], {})
        if fn is builtins.abs:
            fn = operator.abs
        return graph_call(tx, "call_function", fn, list(args), {})

    def _inplace(self, tx: Tx, args: Sequence[VT]) -> VT | None:
        target, value = args
        if isinstance(target, ListVariable) and self.fn is operator.iadd:
            target.call_method(tx, "extend", [value], {})  # a deque's extend respects its maxlen
            return target
        if isinstance(target, (DictVariable, LazyDictVariable)) and self.fn is operator.ior:
            target.call_method(tx, "update", [value], {})
            return target
        if isinstance(target, ListVariable) and self.fn is operator.imul and value.is_python_constant():
            tx.output.side_effects.mutate(target)
            target.items[:] = target.with_items(target.items * value.as_python_constant()).items
            return target
        if isinstance(target, SetVariable) and target.set_cls is set and self.fn in _SET_INPLACE:
            if not isinstance(value, SetVariable):
                return None  # eager raises TypeError: a graph break runs it natively
            target.call_method(tx, _SET_INPLACE[self.fn], [value], {})
            return target
        if target.mutable:
            return None  # an in-place operator bytegraph does not model on this mutable object
        if target.is_python_constant() or isinstance(target, (TupleVariable, SymNodeVariable)):
            return BuiltinVariable(INPLACE_TO_BINARY[self.fn]).call_function(tx, args, {})
        return None

    def _sequence_operator(self, tx: Tx, args: Sequence[VT]) -> VT | None:
        fn = self.fn
        if fn in (operator.concat, operator.iconcat) and len(args) == 2 and isinstance(args[0], BaseSequenceVariable):
            # concat(a, b) is a + b for sequences (iconcat: a += b), Modules/_operator.c
            return tx.call_builtin(operator.add if fn is operator.concat else operator.iadd, list(args))
        if len(args) == 2 and fn in SET_OPERATORS and all(
                isinstance(a, SetVariable) or isinstance(a, DictViewVariable) and a.is_python_constant() for a in args
        ) and any(isinstance(a, SetVariable) for a in args):
            # a new set (or a bool), never an operand; a keys view takes part as the set of its keys
            operands = [a.values if isinstance(a, SetVariable) else a.as_python_constant() for a in args]
            result = fn(*operands)
            if isinstance(result, (set, frozenset)):
                return SetVariable([ConstantVariable(v) for v in result], type(result))
            return ConstantVariable(result)
        if len(args) == 2:
            a, b = args
            if fn is operator.getitem:
                return a.call_method(tx, "__getitem__", [b], {})
            if fn is operator.contains:
                return self._contains(tx, a, b)
            if fn in (operator.is_, operator.is_not):
                same = tx.same_object(a, b)
                if same is None:
                    return None
                return ConstantVariable(same if fn is operator.is_ else not same)
            if fn is operator.add and isinstance(a, BaseSequenceVariable) and type(a) is type(b):
                return a.with_items(a.items + b.items)
            if fn is operator.add and isinstance(a, BaseSequenceVariable) and isinstance(b, BaseSequenceVariable):
                if issubclass(a.python_type(), tuple) and issubclass(b.python_type(), tuple):
                    # torch.Size's __add__/__radd__ keep the Size (tuples have no nb_add to go first)
                    if isinstance(a, SizeVariable) or isinstance(b, SizeVariable):
                        return SizeVariable(a.items + b.items)
                    return TupleVariable(a.items + b.items)
            if fn is operator.mul and isinstance(a, BaseSequenceVariable) and b.is_python_constant():
                return a.with_items(a.items * b.as_python_constant())
            if fn is operator.mul and isinstance(b, BaseSequenceVariable) and a.is_python_constant():
                return b.with_items(b.items * a.as_python_constant())
            if fn in (operator.eq, operator.ne) and isinstance(a, BaseSequenceVariable) and isinstance(
                b, BaseSequenceVariable
            ):
                equal = issubclass(a.python_type(), tuple) == issubclass(b.python_type(), tuple) and len(
                    a.items
                ) == len(b.items) and all(  # the same object is equal to itself without asking it (PyObject_RichCompareBool)
                    tx.same_object(x, y) or tx.call_builtin(operator.eq, [x, y]).truthy(tx)
                    for x, y in zip(a.items, b.items)
                )
                return ConstantVariable(equal if fn is operator.eq else not equal)
            if fn in (operator.eq, operator.ne):
                same = tx.same_object(a, b)
                if same is not None and (same or _identity_eq(a) and _identity_eq(b)):
                    return ConstantVariable(same if fn is operator.eq else not same)
            if fn is operator.or_ and as_dict(tx, a) is not None and as_dict(tx, b) is not None:
                return _dict_union(tx, as_dict(tx, a), as_dict(tx, b))
        if len(args) == 1 and fn is operator.not_:
            return ConstantVariable(not args[0].truthy(tx))
        if len(args) == 1 and fn is operator.truth:
            return ConstantVariable(args[0].truthy(tx))
        return None

    def _contains(self, tx: Tx, container: VT, item: VT) -> VT | None:
        if isinstance(container, UserDefinedObjectVariable) and container.python_method(tx, "__contains__"):
            return None  # the user's __contains__ decides (tx.call_dunder), not iteration
        if isinstance(container, (DictVariable, LazyDictVariable, EnvironVariable)):
            return container.call_method(tx, "__contains__", [item], {})
        if isinstance(container, TensorVariable):
            return container.call_method(tx, "__contains__", [item], {})
        if container.has_unpack_var_sequence(tx) and not isinstance(container, IteratorVariable):
            for element in container.unpack_var_sequence(tx):
                if tx.same_object(element, item):
                    return ConstantVariable(True)
                if tx.call_builtin(operator.eq, [element, item]).truthy(tx):
                    return ConstantVariable(True)
            return ConstantVariable(False)
        return None

    # ---- handlers: each returns a VT, or None to fall through ----------------
    def _call_len(self, tx: Tx, obj: VT) -> VT | None:
        if obj.is_python_constant() and not isinstance(obj, (BaseSequenceVariable, DictVariable)):
            return None  # folded
        return obj.call_method(tx, "__len__", [], {})

    def _call_isinstance(self, tx: Tx, obj: VT, classes: VT) -> VT | None:
        cls = classes.as_python_constant()
        try:
            return ConstantVariable(tx.isinstance_of(obj, cls))
        except TypeError as e:
            raise_traced_from(e)

    def _call_issubclass(self, tx: Tx, cls: VT, classes: VT) -> VT | None:
        return None  # constant folding handles it

    def _call_type(self, tx: Tx, obj: VT, *rest: VT) -> VT | None:
        if rest:
            return None
        return tx.wrap_const(obj.python_type())

    def _call_getattr(self, tx: Tx, obj: VT, name: VT, *default: VT) -> VT | None:
        attr = name.as_python_constant()
        if default and not obj.has_attr(tx, attr):
            return default[0]
        return obj.var_getattr(tx, attr)

    def _call_hasattr(self, tx: Tx, obj: VT, name: VT) -> VT | None:
        return ConstantVariable(obj.has_attr(tx, name.as_python_constant()))

    def _call_setattr(self, tx: Tx, obj: VT, name: VT, value: VT) -> VT | None:
        obj.store_attr(tx, name.as_python_constant(), value)
        return ConstantVariable(None)

    def _call_delattr(self, tx: Tx, obj: VT, name: VT) -> VT | None:
        obj.delete_attr(tx, name.as_python_constant())
        return ConstantVariable(None)

    def _call_callable(self, tx: Tx, obj: VT) -> VT | None:
        return ConstantVariable(_instances_are_callable(obj.python_type()))

    def _call_iter(self, tx: Tx, obj: VT, *rest: VT) -> VT | None:
        if rest:
            return None
        return tx.get_iter(obj)

    def _call_next(self, tx: Tx, it: VT, *default: VT) -> VT | None:
        if isinstance(it, IteratorVariable):
            item = it.next_item(tx)
            if item is None:
                if default:
                    return default[0]
                return it.call_method(tx, "__next__", [], {})
            return item
        return None

    def _call_bool(self, tx: Tx, obj: VT | None = None) -> VT | None:
        if obj is None:
            return ConstantVariable(False)
        return ConstantVariable(obj.truthy(tx))

    def _call_list(self, tx: Tx, obj: VT | None = None) -> VT | None:
        return ListVariable(tx.unpack(obj) if obj is not None else [])

    def _call_tuple(self, tx: Tx, obj: VT | None = None) -> VT | None:
        if isinstance(obj, TupleVariable) and obj.python_type() is tuple:
            return obj
        return TupleVariable(tx.unpack(obj) if obj is not None else [])

    def _call_dict(self, tx: Tx, *args: VT, **kwargs: VT) -> VT | None:
        result = DictVariable({})
        result.call_method(tx, "update", list(args), kwargs)
        return result

    def _call_set(self, tx: Tx, obj: VT | None = None) -> VT | None:
        return SetVariable(tx.unpack(obj) if obj is not None else [])

    def _call_frozenset(self, tx: Tx, obj: VT | None = None) -> VT | None:
        return SetVariable(tx.unpack(obj) if obj is not None else [], frozenset)

    def _call_enumerate(self, tx: Tx, obj: VT, start: VT | None = None) -> VT | None:
        first = start.as_python_constant() if start is not None else 0
        return EnumerateVariable(tx.get_iter(obj), first)

    def _call_zip(self, tx: Tx, *iterables: VT, strict: VT | None = None) -> VT | None:
        return ZipVariable([tx.get_iter(it) for it in iterables], bool(strict and strict.as_python_constant()))

    def _call_map(self, tx: Tx, fn: VT, *iterables: VT) -> VT | None:
        return MapVariable(fn, [tx.get_iter(it) for it in iterables])

    def _call_filter(self, tx: Tx, fn: VT, iterable: VT) -> VT | None:
        keep_truthy = fn.is_python_constant() and fn.as_python_constant() is None
        return FilterVariable(None if keep_truthy else fn, tx.get_iter(iterable))

    def _call_reversed(self, tx: Tx, obj: VT) -> VT | None:
        if isinstance(obj, (BaseSequenceVariable, DictVariable, LazyDictVariable)) or obj.is_python_constant():
            return ListIteratorVariable(list(reversed(tx.unpack(obj))))
        return None

    def _call_sorted(self, tx: Tx, obj: VT, key: VT | None = None, reverse: VT | None = None) -> VT | None:
        items = tx.unpack(obj)
        rev = reverse.as_python_constant() if reverse is not None else False
        return ListVariable(tx.sort_items(items, key or ConstantVariable(None), rev))

    def _call_sum(self, tx: Tx, iterable: VT, start: VT | None = None) -> VT | None:
        if iterable.is_python_constant() and (start is None or start.is_python_constant()):
            return None
        total = start if start is not None else ConstantVariable(0)
        for item in tx.unpack(iterable):
            total = tx.call_builtin(operator.add, [total, item])
        return total

    def _short_circuit(self, tx: Tx, iterable: VT, stop_on: bool) -> VT:
        iterator = tx.get_iter(iterable)
        while (item := iterator.next_item(tx)) is not None:
            if item.truthy(tx) == stop_on:
                return ConstantVariable(stop_on)
        return ConstantVariable(not stop_on)

    def _call_any(self, tx: Tx, iterable: VT) -> VT | None:
        return None if iterable.is_python_constant() else self._short_circuit(tx, iterable, True)

    def _call_all(self, tx: Tx, iterable: VT) -> VT | None:
        return None if iterable.is_python_constant() else self._short_circuit(tx, iterable, False)

    def _minmax(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
        """min/max of symbolic scalars (``torch.sym_min``/``sym_max`` in the graph), or
        over one iterable whose items are constants: the winning item's own VT
        (so a list item keeps its identity)."""
        if len(args) == 2 and not kwargs and any(isinstance(a, SymNodeVariable) for a in args) and all(
            isinstance(a, SymNodeVariable) or a.is_python_constant() for a in args
        ):
            a, b = args
            if a.python_type() is b.python_type():
                target = torch.sym_min if self.fn is min else torch.sym_max
                return graph_call(tx, "call_function", target, [a, b], {})
            # max(2, 2.5) is the winning operand itself, int or float: decide (a guard) and pick it
            b_wins = tx.call_builtin(operator.gt if self.fn is max else operator.lt, [b, a]).truthy(tx)
            return b if b_wins else a
        if not args or set(kwargs) - {"key", "default"} or (len(args) > 1 and "default" in kwargs):
            return None
        if len(args) == 1 and isinstance(args[0], ConstantVariable) and "key" not in kwargs:
            return None  # folded
        items = list(args) if len(args) > 1 else tx.unpack(args[0])
        if not all(i.is_python_constant() for i in items):
            return None
        if not items:
            return kwargs["default"] if "default" in kwargs else None  # None: eager's ValueError by folding
        key = kwargs.get("key", ConstantVariable(None))
        use_key = not (key.is_python_constant() and key.as_python_constant() is None)
        keys = [(key.call_function(tx, [i], {}) if use_key else i).as_python_constant() for i in items]
        pick = max if self.fn is max else min
        try:
            return items[pick(range(len(items)), key=keys.__getitem__)]
        except TypeError as e:
            raise_traced_from(e)

    def _call_min(self, tx: Tx, *args: VT, **kwargs: VT) -> VT | None:
        return self._minmax(tx, args, kwargs)

    def _call_max(self, tx: Tx, *args: VT, **kwargs: VT) -> VT | None:
        return self._minmax(tx, args, kwargs)

    def _call_locals(self, tx: Tx) -> VT | None:
        """``locals()``: a new dict of the frame's bound variables, in CPython's order
        (arguments and locals, cells, free variables); bytegraph's own names
        (resume functions' ``___stack`` arguments) left out."""
        code = tx.code
        items = {}
        for name in (*code.co_varnames, *code.co_cellvars, *code.co_freevars):
            if name.startswith("___") or name in items:
                continue
            if name in code.co_freevars and name not in tx.symbolic_locals:
                try:
                    items[name] = tx.load_freevar(name)
                except Unsupported:
                    continue  # an empty cell: absent from locals(), as in eager
            elif name in tx.symbolic_locals:
                items[name] = tx.symbolic_locals[name]
        return DictVariable({name: (ConstantVariable(name), value) for name, value in items.items()})

    def _call_super(self, tx: Tx, *args: VT) -> VT | None:
        if args:
            cls, obj = args
            return SuperVariable(cls.as_python_constant(), obj)
        cls = tx.load_freevar("__class__").as_python_constant()
        code = tx.code
        first = tx.symbolic_locals.get(code.co_varnames[0]) if code.co_argcount else None
        if first is None:
            user_error(
                "RuntimeError (the function has no positional parameter, or the first one was deleted)",
                context="super() without a first argument",
                hint="Give the method a first parameter, or call super(cls, obj).",
            )
        return SuperVariable(cls, first)

    def _call_slice(self, tx: Tx, *args: VT) -> VT | None:
        none = ConstantVariable(None)
        if len(args) == 1:
            return SliceVariable(none, args[0], none)
        parts = list(args) + [none] * (3 - len(args))
        return SliceVariable(*parts)

    def _call_print(self, tx: Tx, *args: VT, **kwargs: VT) -> VT | None:
        unimplemented(
            gb_type="print",
            context="call to print()",
            explanation="print() writes to a stream, a side effect that cannot be captured in a graph.",
            hints=("Remove the print from the compiled region, or accept the graph break.",),
        )

    def _call_id(self, tx: Tx, obj: VT) -> VT | None:
        """``id(obj)`` of an object read from a source: a constant, guarded by identity."""
        ident = tx.identity_of(obj)
        if ident is None or obj.source is None or not tx.guard_identity(obj):
            unimplemented(
                gb_type="id of traced value",
                context=f"id() of {obj}",
                explanation="The identity of an object created during tracing is not known until it runs, and "
                "objects that cannot be weakly referenced (lists, dicts) are not guarded by identity.",
                hints=("Avoid id() on values created inside the compiled function.",),
            )
        return ConstantVariable(ident)

    def _call_int(self, tx: Tx, *args: VT) -> VT | None:
        return self._scalar_conversion(tx, "int", args)

    def _call_float(self, tx: Tx, *args: VT) -> VT | None:
        return self._scalar_conversion(tx, "float", args)

    def _scalar_conversion(self, tx: Tx, name: str, args: Sequence[VT]) -> VT | None:
        if args and isinstance(args[0], TensorVariable):
            return args[0].call_method(tx, f"__{name}__", [], {})
        if len(args) == 1 and isinstance(args[0], SymNodeVariable):
            if args[0].python_type() is (int if name == "int" else float):
                return args[0]
            return graph_call(tx, "call_function", torch.sym_int if name == "int" else torch.sym_float, list(args), {})
        return None

    def _call_str(self, tx: Tx, *args: VT) -> VT | None:
        if len(args) == 1 and isinstance(args[0], ExceptionVariable):
            folded = args[0].as_text(str)
            if folded is not None:
                return ConstantVariable(folded)
        if len(args) == 1 and isinstance(args[0], UserDefinedObjectVariable):
            text = _str_through_python_dunder(tx, args[0])
            if text is not None:
                return text
        if args and not args[0].is_python_constant():
            unimplemented(
                gb_type="str of traced value",
                context=f"str() of {args[0]}",
                explanation="The string form of this value is not known at trace time.",
                hints=(HINT_REWRITE,),
            )
        return None


def _str_through_python_dunder(tx: Tx, obj: UserDefinedObjectVariable) -> VT | None:
    """``str(obj)`` when the class answers it in Python: its ``__str__``, or, with
    object's ``__str__``, its ``__repr__`` (``Objects/object.c``: ``PyObject_Str``);
    None when C code would answer (the default repr holds an address)."""
    method = obj.python_method(tx, "__str__")
    if method is None and obj.special_method(tx, "__str__") is object.__str__:
        method = obj.python_method(tx, "__repr__")
    if method is None:
        return None
    result = method.call_function(tx, [], {})
    if not (result.is_python_constant() and isinstance(result.as_python_constant(), str)):
        raise_traced(TypeError, f"__str__ returned non-string (type {result.python_type().__name__})")
    return result


def bound_to_constant(fn: Any) -> bool:
    """Whether ``fn`` is a builtin method of an immutable constant
    (``"a,b".split``, ``keyword.iskeyword``, a frozenset's ``__contains__``):
    pure, so folded on constant arguments."""
    owner = getattr(fn, "__self__", None)
    if not isinstance(fn, types.BuiltinMethodType) or owner is None or isinstance(owner, types.ModuleType):
        return False
    if type(owner) is frozenset:
        return all(is_constant_value(v) for v in owner)
    return is_constant_value(owner)


def _foldable(vt: VT) -> bool:
    return vt.is_python_constant() or isinstance(vt, SymNodeVariable)


def _runs_user_code(value: Any) -> bool:
    """Whether passing ``value`` to a builtin may call Python code of the user
    (a key function, a callable object...)."""
    if isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
        return True
    return callable(value) and not isinstance(value, (type, types.BuiltinFunctionType, types.BuiltinMethodType))


def _identity_eq(vt: VT) -> bool:
    """Whether ``==`` on this kind of value defaults to identity."""
    from_type = vt.python_type()
    return from_type.__eq__ is object.__eq__


def _instances_are_callable(cls: type) -> bool:
    """``callable(x)`` for any ``x`` of type ``cls``: whether the class (not its
    metaclass) defines ``__call__``."""
    return any("__call__" in vars(klass) for klass in cls.__mro__)


_HANDLED = {
    name[len("_call_"):]: getattr(builtins, name[len("_call_"):])
    for name in dir(BuiltinVariable)
    if name.startswith("_call_") and hasattr(builtins, name[len("_call_"):])
}


class OperatorGetterVariable(VariableTracker):
    """``operator.itemgetter(*keys)``, ``attrgetter(*names)`` or
    ``methodcaller(name, *args, **kwargs)``: calling it applies the traced
    subscript, attribute read or method call."""

    def __init__(self, kind: type, args: Sequence[VT], kwargs: dict[str, VT]):
        super().__init__()
        self.kind = kind
        self.args = list(args)
        self.kwargs = dict(kwargs)

    def python_type(self) -> type:
        return self.kind

    def truthy(self, tx: Tx) -> bool:
        return True

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        (obj,) = args
        if self.kind is operator.methodcaller:
            name = self.args[0].as_python_constant()
            return obj.var_getattr(tx, name).call_function(tx, self.args[1:], self.kwargs)
        results = [self._one(tx, obj, key) for key in self.args]
        return results[0] if len(results) == 1 else tx.make_tuple(results)

    def _one(self, tx: Tx, obj: VT, key: VT) -> VT:
        if self.kind is operator.itemgetter:
            return tx.call_builtin(operator.getitem, [obj, key])
        for part in key.as_python_constant().split("."):
            obj = obj.var_getattr(tx, part)
        return obj

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_callable(self.kind)
        for arg in self.args:
            codegen.reconstruct(arg)
        for value in self.kwargs.values():
            codegen.reconstruct(value)
        if self.kwargs:
            codegen.emit("KW_NAMES", tuple(self.kwargs))
        codegen.call(len(self.args) + len(self.kwargs))
