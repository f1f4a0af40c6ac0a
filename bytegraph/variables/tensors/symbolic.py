"""Symbolic Python scalars: SymNodeVariable and FakeItemVariable.

A :class:`SymNodeVariable` is an fx node whose example is a SymInt, SymFloat
or SymBool of the trace's ShapeEnv (a dynamic size, a size expression, a
dynamic Python int argument); a :class:`FakeItemVariable` is one whose value
depends on tensor data (a captured ``Tensor.item()``). What asking such a value
for a Python value does is :mod:`~bytegraph.variables.tensors.scalar_decisions`.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch
import torch.fx
from torch.fx.experimental import symbolic_shapes
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, free_unbacked_symbols

from bytegraph.breaks import HINT_DATA_DEPENDENT, HINT_DYNAMIC_CONTROL_FLOW, unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.handlers import call_method_handler
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.operators import INPLACE_TO_BINARY, TENSOR_OPERATORS, fold
from bytegraph.variables.tensors import graph_calls
from bytegraph.variables.tensors.scalar_decisions import (
    PYTHON_TYPES, SYMBOLIC_TYPES, branch_on_data, concrete, decide_float_arithmetic, float_arithmetic, pinned_value,
    statically_known,
)
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx


VT = VariableTracker

#: what ``math.isnan``/``isinf``/``isfinite`` say of a finite number
FINITE_ANSWERS = {math.isnan: False, math.isinf: False, math.isfinite: True}


def _on_value(name: str) -> Callable[..., VT]:
    """A ``method_<name>`` handler of :class:`SymNodeVariable`: the int/float
    method ``name`` run on the specialised (guarded) value."""

    def handler(self: SymNodeVariable, tx: Tx, *args: VT, **kwargs: VT) -> VT:
        return ConstantVariable(self.as_python_constant()).call_method(tx, name, list(args), kwargs)

    return handler


class SymNodeVariable(VariableTracker):
    """A symbolic Python scalar: an fx node whose example is a SymInt,
    SymFloat or SymBool of the trace's ShapeEnv (a dynamic size, a size
    expression, or a dynamic Python int argument).

    Arithmetic stays in the graph. Asking for its concrete value (a branch, a
    ``range()``) specialises: the ShapeEnv records a guard and the value is
    returned as a constant.
    """

    rebuilt_once = False
    specializable = True

    def __init__(self, node: torch.fx.Node, example: Any):
        super().__init__()
        self.node = node
        self.example = example

    @staticmethod
    def create(node: torch.fx.Node, example: Any) -> "SymNodeVariable":
        unbacked = bool(free_unbacked_symbols(example))
        return (FakeItemVariable if unbacked else SymNodeVariable)(node, example)

    def python_type(self) -> type:
        return PYTHON_TYPES[type(self.example)]

    def as_proxy(self) -> Any:
        return self.node

    def as_example(self) -> Any:
        return self.example

    def as_python_constant(self) -> Any:
        """The concrete value, guarded: the ShapeEnv specialises the symbol and
        records the guard (``n == 3``) that the cache entry checks, even when the
        graph itself never reads the input. A value computed by float arithmetic
        pins its inputs instead and is the float Python computed
        (:func:`~bytegraph.variables.tensors.scalar_decisions.pinned_value`).

        Raises:
            Unsupported: when the value depends on tensor data (no guard can
                stand for it).
        """
        return self._concrete(self.python_type())

    def truthy(self, tx: Tx) -> bool:
        """``bool(value)``, guarded like :meth:`as_python_constant` (``n != 0``).

        Raises:
            Unsupported: when the value depends on tensor data.
        """
        if float_arithmetic(self.node):
            return decide_float_arithmetic(tx, self.node)
        return self._concrete(bool)

    def assert_in_graph(self, tx: Tx, truth: bool) -> bool:
        """``assert flag`` (``truth`` True) where the flag is a bool that depends on tensor
        data (an unbacked symbol): a runtime check in the graph, as :func:`runtime_check`
        makes for ``torch._check``; a backed one is decided (and guarded) at trace time,
        and the truth of a data-dependent int or float is a graph break (:meth:`truthy`)."""
        if not truth or not isinstance(self.example, torch.SymBool) or not free_unbacked_symbols(self.example):
            return False
        runtime_check(tx, torch._check, [self], {})
        return True

    def finiteness(self, fn: Any) -> VT | None:
        """``math.isnan``/``isinf``/``isfinite`` (``fn``) of the value, answered
        without specialising it when it is finite whatever the input: an int, or a
        float argument (its entry guards it finite, see builder's
        ``_symbolic_scalar``). None for float arithmetic, which may overflow to
        infinity (its value is then specialised like any other)."""
        if fn not in FINITE_ANSWERS or (self.python_type() is float and self.node.op != "placeholder"):
            return None
        return ConstantVariable(FINITE_ANSWERS[fn])

    def _concrete(self, kind: type) -> Any:
        if float_arithmetic(self.node):
            return kind(pinned_value(self.node))
        return concrete(kind, self.example, f"the value of {self.node.name} ({self.example})")

    # ---- operators: arithmetic and comparisons stay in the graph ----------------
    def binary_op(self, tx: Tx, op: Any, other: VariableTracker) -> Any:
        return _operator(tx, op, [self, other], other)

    def reflected_binary_op(self, tx: Tx, op: Any, other: VariableTracker) -> Any:
        return _operator(tx, op, [other, self], other)

    def unary_op(self, tx: Tx, op: Any) -> Any:
        return graph_calls.graph_operator(tx, op, [self]) if op in TENSOR_OPERATORS else NotImplemented

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        result = call_method_handler(self, tx, name, args, kwargs)
        return result if result is not None else super().call_method(tx, name, args, kwargs)

    # int/float methods that answer about the exact value: specialised (guarded), then folded
    method_is_integer = _on_value("is_integer")
    method_as_integer_ratio = _on_value("as_integer_ratio")
    method_bit_length = _on_value("bit_length")
    method_bit_count = _on_value("bit_count")
    method_conjugate = _on_value("conjugate")
    method_hex = _on_value("hex")
    method_to_bytes = _on_value("to_bytes")

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_graph_output(self.node)

    def __repr__(self) -> str:
        return f"SymNodeVariable({self.node.name}: {self.example})"


class FakeItemVariable(SymNodeVariable):
    """A data-dependent scalar (``Tensor.item()`` with scalar capture on): its
    value exists only when the graph runs, so reading it is a graph break."""

    def as_python_constant(self) -> Any:
        unimplemented(
            gb_type="data-dependent scalar",
            context=f"the value of {self.node.name} (from tensor data) is needed at trace time",
            explanation="The value of a captured Tensor.item() is unknown until the graph runs.",
            hints=(HINT_DATA_DEPENDENT,),
        )

    def truthy(self, tx: Tx) -> bool:
        known = statically_known(self.example)
        if known is not None:
            return known
        unimplemented(
            gb_type="data-dependent branching",
            context=f"bool() of the data-dependent scalar {self.node.name}",
            explanation="The branch taken depends on tensor data, which is unknown while tracing.",
            hints=(HINT_DYNAMIC_CONTROL_FLOW,),
        )


def _operator(tx: Tx, op: Any, operands: list[VariableTracker], other: VariableTracker) -> Any:
    """``op(*operands)`` with a symbolic operand and ``other``: in the graph when
    ``other`` is a number (or a tensor, a symbol); with a constant of another kind
    (``"%d" % n``, ``"ab" * n``, ``[1, 2, 3][n]``) on the exact value, specialised:
    the result is no number a graph computes, and the symbol's printed form or
    real-number hint is not the value eager uses."""
    if op not in TENSOR_OPERATORS:
        return NotImplemented
    if other.is_python_constant() and not isinstance(other.as_python_constant(), (int, float, complex)):
        return fold(tx, op, operands, {})
    return _graph_operator(tx, op, operands)


def _graph_operator(tx: Tx, op: Any, operands: list[VariableTracker]) -> VariableTracker:
    """``op(*operands)`` in the graph, where an operand is symbolic.

    Raises:
        Unsupported: when a float that depends on tensor data would be folded
            away: sympy reasons about it as a real number, so ``n == n`` is
            True and ``n - n`` is 0, which NaN and infinity (``Tensor.item()``
            of a float tensor may be either) contradict; the operation then
            runs natively on the value.
    """
    examples = [v.as_example() if isinstance(v, SymNodeVariable) else None for v in operands]
    if any(isinstance(e, torch.SymFloat) and free_unbacked_symbols(e) for e in examples) and all(
        isinstance(v, SymNodeVariable) or v.is_python_constant() for v in operands
    ):
        try:
            folded = op(*(e if e is not None else v.as_python_constant() for e, v in zip(examples, operands)))
        except Exception:  # noqa: BLE001 - the graph operation below reports it as for any operator
            folded = examples[0]
        if not free_unbacked_symbols(folded):
            unimplemented(
                gb_type="data-dependent float folded",
                context=f"{getattr(op, '__name__', op)} of {', '.join(map(str, operands))} is {folded}",
                explanation="The value of a float read from tensor data would be decided while tracing as if it were "
                "a real number, which NaN and infinity are not; the operation runs natively.",
                hints=(HINT_DATA_DEPENDENT,),
            )
    _assert_defined(tx, INPLACE_TO_BINARY.get(op, op), operands)
    return graph_calls.graph_operator(tx, op, operands)


#: Python operators that raise for some values of their operands (``ZeroDivisionError``,
#: ``ValueError: negative shift count``), as a graph's code need not (inductor computes
#: ``1 // u0`` in C++): for each, the conditions (operand index, comparison, constant) of
#: which any one holding means the operation does not raise.
_DEFINED_WHEN = {
    operator.truediv: ((1, operator.ne, 0),), operator.floordiv: ((1, operator.ne, 0),),
    operator.mod: ((1, operator.ne, 0),),
    operator.lshift: ((1, operator.ge, 0),), operator.rshift: ((1, operator.ge, 0),),
    operator.pow: ((0, operator.ne, 0), (1, operator.ge, 0)), builtins.pow: ((0, operator.ne, 0), (1, operator.ge, 0)),
}


def _assert_defined(tx: Tx, op: Any, operands: list[VariableTracker]) -> None:
    """Assert in the graph that ``op(*operands)`` does not raise for the values the
    graph runs on, where that is not known while tracing (a symbolic divisor, shift
    count or power): the graph then raises (``aten._assert_scalar``) and its frame
    reruns natively, where eager's exception is raised (the ShapeEnv guards nothing
    about an operand's being zero, and an unbacked one has no value yet)."""
    holding = []
    for index, compare, bound in _DEFINED_WHEN.get(op, ()):
        operand = operands[index] if len(operands) > index else None
        if not isinstance(operand, SymNodeVariable) or isinstance(operand.example, torch.SymBool):
            if operand is not None and operand.is_python_constant() and compare(operand.as_python_constant(), bound):
                return  # defined whatever the other operand is
            continue
        if symbolic_shapes.statically_known_true(compare(operand.example, bound)):
            return
        condition = graph_calls.graph_operator(tx, compare, [operand, ConstantVariable(bound)])
        if isinstance(condition, SymNodeVariable):
            holding.append(condition)
    if holding:
        condition = holding[0] if len(holding) == 1 else graph_calls.graph_operator(tx, operator.or_, holding)
        tx.output.create_node("call_function", torch.ops.aten._assert_scalar.default,
                              (condition.as_proxy(), f"{getattr(op, '__name__', op)} of these values raises"), {}, None)


