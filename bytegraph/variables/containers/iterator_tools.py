"""Iterators made from other iterables: ``enumerate``, ``zip``, ``map``,
``filter`` (lazy, one step at a time), and ``itertools`` on traced values.

``itertools``:

Functions that only rearrange their inputs (``chain``, ``product``,
``zip_longest``, ``islice``, ``combinations``, ``permutations``, ``pairwise``,
``compress``, ``repeat`` with a count) are applied to the *lists of VTs* the
iterables unpack to: the real ``itertools`` function does the rearranging, and
the VTs ride along unchanged. Items the function only tests for truth
(``compress``'s selectors) are passed as the traced ``bool()`` of each VT,
never as the VTs (which are all true objects). ``accumulate`` adds with the traced ``+``.
``count`` and ``repeat`` without a count are infinite: they become lazy
iterators, so ``zip(count(), xs)`` works.
"""
from __future__ import annotations

import itertools
import operator
import types
from typing import TYPE_CHECKING, Any, Callable, Sequence

from bytegraph.breaks import unimplemented, user_error
from bytegraph.guards.guards import ConstantMatch, TypeMatch
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.constant import ConstantVariable, errors_are_the_programs
from bytegraph.variables.containers.iterators import (
    IteratorVariable,
    ListIteratorVariable,
    iterator_state,
    state_sources,
)
from bytegraph.variables.containers.sequences import TupleVariable
from bytegraph.variables.operators import call_operator
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: itertools functions applied to unpacked VT lists; the value says which
#: arguments are iterables ("all", or the indices of iterable positions).
REARRANGING: dict[Callable, Any] = {
    itertools.chain: "all",
    itertools.product: "all",
    itertools.zip_longest: "all",
    itertools.islice: (0,),
    itertools.combinations: (0,),
    itertools.combinations_with_replacement: (0,),
    itertools.permutations: (0,),
    itertools.pairwise: (0,),
    itertools.compress: (0, 1),
}

#: arguments whose items the function uses only by their truth value (so
#: they are passed to it as bools, decided by the traced ``bool()``).
BY_TRUTH: dict[Callable, tuple[int, ...]] = {
    itertools.compress: (1,),
}


def _as_vt(value: Any) -> VT:
    """Re-wrap what the real itertools produced from VT lists: tuples of VTs."""
    if isinstance(value, tuple):
        return TupleVariable([_as_vt(v) for v in value])
    return value


class CountIteratorVariable(IteratorVariable):
    """``itertools.count(start, step)`` (or ``repeat(obj)``): infinite, so lazy."""

    def __init__(self, start: VT, step: VT | None):
        super().__init__()
        self.current = start
        self.step = step

    def next_item(self, tx: Tx) -> VT | None:
        item = self.current
        if self.step is not None:
            self.current = call_operator(tx, operator.add, [self.current, self.step])
        return item

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        unimplemented(
            gb_type="infinite iterator",
            context="materialising itertools.count/repeat",
            explanation="The iterator never ends; only lazy consumption (zip, next, a loop with break) is traced.",
            hints=("Bound it, e.g. with zip() or itertools.islice().",),
        )

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.step is None:
            codegen.load_callable(itertools.repeat)
            codegen.reconstruct(self.current)
            codegen.call(1)
        else:
            codegen.load_callable(itertools.count)
            codegen.reconstruct(self.current)
            codegen.reconstruct(self.step)
            codegen.call(2)


