"""Regions of compiled code that decide whether a graph break raises:
``with bytegraph.error_on_graph_break(flag):`` (or torch's own
``error_on_graph_break``, recognised by ``compat.py`` and traced as it).

Entering pushes the flag on ``OutputGraph.break_regions`` and leaving pops it;
nothing goes in the graph. A break met inside raises or splits the graph as
the innermost flag says (``convert.py``), whatever ``fullgraph`` is. A break
inside the block hands the region, as a :class:`~bytegraph.breaks.GraphBreakRegion`,
with its ``__exit__``, to the resume function, whose trace starts inside it
(``ResumeSpec.regions``) and leaves it where the block ends.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

from bytegraph import compat
from bytegraph.breaks import GraphBreakRegion, error_on_graph_break, unimplemented, user_error
from bytegraph.guards.guards import ConstantMatch, TypeMatch
from bytegraph.guards.source import AttrSource
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.torch_state.base import StateContextVariable, not_entered_here

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class GraphBreakRegionVariable(StateContextVariable):
    """An ``error_on_graph_break(raises)`` region: made in the trace, or an
    object read from ``source`` (a resume function's region, or one made before
    the call)."""

    def __init__(self, raises: bool, source: Any = None):
        super().__init__(source)
        self.raises = raises

    def python_type(self) -> type:
        return GraphBreakRegion

    def enter(self, tx: Tx) -> VT:
        tx.output.break_regions.append(self.raises)
        return ConstantVariable(None)

    def exit(self, tx: Tx, args: Sequence[VT] = ()) -> VT:
        # (a region the trace started inside, a resume function's, is on break_regions too)
        if not tx.output.break_regions:
            not_entered_here(self)
        tx.output.break_regions.pop()
        return ConstantVariable(None)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(GraphBreakRegion)
        codegen.load_const(self.raises)
        codegen.call(1)

    def __repr__(self) -> str:
        return f"GraphBreakRegionVariable(raises={self.raises})"


class BreakRegionFactoryVariable(VariableTracker):
    """``bytegraph.error_on_graph_break`` or torch's ``error_on_graph_break``:
    called on a constant, it is run now (its own checks raise as eager's call
    does) and gives the region."""

    def __init__(self, factory: Callable[..., Any], source: Any = None):
        super().__init__(source)
        self.factory = factory

    def python_type(self) -> type:
        return type(self.factory)

    def as_python_constant(self) -> Any:
        return self.factory

    def is_python_constant(self) -> bool:
        return True

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            unimplemented(
                gb_type="error_on_graph_break region",
                context=f"{self.factory.__qualname__} called with a traced value",
                explanation="Whether breaks raise in the region must be known while tracing.",
                hints=("Pass a constant bool.",),
            )
        try:
            made = self.factory(*[a.as_python_constant() for a in args],
                                **{k: v.as_python_constant() for k, v in kwargs.items()})
        except TypeError as e:  # a wrong call: eager raises it
            user_error("TypeError", context=f"{self.factory.__qualname__}: {e}", hint="Pass one bool.")
        return GraphBreakRegionVariable(region_flag(made)[0])

    def __repr__(self) -> str:
        return f"BreakRegionFactoryVariable({self.factory.__qualname__})"


def region_flag(value: Any) -> tuple[bool, str] | None:
    """(whether breaks raise, the attribute holding that) of a region object,
    bytegraph's or torch's; None for anything else."""
    if type(value) is GraphBreakRegion:
        return value.raises, "raises"
    return compat.break_region_flag(value)


def is_region_factory(value: Any) -> bool:
    """Whether calling ``value`` makes a region: bytegraph's factory or torch's."""
    return value is error_on_graph_break or compat.is_break_region_factory(value)


def wrap_region(tx: Tx, value: Any, source: Any) -> VT | None:
    """The tracker of ``value`` when it makes regions, or is a region made before the
    trace (a resume function's: its type and flag guarded); None for anything else."""
    if is_region_factory(value):
        return BreakRegionFactoryVariable(value, source)
    region = region_flag(value)
    if region is None or source is None:
        return None
    tx.output.guards.add(TypeMatch(source, type(value)))
    tx.output.guards.add(ConstantMatch(AttrSource(source, region[1]), region[0]))
    return GraphBreakRegionVariable(region[0], source)
