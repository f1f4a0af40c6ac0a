"""A tuple of constants passed in (an argument, a global, an attribute), read
by the trace item by item: guarded as it is read, so a change to an item the
trace never read does not recompile."""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Sequence

from bytegraph.guards.guards import ConstantMatch, LenMatch
from bytegraph.guards.source import GetItemSource
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.containers.sequences import TupleVariable
if TYPE_CHECKING:
    from bytegraph.variables.base import VariableTracker as VT
    from bytegraph.variables.tx import Tx


class ConstantTupleInput(TupleVariable):
    """A tuple of constants that existed before the call, guarded as it is read:
    an item read by a constant index guards the length and that item (a change
    to an item the trace never read does not recompile); anything else that
    reads the items guards the whole tuple, in one comparison."""

    def __init__(self, value: tuple, source: Any, guards: Any):
        self.value = value
        self._guards = guards
        self._pinned = False
        super().__init__([ConstantVariable(v) for v in value], source)

    @property
    def items(self) -> list[VT]:
        if not self._pinned:
            self._pinned = True
            self._guards.add(ConstantMatch(self.source, self.value))
        return self._items

    @items.setter
    def items(self, items: list[VT]) -> None:
        self._items = items

    override_rank = 1  # ``t[i]`` comes here before operands all known now are computed (that reads every item)

    def operator_override(self, tx: Tx, op: Any, args: Sequence[VT]) -> Any:
        if op is operator.getitem and len(args) == 2 and args[0] is self:
            return self.getitem(tx, args[1])
        return NotImplemented

    def getitem(self, tx: Tx, index: VT) -> VT:
        idx = index.as_python_constant() if index.is_python_constant() else None
        if self._pinned or type(idx) is not int or not -len(self.value) <= idx < len(self.value):
            return super().getitem(tx, index)
        idx %= len(self.value)
        self._guards.add(LenMatch(self.source, tuple, len(self.value)))
        self._guards.add(ConstantMatch(GetItemSource(self.source, idx), self.value[idx]))
        return self._items[idx]

    def with_items(self, items: Sequence[VT]) -> VT:
        return TupleVariable(items)

    def __repr__(self) -> str:
        return f"ConstantTupleInput({self.value!r})"