class ItertoolsFunctionVariable(ConstantCallableVariable):
    """One callable of ``itertools``."""

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if self.fn is itertools.chain and name == "from_iterable":
            return ItertoolsFunctionVariable(itertools.chain.from_iterable)
        return super().var_getattr(tx, name)

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        fn = self.fn
        if fn == itertools.chain.from_iterable and len(args) == 1 and not kwargs:  # a new bound method each read
            return ListIteratorVariable([item for part in args[0].unpack_var_sequence(tx)
                                         for item in part.unpack_var_sequence(tx)], cls=itertools.chain)
        if fn is itertools.count:
            start = args[0] if args else kwargs.get("start", ConstantVariable(0))
            step = args[1] if len(args) > 1 else kwargs.get("step", ConstantVariable(1))
            return CountIteratorVariable(start, step)
        if fn is itertools.repeat:
            times = args[1] if len(args) > 1 else kwargs.get("times")
            if times is None:
                return CountIteratorVariable(args[0], None)
            return ListIteratorVariable([args[0]] * times.as_python_constant(), cls=itertools.repeat)
        if fn is itertools.starmap and len(args) == 2 and not kwargs:
            return StarmapVariable(args[0], args[1].get_iter(tx))
        if fn is itertools.accumulate and len(args) == 1:
            return self._accumulate(tx, args[0], kwargs)
        positions = REARRANGING.get(fn)
        if positions is not None:
            return self._rearrange(tx, positions, args, kwargs)
        unimplemented(
            gb_type="unsupported itertools function",
            context=f"itertools.{getattr(fn, '__name__', fn)}",
            explanation="This itertools function calls user code or is not modelled.",
            hints=("Materialise the values first, or move this out of the compiled function.",),
        )

    def _rearrange(self, tx: Tx, positions: Any, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        iterable = set(range(len(args))) if positions == "all" else set(positions)
        truth = BY_TRUTH.get(self.fn, ())
        constants = [() if i in iterable else a.as_python_constant() for i, a in enumerate(args)]
        with errors_are_the_programs():  # a bad count (``islice(it, -1)``): eager's error, no item read first
            self.fn(*constants, **{k: v.as_python_constant() for k, v in kwargs.items() if k != "fillvalue"})
        real_args = [a.unpack_var_sequence(tx) if i in iterable else a.as_python_constant() for i, a in enumerate(args)]
        for i in truth:
            if i < len(real_args):
                real_args[i] = [item.truthy(tx) for item in real_args[i]]
        real_kwargs = {k: (v if k == "fillvalue" else v.as_python_constant()) for k, v in kwargs.items()}
        if self.fn is itertools.zip_longest:
            real_kwargs.setdefault("fillvalue", ConstantVariable(None))
        result = self.fn(*real_args, **real_kwargs)
        return ListIteratorVariable([_as_vt(v) for v in result], cls=type(result))

    def _accumulate(self, tx: Tx, iterable: VT, kwargs: dict[str, VT]) -> VT:
        func = kwargs.get("func")
        initial = kwargs.get("initial")
        out: list[VT] = [] if initial is None else [initial]
        for item in iterable.unpack_var_sequence(tx):
            if not out:
                out.append(item)
            elif func is None or (func.is_python_constant() and func.as_python_constant() is None):
                out.append(call_operator(tx, operator.add, [out[-1], item]))
            else:
                out.append(func.call_function(tx, [out[-1], item], {}))
        return ListIteratorVariable(out, cls=itertools.accumulate)

    def __repr__(self) -> str:
        return f"ItertoolsFunctionVariable({getattr(self.fn, '__name__', self.fn)})"


def is_itertools_callable(value: Any) -> bool:
    return callable(value) and getattr(value, "__module__", None) == "itertools" or (
        isinstance(value, types.BuiltinMethodType) and value == itertools.chain.from_iterable)


class EnumerateVariable(IteratorVariable):
    """``enumerate(it, start)``: advances ``it`` one item per step (lazy, as in eager)."""

    def __init__(self, iterator: IteratorVariable, start: int):
        super().__init__()
        self.iterator = iterator
        self.count = start

    def python_type(self) -> type:
        return enumerate

    def next_item(self, tx: Tx) -> VT | None:
        item = self.iterator.next_item(tx)
        if item is None:
            return None
        self.count += 1
        return TupleVariable([ConstantVariable(self.count - 1), item])

    def reconstruct(self, codegen: PyCodegen) -> None:
        """``enumerate(rest_of_iterator, next_count)``: live after the graph, rebuilt at its position."""
        codegen.load_callable(enumerate)
        codegen.reconstruct(self.iterator)
        codegen.load_const(self.count)
        codegen.call(2)


class ZipVariable(IteratorVariable):
    """``zip(*iterators, strict=...)``: one item from each iterator per step,
    stopping at the first exhausted one (items already taken are dropped, as in eager)."""

    def __init__(self, iterators: Sequence[IteratorVariable], strict: bool):
        super().__init__()
        self.iterators = list(iterators)
        self.strict = strict

    def python_type(self) -> type:
        return zip

    def next_item(self, tx: Tx) -> VT | None:
        if not self.iterators:
            return None
        items = []
        for n, iterator in enumerate(self.iterators):
            item = iterator.next_item(tx)
            if item is None:
                if self.strict and (n > 0 or any(it.next_item(tx) is not None for it in self.iterators[1:])):
                    user_error(
                        "ValueError",
                        context="zip(strict=True) over iterables of different lengths",
                        hint="Zip iterables of equal length.",
                    )
                return None
            items.append(item)
        return TupleVariable(items)

    def reconstruct(self, codegen: PyCodegen) -> None:
        """``zip(*rest_of_iterators, strict=...)``, rebuilt at its position (an input: itself)."""
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(zip)
        for iterator in self.iterators:
            codegen.reconstruct(iterator)
        if self.strict:
            codegen.load_const(True)
            codegen.emit("KW_NAMES", ("strict",))
        codegen.call(len(self.iterators) + int(self.strict))


class MapVariable(IteratorVariable):
    """``map(fn, *iterators)``: calls ``fn`` (traced) one step at a time."""

    def __init__(self, fn: VT, iterators: Sequence[IteratorVariable]):
        super().__init__()
        self.fn = fn
        self.iterators = list(iterators)

    def python_type(self) -> type:
        return map

    def next_item(self, tx: Tx) -> VT | None:
        args = []
        for iterator in self.iterators:
            item = iterator.next_item(tx)
            if item is None:
                return None
            args.append(item)
        return self.fn.call_function(tx, args, {})

    def reconstruct(self, codegen: PyCodegen) -> None:
        """``map(fn, *rest_of_iterators)``, rebuilt at its position (an input: itself)."""
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(map)
        codegen.reconstruct(self.fn)
        for iterator in self.iterators:
            codegen.reconstruct(iterator)
        codegen.call(1 + len(self.iterators))


class StarmapVariable(IteratorVariable):
    """``itertools.starmap(fn, iterator)``: calls ``fn`` (traced) on each item
    unpacked as its arguments, one step at a time."""

    def __init__(self, fn: VT, iterator: IteratorVariable):
        super().__init__()
        self.fn = fn
        self.iterator = iterator

    def python_type(self) -> type:
        return itertools.starmap

    def next_item(self, tx: Tx) -> VT | None:
        item = self.iterator.next_item(tx)
        return None if item is None else self.fn.call_function(tx, item.unpack_var_sequence(tx), {})

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(itertools.starmap)
        codegen.reconstruct(self.fn)
        codegen.reconstruct(self.iterator)
        codegen.call(2)


class FilterVariable(IteratorVariable):
    """``filter(fn, iterator)`` (``fn`` None: truth of the item), one step at a time."""

    def __init__(self, fn: VT | None, iterator: IteratorVariable):
        super().__init__()
        self.fn = fn
        self.iterator = iterator

    def python_type(self) -> type:
        return filter

    def next_item(self, tx: Tx) -> VT | None:
        while (item := self.iterator.next_item(tx)) is not None:
            keep = item if self.fn is None else self.fn.call_function(tx, [item], {})
            if keep.truthy(tx):
                return item
        return None

    def reconstruct(self, codegen: PyCodegen) -> None:
        """``filter(fn, rest_of_iterator)``, rebuilt at its position (an input: itself)."""
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(filter)
        if self.fn is None:
            codegen.load_const(None)
        else:
            codegen.reconstruct(self.fn)
        codegen.reconstruct(self.iterator)
        codegen.call(2)


def wrap_resume_enumerate(tx: Tx, value: enumerate, source: Any, wrap: Any) -> VT | None:
    """An ``enumerate`` object on the stack of a resume function (a break inside
    ``for i, x in enumerate(...)``) that the code at the break built from an
    enumerate the trace made, for this call only (``ResumeSpec.fresh``; the
    builder checks), so its count (which cannot be written back) is modelled
    freely; its inner iterator is wrapped as any
    input. Rebuilt anew when live after the graph. Returns None when the inner
    iterator is not one bytegraph can read."""
    inner, count = iterator_state(value)
    inner_source, count_source = state_sources(source)
    tx.output.guards.add(TypeMatch(source, enumerate))
    tx.output.guards.add(ConstantMatch(count_source, count))
    iterator = wrap(tx, inner, inner_source)
    return EnumerateVariable(iterator, count) if isinstance(iterator, IteratorVariable) else None


def wrap_combining_iterator(tx: Tx, value: Any, source: Any, wrap: Any) -> VT | None:
    """An input ``zip``, ``map`` or ``filter`` (e.g. the iterator of a loop
    handed to a resume function after a graph break inside the loop). They
    hold no state but their function and the iterators they advance (read
    through :func:`iterator_state`, each wrapped as any input, so their
    positions are written back after the graph): modelled as the ones the
    trace makes, loaded as themselves when live after the graph. Returns None
    when an inner iterator is not one bytegraph can read."""
    kind = type(value)
    first, second = iterator_state(value)
    first_source, second_source = state_sources(source)
    tx.output.guards.add(TypeMatch(source, kind))
    if kind is zip:
        tx.output.guards.add(ConstantMatch(second_source, second))
        iterators, fn = wrap(tx, first, first_source), None
    else:
        fn, iterators = wrap(tx, first, first_source), wrap(tx, second, second_source)
    inner = iterators.unpack_var_sequence(tx) if kind is not filter else [iterators]
    if not all(isinstance(it, IteratorVariable) for it in inner):
        return None
    if kind is zip:
        vt: IteratorVariable = ZipVariable(inner, second)
    elif kind is map:
        vt = MapVariable(fn, inner)
    else:
        vt = FilterVariable(None if first is None else fn, inner[0])
    vt.source = source
    return vt
