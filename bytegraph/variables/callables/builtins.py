"""Python builtins and ``operator`` functions applied to traced values.

:class:`BuiltinVariable` stands for one builtin callable (``len``,
``isinstance``, ``operator.add``...). A call is answered, in order, by:

1. a dedicated handler ``_call_<name>`` when the builtin needs VT-level logic
   (``len``, ``isinstance``, ``getattr``, ``enumerate``...);
2. for an operator, the operands' kinds (the operator protocol of
   :mod:`~bytegraph.variables.operators`: CPython's forward, reflected and
   in-place order over ``binary_op`` and friends);
3. constant folding, when every argument is a constant and the builtin is pure;
4. ``in``, ``is``, ``not`` (:func:`~bytegraph.variables.operators.protocol_operator`);
5. for a pure builtin, a call made now on stand-ins for user objects read as
   numbers (:mod:`~bytegraph.variables.objects.number_stand_ins`);
6. otherwise a graph break naming the builtin.

The bytecode's operators (``BINARY_OP``, ``COMPARE_OP``...) come here as the
matching ``operator`` functions (:func:`call_builtin`).
"""
from __future__ import annotations

import ast
import builtins
import operator
import types
from typing import TYPE_CHECKING, Any, Sequence

import torch

from bytegraph.breaks import HINT_REWRITE, Unsupported, unimplemented, user_error
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.callables.super_calls import SuperVariable
from bytegraph.variables.constant import ConstantVariable, is_constant_value, raise_traced, raise_traced_from
from bytegraph.variables.containers.dicts import DictVariable, LazyDictVariable, dict_of
from bytegraph.variables.containers.iterator_tools import (
    EnumerateVariable,
    FilterVariable,
    MapVariable,
    ZipVariable,
)
from bytegraph.variables.containers.iterators import IteratorVariable, ListIteratorVariable, iterator_type
from bytegraph.variables.containers.sequences import (
    BaseSequenceVariable,
    ListVariable,
    SliceVariable,
    TupleVariable,
    read_items,
)
from bytegraph.variables.containers.sorting import sort_items
from bytegraph.variables.containers.sets import SetVariable
from bytegraph.variables.exceptions import ExceptionVariable
from bytegraph.variables.objects.class_lookup import class_attribute
from bytegraph.variables.objects.class_statements import ClassMemberVariable
from bytegraph.variables.objects.number_stand_ins import call_with_stand_ins
from bytegraph.variables.runtime_values import RuntimeValueVariable, held_by_frames
from bytegraph.variables.objects.slot_methods import SlotMethodVariable
from bytegraph.variables.objects.user_objects import NewObjectVariable
from bytegraph.variables import tx as protocol
from bytegraph.variables.operators import (
    IMMUTABLE_BUILTIN_TYPES,
    NOT_FOLDED,
    PURE_BUILTINS,
    TENSOR_OPERATORS,
    apply_operator,
    as_vt,
    call_operator,
    computes_from_arguments,
    evaluate,
    foldable,
    protocol_operator,
    tp_name,
    unsupported_builtin,
)
from bytegraph.variables.tensors.graph_calls import graph_call
from bytegraph.variables.tensors.symbolic import SymNodeVariable, convert_scalar
from bytegraph.variables.tensors.tensor import TensorVariable
from bytegraph.variables.tx import wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class BuiltinVariable(ConstantCallableVariable):
    """A builtin function or ``operator``/``math`` function."""

    def var_getattr(self, tx: Tx, name: str) -> VT:
        """``object.__setattr__``, ``dict.__setitem__``...: methods of builtin types
        applied explicitly to an instance; other attributes are read as constants."""
        if name == "__new__" and (self.fn in (object, list) or self.fn in IMMUTABLE_BUILTIN_TYPES):
            return SlotMethodVariable(self.fn, "__new__", None)
        if isinstance(self.fn, type):
            attr = self.fn.__dict__.get(name)
            if isinstance(attr, (types.WrapperDescriptorType, types.MethodDescriptorType)):
                return SlotMethodVariable(self.fn, name, None)
            if hasattr(self.fn, name):
                return wrap_const(tx, getattr(self.fn, name))
        elif is_constant_value(getattr(self.fn, name, None)) and hasattr(self.fn, name):
            return wrap_const(tx, getattr(self.fn, name))  # a builtin function's __name__, __doc__...: read-only
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
            try:
                result = handler(tx, *args, **kwargs)
            except TypeError as e:
                if e.__traceback__.tb_next is not None:  # raised inside the handler, not by binding its arguments
                    raise
                result = None  # arguments the handler does not take: folded below, or eager's TypeError natively
            if result is not None:
                return result
        result = apply_operator(tx, fn, args) if args and not kwargs else None
        if result is None and len(args) == 1 and not kwargs and isinstance(args[0], SymNodeVariable):
            result = args[0].finiteness(fn)
        if result is not None:
            return result
        if fn not in TENSOR_OPERATORS and (fn in PURE_BUILTINS or computes_from_arguments(fn)) and all(
            foldable(a) for a in (*args, *kwargs.values())
        ):
            result = _fold(tx, fn, args, kwargs)  # symbolic scalars are specialised (guarded) here
            if result is not None:
                return result
        result = protocol_operator(tx, fn, args) if not kwargs else None
        if result is None and (fn in PURE_BUILTINS or computes_from_arguments(fn)):
            result = call_with_stand_ins(tx, fn, args, kwargs)  # user objects read as numbers
        if result is not None:
            return result
        unsupported_builtin(fn, args)

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        """Iterating a builtin function or type (``set().update(operator.add)``):
        eager's TypeError, unless its type is iterable (a metaclass's ``__iter__``)."""
        cls = type(self.fn)
        if not any("__iter__" in vars(k) or "__getitem__" in vars(k) for k in cls.__mro__):
            raise_traced(TypeError, f"{cls.__name__!r} object is not iterable")
        return super().unpack_var_sequence(tx)

    # ---- handlers: each returns a VT, or None to fall through ----------------
    def _member(self, tx: Tx, *args: VT, **kwargs: VT) -> VT | None:
        """``staticmethod(f)``, ``classmethod(f)``, ``property(...)`` of a value of the trace: a class member."""
        if all(a.is_python_constant() for a in (*args, *kwargs.values())):
            return None  # folded
        return ClassMemberVariable(self.fn, args, kwargs)

    _call_staticmethod = _call_classmethod = _call_property = _member

    def _call_len(self, tx: Tx, obj: VT) -> VT | None:
        if obj.is_python_constant() and not isinstance(obj, (BaseSequenceVariable, DictVariable)):
            return None  # folded
        if not hasattr(obj.python_type(), "__len__"):  # (an iterator): eager's TypeError
            raise_traced(TypeError, f"object of type '{tp_name(obj.python_type())}' has no len()")
        return obj.call_method(tx, "__len__", [], {})

    def _call_hash(self, tx: Tx, obj: VT) -> VT | None:
        """``hash()`` as the value's kind answers it (a user object's
        ``__hash__``); of an instance of a type whose ``__hash__`` is None (a mutable
        builtin, a subclass of one, a class defining ``__eq__`` only): eager's
        TypeError; constants fold, others break."""
        if class_attribute(obj.python_type(), "__hash__") is None:
            raise_traced(TypeError, f"unhashable type: '{tp_name(obj.python_type())}'")
        return None if obj.is_python_constant() else obj.hash_value(tx)

    def _call_isinstance(self, tx: Tx, obj: VT, classes: VT) -> VT | None:
        cls = classes.as_python_constant()
        try:
            return ConstantVariable(obj.isinstance_of(tx, cls))
        except TypeError as e:
            raise_traced_from(e)

    def _call_issubclass(self, tx: Tx, cls: VT, classes: VT) -> VT | None:
        return None  # constant folding handles it

    def _call_type(self, tx: Tx, obj: VT, *rest: VT) -> VT | None:
        if rest:
            return None
        return wrap_const(tx, obj.python_type())

    def _call_getattr(self, tx: Tx, obj: VT, name: VT, *default: VT) -> VT | None:
        attr = _looked_up_name(tx, obj, name)
        if default and not obj.has_attr(tx, attr):
            return default[0]
        return obj.var_getattr(tx, attr)

    def _call_hasattr(self, tx: Tx, obj: VT, name: VT) -> VT | None:
        return ConstantVariable(obj.has_attr(tx, _looked_up_name(tx, obj, name)))

    def _call_setattr(self, tx: Tx, obj: VT, name: VT, value: VT) -> VT | None:
        if isinstance(name, NewObjectVariable) and issubclass(name.python_type(), str):
            unimplemented(gb_type="str subclass attribute name", context=f"setattr(..., {name}, ...)",
                          explanation="A new attribute's key in the instance dict is the str subclass instance "
                                      "itself; bytegraph keys instance dicts by plain strings.",
                          hints=("Pass str(name) to setattr.",))
        obj.store_attr(tx, name.as_python_constant(), value)
        return ConstantVariable(None)

    def _call_delattr(self, tx: Tx, obj: VT, name: VT) -> VT | None:
        obj.delete_attr(tx, _looked_up_name(tx, obj, name, ("__delattr__",)))
        return ConstantVariable(None)

    def _call_callable(self, tx: Tx, obj: VT) -> VT | None:
        return ConstantVariable(instances_are_callable(obj.python_type()))

    def _call_iter(self, tx: Tx, obj: VT, *rest: VT) -> VT | None:
        if rest:
            return None
        return obj.get_iter(tx)

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
        return ListVariable(read_items(tx, obj) if obj is not None else [])

    def _call_tuple(self, tx: Tx, obj: VT | None = None) -> VT | None:
        if isinstance(obj, TupleVariable) and obj.python_type() is tuple:
            return obj
        return TupleVariable(read_items(tx, obj) if obj is not None else [])

    def _call_dict(self, tx: Tx, *args: VT, **kwargs: VT) -> VT | None:
        return dict_of(tx, args, kwargs)

    def _call_set(self, tx: Tx, obj: VT | None = None) -> VT | None:
        return SetVariable.from_iterable(tx, obj, set)

    def _call_frozenset(self, tx: Tx, obj: VT | None = None) -> VT | None:
        if obj is not None and obj.python_type() is frozenset:
            return obj  # a frozenset is its own frozenset (``Objects/setobject.c``: ``frozenset_new``)
        return SetVariable.from_iterable(tx, obj, frozenset)

    def _call_enumerate(self, tx: Tx, obj: VT, start: VT | None = None) -> VT | None:
        first = start.as_python_constant() if start is not None else 0
        return EnumerateVariable(obj.get_iter(tx), first)

    def _call_zip(self, tx: Tx, *iterables: VT, strict: VT | None = None) -> VT | None:
        return ZipVariable([it.get_iter(tx) for it in iterables], bool(strict and strict.as_python_constant()))

    def _call_map(self, tx: Tx, fn: VT, *iterables: VT) -> VT | None:
        return MapVariable(fn, [it.get_iter(tx) for it in iterables])

    def _call_filter(self, tx: Tx, fn: VT, iterable: VT) -> VT | None:
        keep_truthy = fn.is_python_constant() and fn.as_python_constant() is None
        return FilterVariable(None if keep_truthy else fn, iterable.get_iter(tx))

    def _call_reversed(self, tx: Tx, obj: VT) -> VT | None:
        if isinstance(obj, (BaseSequenceVariable, DictVariable, LazyDictVariable)) or obj.is_python_constant():
            return ListIteratorVariable(list(reversed(obj.unpack_var_sequence(tx))), cls=iterator_type(obj, reversed))
        return obj.reversed_iter(tx)

    def _call_sorted(self, tx: Tx, obj: VT, key: VT | None = None, reverse: VT | None = None) -> VT | None:
        items = read_items(tx, obj)
        rev = reverse.as_python_constant() if reverse is not None else False
        return ListVariable(sort_items(tx, items, key or ConstantVariable(None), rev))

    def _call_sum(self, tx: Tx, iterable: VT, start: VT | None = None) -> VT | None:
        if iterable.is_python_constant() and (start is None or start.is_python_constant()):
            return None
        total = start if start is not None else ConstantVariable(0)
        for item in iterable.unpack_var_sequence(tx):
            total = call_operator(tx, operator.add, [total, item])
        return total

    def _short_circuit(self, tx: Tx, iterable: VT, stop_on: bool) -> VT:
        iterator = iterable.get_iter(tx)
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
            b_wins = call_operator(tx, operator.gt if self.fn is max else operator.lt, [b, a]).truthy(tx)
            return b if b_wins else a
        if not args or set(kwargs) - {"key", "default"} or (len(args) > 1 and "default" in kwargs):
            return None
        if len(args) == 1 and isinstance(args[0], ConstantVariable) and "key" not in kwargs:
            return None  # folded
        items = list(args) if len(args) > 1 else args[0].unpack_var_sequence(tx)
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
                items[name] = tx.read_local(name)
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
        """``id(obj)`` of an object read from a source: a constant, guarded by
        identity; of an object made in the trace (one VT, rebuilt once) that a
        frame holds: known after the graph (the rebuilt object's), compared as
        the objects' identities are. A temporary's (``id([])``) breaks: its
        address is free once the call returns, and may be the next object's."""
        if obj.source is None and obj.rebuilt_once and held_by_frames(tx, obj):  # (else a temporary, soon dead)
            return RuntimeValueVariable(obj, id, int)
        ident = obj.identity(tx)
        if ident is None or obj.source is None or not obj.guard_identity(tx):
            unimplemented(
                gb_type="id of traced value",
                context=f"id() of {obj}",
                explanation="The identity of an object created during tracing is not known until it runs, and "
                "objects that cannot be weakly referenced (lists, dicts) are not guarded by identity.",
                hints=("Avoid id() on values created inside the compiled function.",),
            )
        return ConstantVariable(ident)

    def _call_eval(self, tx: Tx, source: VT) -> VT | None:
        """``eval(text)`` of a constant string that is a literal (``"False"``,
        ``"(1, -2.5)"``, ``"{'a': [1]}"``: what ``ast.literal_eval`` reads, which
        names nothing and runs no code): its value. Anything else (names, calls,
        other operators, a syntax error) breaks."""
        text = source.as_python_constant() if source.is_python_constant() else None
        if not isinstance(text, str):
            return None
        try:
            tree = ast.parse(text.lstrip(" \t"), mode="eval")
            compile(tree, "<string>", "eval")
            if not any(isinstance(node, (ast.Name, ast.Call)) for node in ast.walk(tree)):  # (literal_eval takes set())
                return wrap_const(tx, ast.literal_eval(tree))
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
            pass
        unimplemented(
            gb_type="eval of code",
            context=f"eval() of a string that is not a literal ({len(text)} characters)",
            explanation="bytegraph evaluates only literal strings at trace time; other code runs natively.",
            hints=("Move the eval() out of the compiled function.",),
        )

    def _call_int(self, tx: Tx, *args: VT) -> VT | None:
        if len(args) == 1 and not args[0].is_python_constant():
            converted = args[0].int_value(tx)
            if converted is not None:
                return converted
        return self._scalar_conversion(tx, "int", args)

    def _call_float(self, tx: Tx, *args: VT) -> VT | None:
        return self._scalar_conversion(tx, "float", args)

    def _scalar_conversion(self, tx: Tx, name: str, args: Sequence[VT]) -> VT | None:
        if args and isinstance(args[0], TensorVariable):
            return args[0].call_method(tx, f"__{name}__", [], {})
        if len(args) == 1 and isinstance(args[0], SymNodeVariable):
            return convert_scalar(tx, args[0], int if name == "int" else float)
        return None

    def _call_dir(self, tx: Tx, obj: VT) -> VT | None:
        if isinstance(obj, BuiltinVariable) and isinstance(obj.fn, type):
            return wrap_const(tx, dir(obj.fn))  # a builtin type: immutable
        dir_names = getattr(obj, "dir_names", None)  # a user class answers from its namespaces
        return dir_names(tx) if dir_names is not None else None

    def _call_object(self, tx: Tx, *args: VT, **kwargs: VT) -> VT | None:
        """``object()``: a new plain object (a sentinel compared by identity)."""
        if args or kwargs:
            raise_traced(TypeError, "object() takes no arguments")
        return NewObjectVariable(object)

    def _call_vars(self, tx: Tx, *args: VT) -> VT | None:
        """``vars(obj)``: ``obj.__dict__`` as the attribute is read, or eager's
        TypeError when there is none; ``vars()``: ``locals()``."""
        if not args:
            return self._call_locals(tx)
        if len(args) > 1:
            return None  # folded: eager's TypeError
        if not args[0].has_attr(tx, "__dict__"):
            raise_traced(TypeError, "vars() argument must have __dict__ attribute")
        return None if args[0].is_python_constant() else args[0].var_getattr(tx, "__dict__")

    def _call_repr(self, tx: Tx, obj: VT) -> VT | None:
        return obj.repr_text(tx)  # None: folded on a constant, else a break

    def _call_format(self, tx: Tx, value: VT, spec: VT | None = None) -> VT | None:
        text = "" if spec is None else spec.as_python_constant() if spec.is_python_constant() else None
        if value.is_python_constant() or not isinstance(text, str):
            return None  # folded, or eager's TypeError natively
        return protocol.format_value(tx, value, None, text)

    def _call_str(self, tx: Tx, *args: VT) -> VT | None:
        text = args[0].str_text(tx) if len(args) == 1 else None
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


