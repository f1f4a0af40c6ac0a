"""The operator protocol: how ``a op b`` on traced values is resolved, and
constant folding.

``a op b`` is resolved by the operands' VariableTrackers (``binary_op``,
``reflected_binary_op``, ``inplace_op``, ``unary_op``, ``contains_op``: see
:class:`~bytegraph.variables.base.VariableTracker`) in CPython's order
(:func:`apply_operator`, :func:`binary_operation`); ``in``, ``is`` and ``not``
follow (:func:`protocol_operator`); operands all known at trace time are
folded (:func:`fold`). :func:`call_operator` is the whole of it, as the
bytecode's operators and the kinds' own code call an ``operator`` function.
The tables name the ``operator`` functions each rule applies to and the
dunder methods Python looks up for them; :class:`PythonDunderOperators` are
the operators of kinds whose class defines them in Python.
"""
from __future__ import annotations

import builtins
import collections
import functools
import math
import operator
import types
from typing import TYPE_CHECKING, Any, NoReturn, Sequence

from bytegraph.breaks import HINT_REWRITE, unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable, is_constant_value, raise_traced, raise_traced_from
from bytegraph.variables.objects.class_lookup import _MISSING, HEAPTYPE, class_attribute
from bytegraph.variables import tx as protocol
from bytegraph.variables.tx import make_tuple, wrap_const

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

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

#: in-place operator -> its out-of-place twin, for immutable operands.
INPLACE_TO_BINARY = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv,
    operator.imod: operator.mod, operator.ipow: operator.pow, operator.imatmul: operator.matmul,
    operator.iand: operator.and_, operator.ior: operator.or_, operator.ixor: operator.xor,
    operator.ilshift: operator.lshift, operator.irshift: operator.rshift,
}

#: ``operator.concat``/``iconcat`` -> the operator they are on sequences
#: (``Modules/_operator.c``: ``a + b``, ``a += b`` once ``a`` is a sequence)
CONCAT_TO_BINARY = {operator.concat: operator.add, operator.iconcat: operator.iadd}

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


#: ``math`` functions that call the argument's own method first (``Modules/mathmodule.c``:
#: ``math_ceil``/``math_floor`` look up the special method, then convert with ``PyFloat_AsDouble``)
ROUNDING_DUNDERS = {math.ceil: "__ceil__", math.floor: "__floor__"}


class PythonDunderOperators:
    """The operators of a kind whose class may define them in Python (user
    objects): the dunder found by ``python_method`` is inlined; a kind mixing
    this in defines ``python_method(tx, name)`` (a bound method VT or None)."""

    def binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        names = BINARY_DUNDERS.get(op)
        return self._call_dunder(tx, names[0], [other]) if names else NotImplemented

    def reflected_binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        names = BINARY_DUNDERS.get(op)
        return self._call_dunder(tx, names[1], [other]) if names else NotImplemented

    def unary_op(self, tx: Tx, op: Any) -> Any:
        return self._call_dunder(tx, UNARY_DUNDERS[op], []) if op in UNARY_DUNDERS else NotImplemented

    def rounding_op(self, tx: Tx, fn: Any) -> Any:
        """``math.ceil(self)``/``math.floor(self)``: the class's Python ``__ceil__``/
        ``__floor__`` inlined (whatever it returns); without one, a class with no
        ``__float__``/``__index__`` either is not a real number: eager's TypeError
        is raised in the trace. NotImplemented otherwise (a C method, a conversion)."""
        method = self.python_method(tx, ROUNDING_DUNDERS[fn])
        if method is not None:
            return method.call_function(tx, [], {})
        cls = self.python_type()
        if not hasattr(cls, "__float__") and not hasattr(cls, "__index__"):
            raise_traced(TypeError, f"must be real number, not {cls.__name__}")
        return NotImplemented

    def contains_op(self, tx: Tx, item: VT) -> Any:
        method = self.python_method(tx, "__contains__")
        if method is None:
            return NotImplemented
        return wrap_const(tx, method.call_function(tx, [item], {}).truthy(tx))

    def _call_dunder(self, tx: Tx, name: str, args: list[VT]) -> Any:
        """The Python method ``name`` inlined; NotImplemented when the class has
        none written in Python, or it returned NotImplemented."""
        method = self.python_method(tx, name)
        if method is None:
            return NotImplemented
        result = method.call_function(tx, args, {})
        if result.is_python_constant() and result.as_python_constant() is NotImplemented:
            return NotImplemented
        return result


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


