"""What a trace decides about the value of a symbolic scalar.

A SymInt, SymFloat or SymBool asked for a Python value (a branch, a ``range()``)
is either specialised with a guard (:func:`concrete`), proven for every value its
symbols may take with no guard (:func:`statically_known`: a data-dependent size
the ShapeEnv bounds), or a graph break (:func:`branch_on_data`). A value computed
by float arithmetic is decided by replaying the graph's scalar steps with Python's
own operations (:func:`float_arithmetic`, :func:`decide_float_arithmetic`,
:func:`pinned_value`), never by the ShapeEnv's real-number reasoning.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, NoReturn

import torch
import torch.fx
from torch.fx.experimental import symbolic_shapes
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, free_unbacked_symbols

from bytegraph.breaks import HINT_DYNAMIC_CONTROL_FLOW, unimplemented
from bytegraph.guards.guards import RecomputedMatch
from bytegraph.guards.source import user_name
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx


SYMBOLIC_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)

#: the Python type each symbolic type stands for
PYTHON_TYPES = {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}


def concrete(kind: type, value: Any, what: str) -> Any:
    """``kind(value)`` for a possibly symbolic scalar: specialises it (the ShapeEnv
    records a guard), or breaks the graph when it depends on tensor data."""
    try:
        return kind(value)
    except GuardOnDataDependentSymNode:
        unimplemented(
            gb_type="data-dependent branching",
            context=f"{what} needed at trace time",
            explanation="The value depends on tensor data, which is unknown while tracing.",
            hints=(HINT_DYNAMIC_CONTROL_FLOW,),
        )


def statically_known(example: Any) -> bool | None:
    """The truth of a data-dependent int or bool where the ShapeEnv proves it for every value
    its symbols may take (their value ranges and the runtime asserts recorded so far:
    ``x.nonzero().numel() + 3 == 0`` is False, ``u > 0`` after ``torch._check(u >= 1)`` is
    True), so it needs no guard; None when it does not. A float's truth is never decided:
    the ShapeEnv reasons about it as a real number, which NaN is not."""
    if any(not s.is_integer for s in free_unbacked_symbols(example)) or isinstance(example, torch.SymFloat):
        return None
    condition = example if isinstance(example, torch.SymBool) else example != 0
    if symbolic_shapes.statically_known_true(condition):
        return True
    if symbolic_shapes.statically_known_true(torch.sym_not(condition)):
        return False
    return None


def branch_on_data(what: str) -> NoReturn:
    """``bool()`` of a value whose truth depends on tensor data: a graph break."""
    unimplemented(
        gb_type="data-dependent branching",
        context=f"bool() of {what}",
        explanation="The branch taken depends on tensor data, which is unknown while tracing.",
        hints=(HINT_DYNAMIC_CONTROL_FLOW,),
    )


def _scalar_inputs(node: torch.fx.Node) -> list[torch.fx.Node]:
    return [n for n in node.all_input_nodes if isinstance(n.meta.get("example_value"), SYMBOLIC_TYPES)]


def _scalar_ancestors(node: torch.fx.Node) -> Iterator[torch.fx.Node]:
    """``node`` and the symbolic scalar nodes it is computed from, each once; the
    walk stops at nodes computed from no symbolic scalar (an argument, a size)."""
    stack, seen = [node], set()
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            yield current
            stack.extend(_scalar_inputs(current))


def float_arithmetic(node: torch.fx.Node) -> bool:
    """Whether the symbolic scalar of ``node`` is, or is computed from, the result of
    float arithmetic (``v * 0.0``, ``(v + 0.1) - 0.1 == v``, ``int(v * 2)``).

    The ShapeEnv reasons about such a value as real arithmetic: it folds ``v * 0.0``
    to ``0`` (eager's ``-0.0`` for a negative ``v``) and ``(v + 0.1) - 0.1`` to ``v``
    (eager rounds), so what it decides or guards need not hold for the floats eager
    computes."""
    return any(
        isinstance(n.meta.get("example_value"), torch.SymFloat) and n.op != "placeholder"
        for n in _scalar_ancestors(node)
    )


def pinned_value(node: torch.fx.Node) -> Any:
    """The value of ``node``, float arithmetic included, for the inputs it is computed
    from pinned to their values: each symbolic scalar input (a Python int or float
    argument, a size) is specialised (a guard ``v == 2.5``, exact: such a float is
    finite and non-zero, see builder's ``_symbolic_scalar``), and the value is the
    one the graph's steps compute from those values with Python's own operations
    (:class:`_Recompute`), never the ShapeEnv's real-number one (whose hint for
    ``v // 0.1`` is ``floor(v / 0.1)``: 20.0 where Python's ``2.0 // 0.1`` is 19.0).
    A computation the replay cannot read (an intermediate tensor's size) takes the
    SymNode's hint.

    Raises:
        Unsupported: when an input depends on tensor data.
    """
    for current in _scalar_ancestors(node):
        if not _scalar_inputs(current):
            example = current.meta["example_value"]
            concrete(PYTHON_TYPES[type(example)], example, f"the value of {current.name} ({example})")
    plan = _recompute_plan(node)
    if plan is not None:
        try:
            return plan[1].value(plan[2])
        except Exception:  # noqa: BLE001 - the hint below; the graph meets the error when it runs
            pass
    return node.meta["example_value"].node.hint


class _Slot:
    """An earlier value of a :class:`_Recompute` (its index)."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


class _Recompute:
    """The truth of a scalar computation of the graph, run again on the frame's
    inputs with the graph's own operations: the check of a :class:`RecomputedMatch`.

    ``leaves`` says where each input scalar is read: ``(k, None)`` is the k-th
    input itself (a Python int or float argument), ``(k, dim)`` its size ``dim``;
    ``steps`` are ``(target, args, kwargs)``, an argument being a constant or a
    :class:`_Slot`. Holds no graph node, so the cache entry keeps no trace alive.
    """

    def __init__(self, leaves: list[tuple[int, int | None]], steps: list[tuple[Any, tuple, dict]]):
        self.leaves = leaves
        self.steps = steps

    def __call__(self, *inputs: Any) -> bool | None:
        return self.run([inputs[k] if dim is None else inputs[k].size(dim) for k, dim in self.leaves])

    def run(self, values: list[Any]) -> bool | None:
        """The truth of the last step given the leaves' ``values``; None when a
        step raises (the guard then fails, and the trace meets eager's error)."""
        try:
            return bool(self.value(values))
        except Exception:  # noqa: BLE001 - any error: the inputs do not take the traced branch
            return None

    def value(self, values: list[Any]) -> Any:
        """The last step's value given the leaves' ``values``, computed with the
        steps' own Python operations (raises what a step raises)."""
        def fill(arg: Any) -> Any:
            return values[arg.index] if isinstance(arg, _Slot) else arg

        values = list(values)
        for target, args, kwargs in self.steps:
            values.append(target(*torch.fx.node.map_aggregate(args, fill), **torch.fx.node.map_aggregate(kwargs, fill)))
        return values[-1]


def _recompute_plan(node: torch.fx.Node) -> tuple[list[Any], _Recompute, list[Any], str] | None:
    """``(sources, recompute, leaf values, label)`` for the scalar computation of
    ``node``, or None when part of it cannot be read again from the frame's inputs
    (a size of an intermediate tensor, a value from tensor data, a method call)."""
    ancestors = set(_scalar_ancestors(node))
    order = [n for n in node.graph.nodes if n in ancestors]  # the graph's order: inputs before their users
    sources: list[Any] = []
    leaves: list[tuple[int, int | None]] = []
    hints: list[Any] = []
    words: dict[torch.fx.Node, str] = {}
    for current in order:
        if _scalar_inputs(current):
            continue
        read = _input_read(current)
        if read is None:
            return None
        source, dim = read
        if source not in sources:
            sources.append(source)
        leaves.append((sources.index(source), dim))
        hints.append(current.meta["example_value"].node.hint)
        words[current] = user_name(source) if dim is None else f"{user_name(source)}.size({dim})"
    slots = {n: i for i, n in enumerate(n for n in order if not _scalar_inputs(n))}
    steps = []
    for current in order:
        if current in slots:
            continue
        if current.op != "call_function" or any(n not in slots for n in current.all_input_nodes):
            return None
        slots[current] = len(slots)
        args, kwargs = (torch.fx.node.map_arg(a, lambda n: _Slot(slots[n])) for a in (current.args, current.kwargs))
        steps.append((current.target, args, kwargs))
        shown = torch.fx.node.map_arg(current.args, lambda n: words[n])
        words[current] = f"{getattr(current.target, '__name__', current.target)}({', '.join(map(str, shown))})"
    return sources, _Recompute(leaves, steps), hints, words[node]


def _input_read(node: torch.fx.Node) -> tuple[Any, int | None] | None:
    """``(source, None)`` for a symbolic int/float argument, ``(source, dim)`` for a
    size of an input tensor, else None."""
    if node.op == "placeholder":
        return node.meta.get("source"), None
    if node.target is torch.ops.aten.sym_size.int and node.args[0].op == "placeholder":
        return node.args[0].meta.get("source"), node.args[1]
    return None


def decide_float_arithmetic(tx: Tx, node: torch.fx.Node) -> bool:
    """The truth of ``node``, computed with float arithmetic: the branch Python's
    own operations take on the traced inputs, guarded by a :class:`RecomputedMatch`
    that takes it again on each call's inputs (so one entry serves every input that
    takes the same branch). When the replay itself raises on the traced inputs, or
    reads an input it has no source for, the inputs are pinned (:func:`pinned_value`).
    When part of the computation is a size the replay cannot read from the inputs
    (``x.numel()``, the size of a slice or of any intermediate tensor), the ShapeEnv
    decides and guards it: pinning would specialise a size the user marked dynamic
    (``ConstraintViolationError``). Its guard is a real-number rewrite, exact for
    sizes and constants such as ``n / 2 > 3`` but not where a float constant rounds
    (``int(v // 0.1)`` as a size): that case is still open.

    Raises:
        Unsupported: when an input depends on tensor data.
    """
    plan = _recompute_plan(node)
    if plan is None:  # read from a size the replay cannot read (``x.numel()``, a slice's): the ShapeEnv decides
        example = node.meta["example_value"]
        return concrete(bool, example, f"the value of {node.name} ({example})")
    truth = plan[1].run(plan[2])
    if truth is None or None in plan[0]:
        return bool(pinned_value(node))
    sources, recompute, _, label = plan
    tx.output.guards.add(RecomputedMatch(sources[0], tuple(sources), recompute, truth, label))
    return truth
