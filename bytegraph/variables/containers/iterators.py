"""The iterators ``for`` loops use: over containers (lists, tuples, ranges,
sets, dicts), generators, user objects with a Python ``__next__``, and input
iterators read through their state. ``enumerate``/``zip``/``map``/``filter``
and ``itertools`` are in :mod:`~bytegraph.variables.containers.iterator_tools`."""
from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any, Callable, Sequence

from bytegraph.breaks import Unsupported, unimplemented
from bytegraph.guards.guards import ConstantMatch, TypeMatch
from bytegraph.guards.source import ConvertSource, GetItemSource
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable, raise_traced, unmodelled_method
from bytegraph.variables.containers import sequences
from bytegraph.variables.exceptions import ExceptionVariable, TracedException
from bytegraph.variables.tx import list_iterator, range_iterator

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.containers.sets import SetVariable
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class IteratorVariable(VariableTracker):
    """Base of iterators the translator can advance at trace time."""

    mutable = True

    def next_item(self, tx: Tx) -> VT | None:
        """The next item, or None when exhausted."""
        raise NotImplementedError(type(self).__name__)

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return True

    def contains_op(self, tx: Tx, item: VT) -> None:
        """``x in it`` consumes the iterator up to ``x``: not modelled (a graph break)."""
        return None

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        items = []
        while (item := self.next_item(tx)) is not None:
            items.append(item)
        return items

    def truthy(self, tx: Tx) -> bool:
        return True

    def get_iter(self, tx: Tx) -> VT:
        return self

    unhandled_method = unmodelled_method

    def method_dunder_iter(self, tx: Tx, /) -> VT:
        return self

    def method_dunder_next(self, tx: Tx, /) -> VT:
        item = self.next_item(tx)
        if item is None:
            raise_traced(StopIteration)
        return item


class GeneratorVariable(IteratorVariable):
    """A generator created in the trace; ``frame`` is its suspended inlined
    frame (an ``InliningTranslator``), advanced to the next ``yield`` by
    :meth:`next_item` and closed by ``close()``.

    A generator dropped while suspended is closed by CPython when it is
    collected, running its ``finally``/``with`` cleanup then; the trace does
    not track references, so it cannot tell when that happens. Instead the
    compiled frame checks, wherever a graph ends, for a generator of the trace
    suspended where closing it would run code, and if there is one breaks the
    graph at the call that created it, so it is a real generator at run time
    (see ``InstructionTranslator.check_suspended_generators``). A generator
    live after the graph breaks there too (see :meth:`reconstruct`).
    """

    def __init__(self, frame: Any):
        super().__init__()
        self.frame = frame

    def python_type(self) -> type:
        return types.GeneratorType

    def next_item(self, tx: Tx) -> VT | None:
        """The next yielded item, None once exhausted.

        Raises:
            TracedException: what the generator's frame raises (PEP 479 applied).
        """
        return self.frame.resume_generator(tx)

    def method_close(self, tx: Tx, /) -> VT:
        self.frame.close_generator(tx)
        return ConstantVariable(None)

    def method_send(self, tx: Tx, value: VT, /) -> VT:
        """``gen.send(value)`` (CPython's ``gen_send_ex``): ``value`` becomes the
        suspended ``yield``'s value; StopIteration(returned value) once the frame returns."""
        if self.frame.done:  # (a finished generator returns nothing more)
            raise TracedException(ExceptionVariable(StopIteration, []))
        if not self.frame.started and not (value.is_python_constant() and value.as_python_constant() is None):
            raise_traced(TypeError, "can't send non-None value to a just-started generator")
        return self._resumed(tx, self.frame.resume_generator(tx, sent=value))

    def method_throw(self, tx: Tx, exc: VT, value: VT | None = None, traceback: VT | None = None, /) -> VT:
        """``gen.throw(exc)``, or ``gen.throw(type, value, traceback)`` as 3.11's
        ``contextlib`` calls it (the value, when an exception, is what is thrown):
        ``exc`` (a class is instantiated) is raised where the frame is suspended;
        an unstarted or finished frame just raises it."""
        if value is not None and not (value.is_python_constant() and value.as_python_constant() is None):
            exc = value
        if not isinstance(exc, ExceptionVariable):
            exc = exc.call_function(tx, [], {}) if exc.is_python_constant() and isinstance(
                exc.as_python_constant(), type) else exc
        target = self.frame.yield_from_target()
        if isinstance(exc, ExceptionVariable) and isinstance(target, GeneratorVariable) and self.frame.started and (
                not issubclass(exc.python_type(), GeneratorExit)):
            return self._throw_through(tx, target, exc)
        if not isinstance(exc, ExceptionVariable) or target is not None:
            unimplemented(
                gb_type="generator throw",
                context=f"{self}.throw({exc})",
                explanation="bytegraph throws exceptions created in the trace into generators of the trace that "
                            "do not delegate with yield from.",
                hints=("Throw outside the compiled function.",),
            )
        if not self.frame.started or self.frame.done:
            self.frame.done = True
            raise TracedException(exc)
        return self._resumed(tx, self.frame.resume_generator(tx, throw=exc))

    def _throw_through(self, tx: Tx, inner: GeneratorVariable, exc: VT) -> VT:
        """``throw`` into a generator suspended in ``yield from inner`` (CPython's
        ``_gen_throw``): thrown into ``inner``, run with this frame as its
        caller; what ``inner`` yields is this generator's next item, an
        exception it lets out is raised here, at the ``yield from``."""
        self.frame.caller = tx
        try:
            return inner.method_throw(self.frame, exc)
        except TracedException as e:
            if issubclass(e.exc.python_type(), StopIteration):
                unimplemented(
                    gb_type="generator throw",
                    context=f"{self}.throw({exc}) ending the generator it delegates to",
                    explanation="bytegraph does not resume a yield from with the value of a generator that "
                                "returns on a throw.",
                    hints=("Throw outside the compiled function.",),
                )
            return self._resumed(tx, self.frame.resume_generator(tx, throw=e.exc))

    def _resumed(self, tx: Tx, item: VT | None) -> VT:
        """What ``send``/``throw`` return: the next yielded item; StopIteration
        carrying the frame's return value once it has returned."""
        if item is not None:
            return item
        returned = self.frame.return_value
        returned_none = returned is None or returned.is_python_constant() and returned.as_python_constant() is None
        raise TracedException(ExceptionVariable(StopIteration, [] if returned_none else [returned]))

    def reconstruct(self, codegen: PyCodegen) -> None:
        """A traced generator's suspended frame cannot be rebuilt.

        Raises:
            Unsupported: moved to the instruction that created the generator,
                so the frame breaks there and the generator is a real one.
        """
        try:
            unimplemented(
                gb_type="cannot reconstruct",
                context=f"generator {self.frame.code.co_qualname} is live after the graph",
                explanation="A generator traced in the compiled region cannot be rebuilt in the generated code; "
                "the generator is created natively instead.",
                hints=("Consume the generator inside the compiled function.",),
            )
        except Unsupported as brk:
            self.frame.birth.relocate(brk)
            raise

    def __repr__(self) -> str:
        return f"GeneratorVariable({self.frame.code.co_qualname})"