def apply_operator(tx: Tx, op: Any, args: Sequence[VT]) -> VT | None:
    """``op(*args)`` for a Python operator, resolved by the operands' kinds; None
    when none of them answers (a graph break follows).

    First an operand whose kind takes every operation over (ndarrays, then
    dispatching tensor subclasses, then data pointers: ``override_rank``);
    then operands all known now are computed now; then CPython's order:
    ``unary_op``, or :func:`binary_operation`.
    """
    if op in CONCAT_TO_BINARY and len(args) == 2 and issubclass(args[0].python_type(), (list, tuple, collections.deque)):
        op = CONCAT_TO_BINARY[op]
    for operand in sorted((a for a in args if a.override_rank), key=lambda a: -a.override_rank):
        result = operand.operator_override(tx, op, args)
        if result is not NotImplemented:
            return result
    if op not in TENSOR_OPERATORS:
        return None
    if all(a.is_python_constant() for a in args):
        result = fold(tx, op, args, {})
        if result is not None:
            return result
    if len(args) == 1:
        result = args[0].unary_op(tx, op)
        return None if result is NotImplemented else result
    return binary_operation(tx, op, *args) if len(args) == 2 else None


def binary_operation(tx: Tx, op: Any, a: VT, b: VT) -> VT | None:
    """``a op b`` in CPython's order: for ``a op= b``, ``a``'s in-place rule
    (``inplace_op``: a result, None for a graph break, or NotImplemented to go
    on with the binary operator); then ``a.binary_op``, then
    ``b.reflected_binary_op``; a subscript no kind claims is ``a.__getitem__(b)``;
    ``==``/``!=`` that no kind claims compare identities where the types do."""
    inplace = op in INPLACE_TO_BINARY
    if inplace:
        result = a.inplace_op(tx, op, b)
        if result is not NotImplemented:
            return result
        op = INPLACE_TO_BINARY[op]
    if _reflected_first(op, a, b):
        result = b.reflected_binary_op(tx, op, a)
        if result is NotImplemented:
            result = a.binary_op(tx, op, b)
    else:
        result = a.binary_op(tx, op, b)
        if result is NotImplemented:
            result = b.reflected_binary_op(tx, op, a)
    if result is NotImplemented and op is operator.getitem:
        return a.call_method(tx, "__getitem__", [b], {})
    if result is NotImplemented and op in (operator.eq, operator.ne):
        same = a.same_object(tx, b)
        if same is not None and (same or _both_decline(op, a, b)):
            return ConstantVariable(same if op is operator.eq else not same)
    if result is NotImplemented and op in OPERATOR_SYMBOLS and _both_decline(op, a, b):
        _no_operator(OPERATOR_SYMBOLS[op] + ("=" if inplace else ""), a, b, op in ORDERINGS)
    return None if result is NotImplemented else result


def _reflected_first(op: Any, a: VT, b: VT) -> bool:
    """Whether CPython asks ``b`` before ``a``: ``type(b)`` is a proper subclass
    of ``type(a)`` that overrides the reflected method (``Objects/typeobject.c``:
    ``SLOT1BINFULL``'s ``method_is_overloaded``; a comparison's reflected method
    is ``b``'s own ``__eq__``/``__lt__``..., ``Objects/object.c``: ``do_richcompare``)."""
    names = BINARY_DUNDERS.get(op)
    if names is None:
        return False
    left, right = a.python_type(), b.python_type()
    if left is right or not issubclass(right, left):
        return False
    if op in ORDERINGS or op in (operator.eq, operator.ne):
        return True
    reflected = class_attribute(right, names[1])
    return reflected is not _MISSING and reflected is not class_attribute(left, names[1])


#: the symbol CPython's TypeError names an operator by, when both operands decline it
OPERATOR_SYMBOLS = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.floordiv: "//",
    operator.mod: "%", operator.pow: "** or pow()", operator.matmul: "@", operator.and_: "&", operator.or_: "|",
    operator.xor: "^", operator.lshift: "<<", operator.rshift: ">>", operator.lt: "<", operator.le: "<=",
    operator.gt: ">", operator.ge: ">=",
}
ORDERINGS = frozenset({operator.lt, operator.le, operator.gt, operator.ge})


