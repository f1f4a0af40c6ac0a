"""Sorting as ``list.sort`` and ``sorted`` do it (``Objects/listobject.c``:
``list_sort_impl``): every key first, in order; then CPython's own sort over
the keys, so the comparisons made, their order, stability, ``reverse`` and the
order a raising comparison leaves are eager's. Constant keys compare natively;
any other key (a user object's ``__lt__``, a ``cmp_to_key`` wrapper) by the
traced ``<``, one traced comparison per comparison CPython makes.

While a list sorts in place it is empty: a key or a comparison that reads it
sees ``[]``, what it puts there is discarded, and a list that grew meanwhile
makes the sort raise ``ValueError('list modified during sort')``."""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable

from bytegraph.breaks import HINT_REWRITE, unimplemented
from bytegraph.variables.constant import ConstantVariable, raise_traced, raise_traced_from
from bytegraph.variables.exceptions import TracedException
from bytegraph.variables.operators import call_operator
if TYPE_CHECKING:
    from bytegraph.variables.base import VariableTracker as VT
    from bytegraph.variables.tx import Tx


class _Keyed:
    """An item's index in a sort, ordered by its key's ``<`` (``less``)."""

    __slots__ = ("key", "index", "less")

    def __init__(self, key: Any, index: int, less: Callable[[Any, Any], bool]):
        self.key, self.index, self.less = key, index, less

    def __lt__(self, other: _Keyed) -> bool:
        return self.less(self.key, other.key)


def sort_items(tx: Tx, items: list[VT], key: VT, reverse: bool, in_place: list[VT] | None = None) -> list[VT]:
    """``sorted(items, key=key, reverse=reverse)``. A comparison that raises is
    the traced program's error; a list sorted in place (``in_place``) is then
    left in the partly sorted order eager leaves it in."""
    use_key = not (key.is_python_constant() and key.as_python_constant() is None)
    keys = [key.call_function(tx, [i], {}) if use_key else i for i in items]
    if all(k.is_python_constant() for k in keys):
        keys, less = [k.as_python_constant() for k in keys], operator.lt
    else:
        def less(a: VT, b: VT) -> bool:
            return call_operator(tx, operator.lt, [a, b]).truthy(tx)
    order = [_Keyed(k, n, less) for n, k in enumerate(keys)]
    original = list(items)
    try:
        order.sort(reverse=reverse)
    except Exception as e:  # noqa: BLE001 - the comparison's own error, as eager raises it
        if in_place is not None:
            in_place[:] = [original[k.index] for k in order]
        if less is not operator.lt or isinstance(e, TracedException):
            raise  # raised in the trace already (or a graph break)
        raise_traced_from(e)
    return [original[k.index] for k in order]


def sort_in_place(tx: Tx, lst: Any, key: VT, reverse: bool) -> VT:
    """``lst.sort(key=key, reverse=reverse)`` of a list VT, emptied while it sorts.
    A list the key or a comparison grew raises eager's ValueError; one written to
    but empty again (eager raises or not by whether its buffer was allocated)
    breaks the graph."""
    saved, scratch, writes = lst.items, [], lst.writes
    lst.items = scratch
    try:
        result = sort_items(tx, saved, key, reverse, saved)
    finally:
        grown = lst.items is not scratch or bool(scratch)
        lst.items = saved
    saved[:] = result
    if grown:
        raise_traced(ValueError, "list modified during sort")
    if lst.writes != writes:
        unimplemented(
            gb_type="list modified during sort",
            context="a list written to by its sort's key or comparison, then empty again",
            explanation="CPython raises ValueError('list modified during sort') when such a write allocated "
                        "the list's memory (append, then pop), and not when it did not (clear): bytegraph "
                        "does not model the difference.",
            hints=(HINT_REWRITE,),
        )
    return ConstantVariable(None)
