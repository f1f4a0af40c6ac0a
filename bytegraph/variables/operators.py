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
from bytegraph.variables.tx import wrap_const

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
    if op in INPLACE_TO_BINARY:
        result = a.inplace_op(tx, op, b)
        if result is not NotImplemented:
            return result
        op = INPLACE_TO_BINARY[op]
    result = a.binary_op(tx, op, b)
    if result is NotImplemented:
        result = b.reflected_binary_op(tx, op, a)
    if result is NotImplemented and op is operator.getitem:
        return a.call_method(tx, "__getitem__", [b], {})
    if result is NotImplemented and op in (operator.eq, operator.ne):
        same = a.same_object(tx, b)
        if same is not None and (same or _declines_eq(a, b) and _declines_eq(b, a)):
            return ConstantVariable(same if op is operator.eq else not same)
    if result is NotImplemented and op in ORDERING_SYMBOLS and _declines_order(a, b, BINARY_DUNDERS[op][0]) and (
            _declines_order(b, a, BINARY_DUNDERS[op][1])):
        raise_traced(TypeError, f"'{ORDERING_SYMBOLS[op]}' not supported between instances of "
                                f"'{a.python_type().__name__}' and '{b.python_type().__name__}'")
    return None if result is NotImplemented else result


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
    tuple) and given back as the result (``t * 1``, ``t + ()``: CPython returns
    the operand itself) is returned as its VT, which keeps its identity.
    """
    values = [a.as_python_constant() for a in args]
    kw = {k: v.as_python_constant() for k, v in kwargs.items()}
    if any(_runs_user_code(v) for v in (*values, *kw.values())):
        return NOT_FOLDED  # calling it now would run user code at trace time only
    try:
        result = fn(*values, **kw)
    except Exception as e:  # the eager program raises the same error natively
        raise_traced_from(e)
    if any(a.mutable for a in (*args, *kwargs.values())) and not is_constant_value(result):
        return NOT_FOLDED
    return next((a for a, v in zip(args, values) if v is result and a.rebuilds_constant), result)


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


def _declines_eq(vt: VT, other: VT) -> bool:
    """Whether ``vt``'s ``__eq__``/``__ne__`` answering NotImplemented against
    ``other`` is what eager's does, so that ``==`` falls back to identity: object's
    own ``__eq__``; a Python ``__eq__`` the kind inlined (and which declined); a
    builtin scalar or container against a value of an unrelated type."""
    cls = vt.python_type()
    if cls.__eq__ is object.__eq__ or cls is type(None):  # (3.12 gave None an __eq__ of its own)
        return True
    if isinstance(vt, PythonDunderOperators) and isinstance(cls.__eq__, types.FunctionType):
        return True
    if cls in _CONTAINERS:  # (``list_richcompare``: NotImplemented unless both are lists...)
        return not issubclass(other.python_type(), _CONTAINERS[cls])
    return vt.is_python_constant() and cls in _SCALARS and not issubclass(other.python_type(), cls)


#: the ordering operators, as CPython's TypeError names them
ORDERING_SYMBOLS = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}


def _declines_order(vt: VT, other: VT, dunder: str) -> bool:
    """Whether ``vt``'s ordering method ``dunder`` answering NotImplemented against
    ``other`` is certainly what eager's does: object's own; a Python one the
    kind inlined (and which declined); a builtin container's against a value
    not of its kind."""
    try:
        cls = vt.python_type()
    except Exception:  # noqa: BLE001 - a kind that cannot tell: not certain
        return False
    attr = next((vars(k)[dunder] for k in cls.__mro__ if dunder in vars(k)), None)
    if attr is getattr(object, dunder):
        return True
    if isinstance(vt, PythonDunderOperators) and isinstance(attr, types.FunctionType):
        return True
    return cls in _CONTAINERS and not issubclass(other.python_type(), _CONTAINERS[cls])


#: builtin scalars whose ``__eq__`` declines a value of any other type
_SCALARS = frozenset({int, float, complex, str, bytes, bool})
#: builtin containers whose ``__eq__`` declines a value not of these types
_CONTAINERS = {list: list, tuple: tuple, dict: dict, set: (set, frozenset), frozenset: (set, frozenset)}


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