def _looked_up_name(tx: Tx, obj: VT, name: VT, hooks: tuple[str, ...] = ("__getattr__", "__getattribute__")) -> Any:
    """The attribute name ``getattr``/``hasattr``/``delattr`` look up: a str
    subclass's text when the lookup only hashes and compares it as a str (its
    class leaves ``__eq__``/``__hash__`` to str) and no Python method of ``obj``'s
    class among ``hooks`` is handed the name object itself; else the constant
    (a non-constant name is a graph break)."""
    cls = name.python_type()
    if cls is not str and issubclass(cls, str) and isinstance(name, NewObjectVariable) and all(
            class_attribute(cls, dunder) is vars(str)[dunder] for dunder in ("__eq__", "__hash__")):
        owner = obj.python_type()
        if not any(isinstance(class_attribute(owner, dunder), types.FunctionType)
                   for dunder in hooks):
            text = name.base_storage(tx)
            if text.is_python_constant():
                return text.as_python_constant()
    return name.as_python_constant()


def instances_are_callable(cls: type) -> bool:
    """``callable(x)`` for any ``x`` of type ``cls``: whether the class (not its
    metaclass) defines ``__call__``."""
    return any("__call__" in vars(klass) for klass in cls.__mro__)


#: folded results that are iterators: iterated now, over constants
_FOLDED_ITERATORS = (map, filter, zip, enumerate, reversed, type(iter([])), type(iter(())))


def _fold(tx: Tx, fn: Any, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
    """A builtin call folded on constants (:func:`~bytegraph.variables.operators.evaluate`);
    an iterator it returns is read whole, as an iterator over its constant items."""
    result = evaluate(fn, args, kwargs)
    if result is NOT_FOLDED:
        return None
    if isinstance(result, _FOLDED_ITERATORS):
        return ListIteratorVariable([wrap_const(tx, v) for v in result], cls=type(result))
    return as_vt(tx, result)


def call_builtin(tx: Tx, fn: Any, args: Sequence[VT], kwargs: dict[str, VT] | None = None) -> VT:
    """``fn(*args, **kwargs)`` for a builtin or ``operator`` function: what the
    bytecode's operators (``BINARY_OP``, ``COMPARE_OP``, ``CONTAINS_OP``...) do."""
    return BuiltinVariable(fn).call_function(tx, list(args), kwargs or {})


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
        return results[0] if len(results) == 1 else TupleVariable(results)

    def _one(self, tx: Tx, obj: VT, key: VT) -> VT:
        if self.kind is operator.itemgetter:
            return call_operator(tx, operator.getitem, [obj, key])
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