def _both_decline(op: Any, a: VT, b: VT) -> bool:
    """Whether ``a op b`` has no answer in eager: ``a``'s dunder and ``b``'s
    reflected one both give NotImplemented (or do not exist)."""
    names = BINARY_DUNDERS[op]
    return declines(a, names[0], b) and declines(b, names[1], a)


def _no_operator(symbol: str, a: VT, b: VT, ordering: bool) -> NoReturn:
    """Eager's TypeError for an operator neither operand supports."""
    left, right = tp_name(a.python_type()), tp_name(b.python_type())
    if ordering:
        raise_traced(TypeError, f"'{symbol}' not supported between instances of '{left}' and '{right}'")
    raise_traced(TypeError, f"unsupported operand type(s) for {symbol}: '{left}' and '{right}'")


def protocol_operator(tx: Tx, fn: Any, args: Sequence[VT]) -> VT | None:
    """``x in c``, ``a is b``, ``not x``, ``operator.truth(x)``."""
    if fn is operator.contains and len(args) == 2:
        container, item = args
        result = container.contains_op(tx, item)
        if result is not NotImplemented:
            return result
        if not container.has_unpack_var_sequence(tx):
            return None
        iterator = container.get_iter(tx)  # no __contains__: CPython iterates, up to the first match
        step = getattr(iterator, "next_item", None)
        elements = iter(functools.partial(step, tx), None) if step else iterator.unpack_var_sequence(tx)
        for element in elements:
            if element.same_object(tx, item) or call_operator(tx, operator.eq, [element, item]).truthy(tx):
                return ConstantVariable(True)
        return ConstantVariable(False)
    if fn in (operator.is_, operator.is_not) and len(args) == 2:
        same = args[0].same_object(tx, args[1])
        return None if same is None else ConstantVariable(same if fn is operator.is_ else not same)
    if fn in ROUNDING_DUNDERS and len(args) == 1 and hasattr(args[0], "rounding_op"):  # a user object's __ceil__
        result = args[0].rounding_op(tx, fn)
        return None if result is NotImplemented else result
    if fn in (operator.not_, operator.truth) and len(args) == 1:
        truth = args[0].truthy(tx)
        return ConstantVariable(truth if fn is operator.truth else not truth)
    return None


#: what :func:`evaluate` returns for a call it does not make
NOT_FOLDED = object()


def evaluate(fn: Any, args: Sequence[VT], kwargs: dict[str, VT]) -> Any:
    """``fn(*args, **kwargs)`` on the arguments' constant values, now; an error
    is raised in the traced program, as eager raises it natively.

    :data:`NOT_FOLDED` when calling it now would run user code (a key function,
    a callable object), or when a mutable argument (list, dict, set), folded as
    a *copy*, gives a mutable result that may be (part of) that argument, whose
    identity the copy lost. An argument whose value is rebuilt for the call (a
    tuple), or an item of one, given back as the result or as an item of a
    result tuple (``t * 1``, ``t + ()``: CPython returns the operand itself;
    ``lst[0]``, ``max(lst)``, ``tuple(lst)``: its items) is returned as its VT,
    which keeps its identity.
    """
    values = [a.as_python_constant() for a in args]
    kw = {k: v.as_python_constant() for k, v in kwargs.items()}
    if any(_runs_user_code(v) for v in (*values, *kw.values())):
        return NOT_FOLDED  # calling it now would run user code at trace time only
    try:
        result = fn(*values, **kw)
    except Exception as e:  # the eager program raises the same error natively
        known = _rebuilt_objects(args, values)
        raise_traced_from(e, lambda arg: _vt_or_constant(_with_vts(arg, known)))
    if any(a.mutable for a in (*args, *kwargs.values())) and not is_constant_value(result):
        return NOT_FOLDED
    if type(result) in _NO_IDENTITY:
        return result
    return _with_vts(result, _rebuilt_objects(args, values))


#: results whose identity no program relies on (immutable scalars): given back without looking for their VT
_NO_IDENTITY = frozenset({int, float, bool, complex, str, bytes, type(None)})


def _rebuilt_objects(args: Sequence[VT], values: list) -> dict[int, VT]:
    """``id`` of each object a call's arguments were read as, to its VT, and so
    of the items (keys and values) of those VTs rebuilt as new objects for each
    read (``rebuilds_constant``: lists, tuples, deques, dicts)."""
    known: dict[int, VT] = {}
    pairs = list(zip(args, values))
    while pairs:
        vt, value = pairs.pop()
        known.setdefault(id(value), vt)
        items = getattr(vt, "items", None) if vt.rebuilds_constant else None
        if isinstance(items, dict) and isinstance(value, dict) and len(value) == len(items):  # (in the same order)
            for (key_vt, value_vt), (key, item) in zip(items.values(), value.items()):
                pairs += [(key_vt, key), (value_vt, item)]
        elif isinstance(items, list) and isinstance(value, (list, tuple, collections.deque)) and len(value) == len(
                items):
            pairs.extend(zip(items, value))
    return known


