"""The tables of Python's operators that the operand kinds share, and the
operators of kinds whose class defines them in Python.

``a op b`` is resolved by the operands' VariableTrackers (``binary_op``,
``reflected_binary_op``, ``inplace_op``, ``unary_op``: see
:class:`~bytegraph.variables.base.VariableTracker`); these tables name the
``operator`` functions each rule applies to and the dunder methods Python
looks up for them.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bytegraph.translator.base import InstructionTranslatorBase as Tx
    from bytegraph.variables.base import VariableTracker as VT

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
        from bytegraph.variables.constant import raise_traced  # constant.py's VTs import no operator tables

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
        return tx.wrap_const(method.call_function(tx, [item], {}).truthy(tx))

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