def iterator_type(obj: VT, make: Callable[[Any], Any] = iter) -> type:
    """The type of ``make(value)`` (``iter`` or ``reversed``) for the value ``obj``
    stands for: of the value itself when it is a constant (``iter("é")`` and
    ``iter("e")`` differ), else of an empty instance of its nearest builtin class
    (``reversed`` of a list is a ``list_reverseiterator``, of an ``OrderedDict``
    an ``odict_iterator``)."""
    try:
        if obj.is_python_constant():
            return type(make(obj.as_python_constant()))
        base = next(c for c in obj.python_type().__mro__ if c.__module__ in ("builtins", "collections"))
        return type(make(base()))
    except TypeError:  # (not iterable as such: the iterator the trace lists stands for it)
        return type(iter([]))


def iterator_over(items: Sequence[VT], of: VT | None = None) -> ListIteratorVariable:
    """An iterator over ``items`` that iterating ``of`` gives (of its eager type)."""
    return ListIteratorVariable(items, cls=iterator_type(of) if of is not None else None)


class ListIteratorVariable(IteratorVariable):
    """An iterator over items known at trace time (loops are unrolled).

    With an ``owner`` (a list VT: ``iter(some_list)``) ``items`` is the list's
    own item list, not a copy: items appended to the list during the loop are
    visited, as in eager, and an iterator that outlives the graph is rebuilt
    as a ``list_iterator`` over that list (later appends are seen); others are
    rebuilt as an iterator over a tuple of the remaining items.

    Once a step finds no item the iterator is ``exhausted`` for good, as
    CPython's are: items appended to the list later are not visited.
    """

    #: see :meth:`SideEffects.codegen_values`
    write_back_last = True

    def __init__(self, items: Sequence[VT], index: int = 0, owner: VT | None = None, cls: type | None = None):
        super().__init__()
        self.owner = owner
        self.items = owner.items if owner is not None else list(items)
        self.index = index
        self.exhausted = False
        self.cls = cls or type(iter([]))  # the type of the iterator eager makes (iterator_type)

    def python_type(self) -> type:
        return self.cls

    def next_item(self, tx: Tx) -> VT | None:
        """The next item, or None when exhausted (then for good)."""
        if self.exhausted or self.index >= len(self.items):
            self._advance(tx, self.index, exhausted=True)
            return None
        item = self.items[self.index]
        self._advance(tx, self.index + 1)
        return item

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        rest = self.remaining()
        self._advance(tx, len(self.items), exhausted=True)
        return rest

    def remaining(self) -> list[VT]:
        """The items later steps visit (none once exhausted)."""
        return [] if self.exhausted else self.items[self.index :]

    def position(self) -> int | None:
        """Where the iterator stands, None once exhausted (the form :func:`iterator_at` and
        :func:`set_position` take)."""
        return None if self.exhausted else self.index

    def _advance(self, tx: Tx, index: int, exhausted: bool = False) -> None:
        if self.source is not None and (index, exhausted) != (self.index, self.exhausted):
            tx.output.side_effects.mutate(self)  # an input iterator: its position is written back after the graph
        self.index, self.exhausted = index, exhausted

    def reconstruct_contents(self, codegen: PyCodegen) -> None:
        """Side-effect replay, phase 1: the position the trace reached."""
        codegen.load_const(self.position())

    def apply_contents(self, codegen: PyCodegen, temp: str) -> None:
        """Phase 2: :func:`set_position` moves the real iterator there."""
        codegen.load_callable(set_position)
        codegen.load_source(self.source)
        codegen.load_local(temp)
        codegen.call(2)
        codegen.emit("POP_TOP")

    def method_dunder_length_hint(self, tx: Tx, /) -> VT:
        return ConstantVariable(max(0, len(self.items) - self.index))

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:  # the real iterator (its position is replayed as a side effect)
            codegen.load_source(self.source)
            return
        if self.owner is not None:
            codegen.load_callable(iterator_at)
            codegen.reconstruct(self.owner)
            codegen.load_const(self.position())
            codegen.call(2)
            return
        rest = self.remaining()
        for item in rest:
            codegen.reconstruct(item)
        codegen.emit("BUILD_TUPLE", len(rest))
        codegen.emit("GET_ITER")

    def __repr__(self) -> str:
        return f"ListIteratorVariable({self.index}/{len(self.items)})"