def _with_vts(result: Any, known: dict[int, VT]) -> Any:
    """``result``, or its VT in ``known``; a plain tuple holding such objects
    becomes a tuple VT of their VTs (of constants for the rest)."""
    if id(result) in known:
        return known[id(result)]
    if type(result) is tuple and known:
        items = [_with_vts(v, known) for v in result]
        if any(isinstance(v, VariableTracker) for v in items):
            return make_tuple([_vt_or_constant(v) for v in items])
    return result


def _vt_or_constant(value: Any) -> VT:
    """``value`` if a VT already, else a constant VT of it."""
    return value if isinstance(value, VariableTracker) else ConstantVariable(value)


def fold(tx: Tx, fn: Any, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
    """The VT of :func:`evaluate`'s result, or None when it does not fold."""
    result = evaluate(fn, args, kwargs)
    return None if result is NOT_FOLDED else as_vt(tx, result)


def as_vt(tx: Tx, result: Any) -> VT:
    """What :func:`evaluate` returned, as a VT (an argument given back is one already)."""
    return result if isinstance(result, VariableTracker) else wrap_const(tx, result)


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


#: C modules whose functions compute only from their arguments (no I/O, no
#: process state, no writes to an argument the trace could not see)
#: (``operator``'s are in :data:`PURE_BUILTINS`, less those on identity or writing an argument)
PURE_C_MODULES = frozenset({"math", "cmath", "_struct", "binascii", "unicodedata", "zlib", "_string"})
#: immutable builtin types: their C classmethods and staticmethods (``float.fromhex``,
#: ``int.from_bytes``, ``str.maketrans``; not ``__new__``, which may make a user
#: subclass's instance) build values from arguments
IMMUTABLE_BUILTIN_TYPES = frozenset({bool, int, float, complex, str, bytes, frozenset, tuple, range, slice, type(None)})


def computes_from_arguments(fn: Any) -> bool:
    """Whether ``fn`` is a C function that only computes from its arguments,
    folded on constant arguments: a builtin method of an immutable constant
    (:func:`bound_to_constant`), a function of a pure C module
    (:data:`PURE_C_MODULES`: ``struct.unpack``, ``math.gcd``), or a C
    classmethod or staticmethod of an immutable builtin type, however it is
    reached (``float.fromhex`` bound to a name, ``int.from_bytes``)."""
    if not isinstance(fn, types.BuiltinFunctionType):
        return False
    owner = fn.__self__
    if isinstance(owner, types.ModuleType):
        return owner.__name__ in PURE_C_MODULES
    if owner is None:  # a C staticmethod (``str.maketrans``): found on its class
        owner = getattr(builtins, fn.__qualname__.partition(".")[0], None)
        return owner in IMMUTABLE_BUILTIN_TYPES and getattr(owner, fn.__name__, None) is fn
    return isinstance(owner, type) and owner in IMMUTABLE_BUILTIN_TYPES and fn.__name__ != "__new__" or (
        bound_to_constant(fn))


def foldable(vt: VT) -> bool:
    """Whether a fold may read ``vt``'s value: a constant, or a symbolic scalar it specialises."""
    return vt.is_python_constant() or vt.specializable


def _runs_user_code(value: Any) -> bool:
    """Whether passing ``value`` to a builtin may call Python code of the user
    (a key function, a callable object...)."""
    if isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
        return True
    return callable(value) and not isinstance(value, (type, types.BuiltinFunctionType, types.BuiltinMethodType))


def declines(vt: VT, name: str, other: VT) -> bool:
    """Whether ``type(vt).<name>`` (a binary dunder) answers NotImplemented
    against ``other``, as eager's does (so that ``==`` falls back to identity and
    other operators raise TypeError): none defined, or object's own; a Python
    dunder the kind inlined (and which declined); the C dunders of sets and dicts
    against a value of another kind (:data:`_C_OPERANDS`); a builtin scalar's
    against a value of an unrelated type (not a number or text, for arithmetic)."""
    cls = vt.python_type()
    method = class_attribute(cls, name)  # the type's own MRO: ``type.__ror__`` is the metaclass's
    if method is _MISSING or method is vars(object).get(name, _MISSING) or cls is type(None) and name in _EQUALITIES:
        return True  # (3.12 gave None an __eq__ of its own)
    if isinstance(vt, PythonDunderOperators) and isinstance(method, types.FunctionType):
        return True
    other_cls = other.python_type()
    for base, accepted in _C_OPERANDS.items():
        if method is vars(base).get(name):
            if base in (list, tuple) and name not in _EQUALITIES + _ORDERINGS:
                return False  # ``+``, ``*`` of a sequence: not modelled here
            return not issubclass(other_cls, accepted) or base in (dict, types.MethodType) and name in _ORDERINGS
    if not vt.is_python_constant() or cls not in _SCALARS:
        return False
    if name in _EQUALITIES:
        return not issubclass(other_cls, cls)
    # numbers compute with numbers only; text also formats (``%``) and repeats (``*``) with anything
    return not issubclass(other_cls, tuple(_SCALARS)) and not (cls in (str, bytes) and name in _TEXT_ACCEPTS_ANY)


_EQUALITIES = ("__eq__", "__ne__")
_ORDERINGS = ("__lt__", "__le__", "__gt__", "__ge__")
_TEXT_ACCEPTS_ANY = ("__mod__", "__rmod__", "__mul__", "__rmul__")

#: builtin types whose C binary dunders (a list's and a tuple's comparisons) take only operands of
#: these kinds (``Objects/setobject.c``: ``PyAnySet_Check``; ``Objects/dictobject.c``: ``PyDict_Check``,
#: and a dict orders with nothing; ``listobject.c``, ``tupleobject.c``: ``*_richcompare``; a bound
#: method compares (``==``/``!=`` only) with bound methods: ``classobject.c``: ``method_richcompare``)
_C_OPERANDS = {set: (set, frozenset), frozenset: (set, frozenset), dict: dict, list: list, tuple: tuple,
               types.MethodType: types.MethodType}


def tp_name(cls: type) -> str:
    """The name CPython's messages give a type (``tp_name``): a type made in C
    (static, or a heap type from a spec, which is immutable: 3.12's
    ``itertools.repeat``) of a module other than builtins is dotted
    (``itertools.repeat``); a class statement's is its name."""
    made_in_c = not cls.__flags__ & HEAPTYPE or cls.__flags__ & _IMMUTABLETYPE
    return f"{cls.__module__}.{cls.__name__}" if made_in_c and cls.__module__ != "builtins" else cls.__name__


_IMMUTABLETYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: its attributes cannot be set (C types; never a class statement's)


#: the ordering operators, as CPython's TypeError names them
ORDERING_SYMBOLS = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}


#: builtin scalars whose ``__eq__`` declines a value of any other type
_SCALARS = frozenset({int, float, complex, str, bytes, bool})


def call_operator(tx: Tx, op: Any, args: Sequence[VT]) -> VT:
    """``op(*args)`` for an ``operator`` function (``operator.add``, ``operator.eq``,
    ``operator.getitem``...), as a call of it in the traced program answers:
    the operands' kinds (:func:`apply_operator`), then, for a pure operator that
    is no tensor operation, folding (symbolic scalars specialised), then ``in``,
    ``is``, ``not``, a rounding dunder (:func:`protocol_operator`).

    Raises:
        Unsupported: when none of them answers.
    """
    result = apply_operator(tx, op, args)
    if result is None and op not in TENSOR_OPERATORS and op in PURE_BUILTINS and all(foldable(a) for a in args):
        result = fold(tx, op, args, {})
    if result is None:
        result = protocol_operator(tx, op, args)
    if result is None and op in PURE_BUILTINS:
        result = protocol.call_with_stand_ins(tx, op, args, {})  # ``"%x" % obj``: a user object read as a number
    return result if result is not None else unsupported_builtin(op, args)


def unsupported_builtin(fn: Any, args: Sequence[VT]) -> NoReturn:
    """The graph break for a builtin call no rule answers."""
    name = getattr(fn, "__name__", "")
    unimplemented(
        gb_type="unsupported builtin call",
        context=f"{name or fn}({', '.join(type(a).__name__ for a in args)})",
        explanation=f"bytegraph cannot trace builtin {name or fn} with these argument kinds.",
        hints=(HINT_REWRITE,),
    )
