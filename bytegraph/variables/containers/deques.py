"""``collections.deque``: a list VT with operations at both ends and a ``maxlen``."""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Sequence

from bytegraph.variables.base import VariableTracker, bad_method
from bytegraph.variables.constant import ConstantVariable, raise_traced
from bytegraph.variables.containers.sequences import ListVariable, const_int, for_each_item

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class DequeVariable(ListVariable):
    """A ``collections.deque``: a list with operations at both ends and a
    ``maxlen``. A bounded deque keeps its last ``maxlen`` items when items
    are added at the right (``append``, ``extend``, ``+=``, ``+``, ``*``) and
    its first when added at the left; ``insert`` into a full one raises."""

    def __init__(self, items: Sequence[VT], maxlen: int | None = None, source=None):
        super().__init__(items, source)
        self.maxlen = maxlen

    def python_type(self) -> type:
        return collections.deque

    def keep(self, items: list[VT], left: bool = False) -> list[VT]:
        """What this deque's ``maxlen`` keeps of ``items`` just added at one end."""
        if self.maxlen is None:
            return list(items)
        return items[: self.maxlen] if left else items[max(0, len(items) - self.maxlen) :]

    def with_items(self, items: Sequence[VT]) -> VT:
        return DequeVariable(self.keep(list(items)), self.maxlen)

    def not_found(self, value: VT) -> str:
        return f"{value.as_python_constant()!r} is not in deque"

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if not hasattr(collections.deque, name):  # list methods a deque lacks (sort)
            return bad_method(self, name)
        if name in ("__getitem__", "__setitem__", "__delitem__") and args and isinstance(
            args[0].as_python_constant(), slice
        ):
            raise_traced(TypeError, "sequence index must be integer, not 'slice'")
        return super().call_method(tx, name, args, kwargs)

    MUTATORS = ListVariable.MUTATORS | {"appendleft", "extendleft", "popleft", "rotate"}

    def method_dunder_init(self, tx: Tx, iterable: VT | None = None, maxlen: VT | None = None) -> VT:
        """``deque.__init__`` (of a deque subclass's instance): refilled, bounded by ``maxlen``."""
        bound = None if maxlen is None else maxlen.as_python_constant()
        if bound is not None and (type(bound) is not int or bound < 0):
            raise_traced(ValueError if type(bound) is int else TypeError, "maxlen must be non-negative"
                         if type(bound) is int else "an integer is required")
        self.maxlen = bound
        self.items.clear()
        if iterable is not None:
            self.method_extend(tx, iterable)
        return ConstantVariable(None)

    def method_append(self, tx: Tx, item: VT) -> VT:
        return self._add(tx, [item], left=False)

    def method_appendleft(self, tx: Tx, item: VT) -> VT:
        return self._add(tx, [item], left=True)

    def method_extend(self, tx: Tx, other: VT) -> VT:
        for_each_item(tx, other, lambda item: self._add(tx, [item], left=False))
        return ConstantVariable(None)

    def method_extendleft(self, tx: Tx, other: VT) -> VT:
        for_each_item(tx, other, lambda item: self._add(tx, [item], left=True))
        return ConstantVariable(None)

    def _add(self, tx: Tx, items: list[VT], left: bool) -> VT:
        """Items added one by one at one end (``extendleft`` reverses them)."""
        self.items[:] = self.keep(items[::-1] + self.items, left=True) if left else self.keep(self.items + items)
        return ConstantVariable(None)

    def method_insert(self, tx: Tx, index: VT, item: VT) -> VT:
        if self.maxlen is not None and len(self.items) >= self.maxlen:
            raise_traced(IndexError, "deque already at its maximum size")
        return super().method_insert(tx, index, item)

    def method_pop(self, tx: Tx, *args: VT) -> VT:
        return self._pop(args, left=False)

    def method_popleft(self, tx: Tx, *args: VT) -> VT:
        return self._pop(args, left=True)

    def _pop(self, args: Sequence[VT], left: bool) -> VT:
        if args:
            raise_traced(TypeError, f"deque.{'popleft' if left else 'pop'}() takes no arguments ({len(args)} given)")
        if not self.items:
            raise_traced(IndexError, "pop from an empty deque")
        return self.items.pop(0 if left else -1)

    def method_rotate(self, tx: Tx, n: VT | None = None) -> VT:
        steps = 1 if n is None else const_int(tx, n)
        if self.items:
            steps %= len(self.items)
            self.items[:] = self.items[len(self.items) - steps :] + self.items[: len(self.items) - steps]
        return ConstantVariable(None)

    def method_copy(self, tx: Tx) -> VT:
        return DequeVariable(self.items, self.maxlen)

    def attr_maxlen(self, tx: Tx) -> VT:
        return ConstantVariable(self.maxlen)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(collections.deque)
        self.reconstruct_contents(codegen)
        codegen.load_const(self.maxlen)
        codegen.call(2)

    def apply_contents(self, codegen: PyCodegen, temp: str) -> None:
        """``source.clear(); source.extend(temp)``."""
        for method, method_args in (("clear", ()), ("extend", (temp,))):
            codegen.load_source(self.source)
            codegen.emit("LOAD_METHOD", method)
            for arg in method_args:
                codegen.load_local(arg)
            codegen.call(len(method_args))
            codegen.emit("POP_TOP")