class RangeIteratorVariable(ListIteratorVariable):
    """``iter(range(...))``: its items are known, its type is ``range_iterator``
    (``isinstance`` checks and a rebuilt iterator see that type, as in eager)."""

    def __init__(self, value: range):
        super().__init__([ConstantVariable(v) for v in value])
        self.range = value

    def python_type(self) -> type:
        return type(iter(self.range))

    def reconstruct_contents(self, codegen: PyCodegen) -> None:
        """Side-effect replay, phase 1, for an input range iterator (read as the
        range it has left, see :func:`iterator_state`): how many steps the trace
        took (None: to its end)."""
        codegen.load_const(self.position())

    def apply_contents(self, codegen: PyCodegen, temp: str) -> None:
        """Phase 2: :func:`advance` steps the real iterator as far (a range
        iterator's ``__setstate__`` counts from where it stands on some Python
        versions and from its start on others; stepping means the same on all)."""
        codegen.load_callable(advance)
        codegen.load_source(self.source)
        codegen.load_local(temp)
        codegen.call(2)
        codegen.emit("POP_TOP")

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            super().reconstruct(codegen)
            return
        codegen.load_callable(iterator_at)
        codegen.load_const(self.range)
        codegen.load_const(self.position())
        codegen.call(2)


#: CPython's iterators over a list, tuple or range: ``__reduce__()`` shows their sequence and
#: position while items remain, and ``__setstate__(position)`` moves them
SEQUENCE_ITERATORS = (type(iter([])), type(iter(())), type(iter(range(0))))


def iterator_state(iterator: Any) -> tuple | None:
    """``(sequence, position)`` of a list/tuple iterator with items left (None
    once exhausted), ``(range left to visit, 0)`` of a range iterator,
    ``(inner iterator, count)`` of an ``enumerate``, ``(iterators, strict)``
    of a ``zip``, ``(function, iterators)`` of a ``map`` and ``(function,
    iterator)`` of a ``filter``: read through ``__reduce__`` here, not in guard
    code (a sequence iterator's ``__reduce__`` looks up the builtin ``iter``
    in its caller's builtins)."""
    reduced = iterator.__reduce__()
    kind = type(iterator)
    if kind is enumerate or kind is filter:
        return reduced[1]
    if kind is zip:
        return reduced[1], len(reduced) > 2 and bool(reduced[2])
    if kind is map:
        return reduced[1][0], reduced[1][1:]
    if len(reduced) != 3:
        return None
    sequence, position = reduced[1][0], reduced[2]
    if type(sequence) is range:  # as the range left to visit (some Python versions reduce to that already)
        return sequence[position or 0:], 0
    return sequence, position