def convert_scalar(tx: Tx, value: SymNodeVariable, kind: type) -> VariableTracker:
    """``int(value)``/``float(value)`` (``kind``) of a symbolic scalar: itself when
    it is of that type already, else ``torch.sym_int``/``sym_float`` in the graph."""
    if value.python_type() is kind:
        return value
    return graph_calls.graph_call(tx, "call_function", torch.sym_int if kind is int else torch.sym_float, [value], {})


def runtime_check(tx: Tx, fn: Any, args: Sequence[VariableTracker],
                  kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``torch._check(cond)`` / ``torch._check_is_size(i)`` / ``torch._check_with(error_type,
    cond)`` (which ``torch._check_index``, ``_check_value``... call): what the user asserts
    about a scalar. A constant condition is checked now; a symbolic one is told
    to the ShapeEnv (so later questions about the symbol can be answered, as
    under torch.compile) and, when it depends on tensor data, also asserted
    when the graph runs (an ``aten._assert_scalar`` node raising RuntimeError,
    as eager's check does; a ``message`` callable is not called, so the text
    differs). Returns None, like the check.

    Raises:
        Unsupported: a condition that is false at trace time (eager raises:
            it runs natively), or one that is neither a constant nor a
            symbolic scalar (a tensor: eager reads its data).
    """
    value = args[1] if fn is torch._check_with and len(args) > 1 else args[0] if args else None
    if fn is torch._check_with and isinstance(value, SymNodeVariable) and free_unbacked_symbols(value.example) and (
        args[0].as_python_constant() is not RuntimeError
    ):
        value = None  # the graph's assertion would raise RuntimeError where eager raises error_type
    if isinstance(value, SymNodeVariable):
        example = value.example
        cond = example >= 0 if fn is torch._check_is_size else example
        try:
            torch._check(cond)
        except RuntimeError:
            value = None  # false whatever the data: eager raises (natively, below)
        else:
            if free_unbacked_symbols(cond):  # else the symbol is backed: the ShapeEnv guards the condition
                node = value.node
                if fn is torch._check_is_size:
                    node = tx.output.create_node("call_function", operator.ge, (node, 0), {}, cond)
                tx.output.create_node("call_function", torch.ops.aten._assert_scalar.default,
                                      (node, f"torch.{fn.__name__} failed"), {}, None)
            return ConstantVariable(None)
    if value is not None and value.is_python_constant():
        constant = value.as_python_constant()
        holds = constant >= 0 if fn is torch._check_is_size and type(constant) is int else constant is True
        if holds:
            return ConstantVariable(None)
    unimplemented(
        gb_type="unsupported runtime check",
        context=f"torch.{fn.__name__}({', '.join(type(a).__name__ for a in args)})",
        explanation="The check is false at trace time (eager raises), or its condition is not a Python scalar "
        "bytegraph can reason about; it runs natively.",
        hints=("Check a symbolic scalar (a size or a captured .item()), or a constant.",),
    )


#: ``torch.fx.experimental.symbolic_shapes``' predicates over sizes (``is_nested_int``,
#: ``guard_size_oblivious``, ``statically_known_true``...): Python that reads a SymInt's
#: ``.node``, so they are modelled, not traced (docs/torch_policy.md §2).
SHAPE_PREDICATES = frozenset(
    getattr(symbolic_shapes, name) for name in (
        "is_nested_int", "guard_size_oblivious", "guard_or_false", "guard_or_true", "statically_known_true",
        "statically_known_false", "definitely_true", "definitely_false", "expect_true", "has_hint",
        "is_concrete_int", "is_concrete_bool", "is_concrete_float", "guard_int", "guard_bool", "guard_float",
        "has_static_value", "sym_eq",
    ) if hasattr(symbolic_shapes, name)
)


def shape_predicate(tx: Tx, fn: Any, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """A :data:`SHAPE_PREDICATES` call: run on the arguments' values (a constant's value, a
    symbolic scalar's example), so the trace's ShapeEnv records the guards it takes, as under
    torch.compile; ``expect_true`` of a data-dependent condition is ``torch._check``'s runtime
    assertion. The answer is a constant.

    Raises:
        Unsupported: an argument that is neither a constant nor a symbolic scalar, a
            predicate that must decide a data-dependent value, or a symbolic answer.
    """
    values = [*args, *kwargs.values()]
    if fn is symbolic_shapes.expect_true and len(values) == 1 and isinstance(values[0], SymNodeVariable) and (
        free_unbacked_symbols(values[0].example)
    ):
        runtime_check(tx, torch._check, values, {})
        return ConstantVariable(True)
    if not all(isinstance(v, SymNodeVariable) or v.is_python_constant() for v in values):
        unimplemented(
            gb_type="unsupported shape predicate",
            context=f"{fn.__name__}({', '.join(type(v).__name__ for v in values)})",
            explanation="A symbolic-shapes predicate is answered for constants and symbolic scalars only.",
            hints=("Pass sizes (ints or SymInts) to it.",),
        )

    def value(v: VT) -> Any:
        return v.example if isinstance(v, SymNodeVariable) else v.as_python_constant()

    try:
        result = fn(*map(value, args), **{k: value(v) for k, v in kwargs.items()})
    except GuardOnDataDependentSymNode:
        branch_on_data(f"{fn.__name__}(...)")
    if isinstance(result, SYMBOLIC_TYPES):
        unimplemented(
            gb_type="unsupported shape predicate",
            context=f"{fn.__name__} returned a {type(result).__name__}",
            explanation="A symbolic answer of a symbolic-shapes predicate is not traced.",
            hints=("Compare the sizes with ==, which is traced.",),
        )
    return ConstantVariable(result)