def state_sources(source: Any) -> tuple[Any, Any]:
    state = ConvertSource(source, iterator_state, "iterator_state")
    return GetItemSource(state, 0), GetItemSource(state, 1)


def wrap_sequence_iterator(tx: Tx, value: Any, source: Any, wrap: Any) -> VT | None:
    """An input ``list_iterator``/``tuple_iterator``/``range_iterator`` (e.g.
    the iterator of a ``for`` loop handed to a resume function after a graph
    break inside the loop), read through :func:`iterator_state`: its sequence
    (for a list, the list itself, so appends during the loop are seen) and its
    position (guarded). The loop is unrolled over the remaining items, and the
    position the trace reaches is written back with ``__setstate__`` after the
    graph, so the real iterator ends where eager's would. Returns None for an
    unusual sequence. An iterator exhausted for good (its sequence dropped)
    stays exhausted: modelled empty, guarded so."""
    state = iterator_state(value)
    if state is None:
        tx.output.guards.add(TypeMatch(source, type(value)))
        tx.output.guards.add(ConstantMatch(ConvertSource(source, iterator_state, "iterator_state"), None))
        iterator = ListIteratorVariable(())
        iterator.exhausted, iterator.source = True, source
        return tx.output.side_effects.track(value, iterator)
    if type(state[0]) not in (list, tuple, range):
        return None
    sequence_source, position_source = state_sources(source)
    tx.output.guards.add(TypeMatch(source, type(value)))
    tx.output.guards.add(ConstantMatch(position_source, state[1]))
    sequence = wrap(tx, state[0], sequence_source)
    if type(state[0]) is range:
        iterator: ListIteratorVariable = RangeIteratorVariable(sequence.as_python_constant())
    elif isinstance(sequence, (sequences.ListVariable, sequences.TupleVariable)):
        owner = sequence if isinstance(sequence, sequences.ListVariable) else None
        iterator = ListIteratorVariable(sequence.items, 0, owner)
    else:
        return None
    iterator.index = state[1]
    iterator.source = source
    return tx.output.side_effects.track(value, iterator)


def iterator_at(items: Any, index: int | None) -> Any:
    """``iter(items)`` advanced past ``index`` items, or exhausted for good when
    ``index`` is None (an escaping iterator, rebuilt)."""
    return set_position(iter(items), index)


def advance(iterator: Any, steps: int | None) -> Any:
    """Step ``iterator`` ``steps`` times (to its end when None, where it then
    stays, as eager's does). Returns the iterator."""
    if steps is None:
        return set_position(iterator, None)
    for _ in range(steps):
        next(iterator)
    return iterator


def set_position(iterator: Any, index: int | None) -> Any:
    """Move a fresh or list/tuple/range/set ``iterator`` past ``index`` items
    (``__setstate__`` where it has one), or, when ``index`` is None, run it to its
    end, so that it stays exhausted as eager's does even if its list grows later.
    Returns the iterator."""
    if index is None:
        if hasattr(iterator, "__setstate__"):
            iterator.__setstate__(sys.maxsize)  # clamped to the end: the loop below then takes one step
        for _ in iterator:
            pass
    elif hasattr(iterator, "__setstate__"):
        iterator.__setstate__(index)
    else:
        for _ in range(index):
            next(iterator)
    return iterator


class SetIteratorVariable(ListIteratorVariable):
    """``iter(a_set)``: the set's items at that time; a change of the set's size
    before the next step raises eager's RuntimeError in the traced program."""

    def __init__(self, set_vt: SetVariable):
        super().__init__(set_vt.unpack_var_sequence(None))
        self.set_vt = set_vt
        self.size = len(set_vt.values)

    def python_type(self) -> type:
        return type(iter(set()))

    def next_item(self, tx: Tx) -> VT | None:
        if not self.exhausted and len(self.set_vt.values) != self.size:
            self.size = -1  # sticky, as eager's
            raise_traced(RuntimeError, "Set changed size during iteration")
        return super().next_item(tx)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if not self.exhausted and len(self.set_vt.values) != self.size:  # its next step raises, as eager's
            codegen.load_callable(ChangedSetIterator)
            codegen.call(0)
            return
        codegen.load_callable(iterator_at)  # the set's own iterator: later changes raise natively too
        codegen.reconstruct(self.set_vt)
        codegen.load_const(self.position())
        codegen.call(2)


class ChangedSetIterator:
    """Stands for an iterator over a set whose size changed: its next step raises eager's error."""

    def __iter__(self) -> "ChangedSetIterator":
        return self

    def __next__(self) -> Any:
        raise RuntimeError("Set changed size during iteration")


list_iterator.provide(iterator_over)
range_iterator.provide(RangeIteratorVariable)
