"""Dict iterators, and what they walk: CPython's entry table of a dict, where
bytegraph knows it. A dict keeps its keys in an array in insertion order; a deleted
key leaves a hole, and only a resize packs the array again. A resize happens at
an insertion once the table's room is used up (room freed by deleting is not
reused), or at the first insertion of a key that is not exactly a ``str`` into
a table that has held only such keys. A dict made by a display of at most five
items starts from the empty dict and gets an eight-slot table (room for five
insertions) at its first insertion, as does any dict after ``clear()``; a larger
display gets a table of its size, without holes. Where the room left is not
followed (after a resize), the layout is known while no insertion meets a hole.
The holes and positions here are then CPython's exactly, and an iterator over
it can answer as CPython's does (``dictionary keys changed during iteration``
where it finds a key after as many steps as the dict had keys)."""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any, Iterable

from bytegraph.breaks import user_error
from bytegraph.variables.constant import raise_traced
from bytegraph.variables.containers import sequences
from bytegraph.variables.containers.iterators import IteratorVariable, iterator_at

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.base import VariableTracker as VT
    from bytegraph.variables.containers.dicts import DictVariable
    from bytegraph.variables.tx import Tx

#: a deleted entry
HOLE = object()
#: insertions an eight-slot table takes before the next one resizes it
USABLE = 5
#: :attr:`EntryTable.room` of the empty dict's shared table (no room: the first insertion allocates)
EMPTY = -1


class EntryTable:
    """The entries of a dict as CPython lays them out, where known (otherwise
    :attr:`lost`), and counts of the deletions that changed its layout and of
    the keys added, removed or moved (what a C OrderedDict's ``od_state`` counts)."""

    def __init__(self, known: bool, presized: bool = False) -> None:
        self.entries: list[Any] = []
        #: insertions the table takes before it resizes (None: unknown; EMPTY: the empty dict's table)
        self.room: int | None = None if presized else EMPTY
        #: whether all keys of the table were exactly ``str`` (its first non-str key resizes it)
        self.str_keys = True
        self.lost = not known
        #: deletions so far: an iterator that saw the count change cannot trust its key list
        self.deletions = 0
        #: keys added, deleted or moved (``clear()`` is not counted: an OrderedDict's is its own)
        self.changes = 0
        #: whether a key was deleted since the table was empty: a later key may take its index slot
        self.freed = False

    def insert(self, hkey: Any) -> None:
        self.changes += 1
        exact_str = type(hkey) is str
        if self.room == EMPTY:  # the first insertion: an eight-slot table of this key's kind
            self.room, self.str_keys = USABLE, exact_str
        elif self.room == 0 or self.str_keys and not exact_str:
            self.room = None  # a resize packs the entries, into a table of a size not followed here
            self.entries = [e for e in self.entries if e is not HOLE]
        elif self.room is None and HOLE in self.entries:
            self.lost = True  # it may have resized, or not
        self.str_keys = self.str_keys and exact_str
        self.room = None if self.room is None else self.room - 1
        self.entries = [] if self.lost else [*self.entries, hkey]

    def delete(self, hkey: Any) -> None:
        self.deletions, self.changes, self.freed = self.deletions + 1, self.changes + 1, True
        if hkey in self.entries:
            self.entries[self.entries.index(hkey)] = HOLE

    def pop_last(self, hkey: Any) -> None:
        """``popitem()``: the last entry goes, and the table ends where it was."""
        self.deletions, self.changes, self.freed = self.deletions + 1, self.changes + 1, True
        if hkey in self.entries:
            del self.entries[self.entries.index(hkey):]

    def moved(self) -> None:
        """An OrderedDict's ``move_to_end``: its order is its own."""
        self.deletions, self.changes = self.deletions + 1, self.changes + 1
        self.lost = True

    def clear(self) -> None:
        """``clear()``: back to the empty dict's table, whose layout is known again."""
        self.deletions += 1
        self.entries, self.room, self.str_keys, self.lost, self.freed = [], EMPTY, True, False, False

    def walkable(self, keys: Iterable[Any]) -> bool:
        """Whether positions are known and the entries hold ``keys``, in order."""
        return not self.lost and [e for e in self.entries if e is not HOLE] == list(keys)

    def packed(self) -> bool:
        """Whether the entries have no holes (a dict rebuilt from its keys lays them out alike)."""
        return HOLE not in self.entries


class DictIteratorVariable(IteratorVariable):
    """``iter(d)`` or ``iter(d.keys()/values()/items())`` of a DictVariable.

    Keys are visited in their order when iteration started; values are read at
    each step. Changing the dict's size meanwhile raises eager's RuntimeError in
    the trace (and again at each later step, as CPython's iterator stays broken);
    an iterator that has ended stays ended. A C OrderedDict's iterator raises
    where a key was added, deleted or moved, unless it has returned its last
    key. Where the dict's entry table is known (:mod:`.dict_entries`), the
    iterator walks it as CPython's does: keys
    replaced at the same size are met in their new places, and a key found after
    as many steps as the dict had keys raises eager's RuntimeError. Otherwise
    deleting and inserting keys at the same size, or clearing an OrderedDict,
    runs natively.
    """

    def __init__(self, dict_vt: DictVariable, kind: str = "keys", owner: VT | None = None):
        super().__init__()
        self.dict_vt = dict_vt
        #: the dict subclass's instance whose items ``dict_vt`` holds (rebuilt through it)
        self.owner = owner
        self.kind = kind
        self.keys = list(dict_vt.items)
        self.size = len(dict_vt.items)
        self.index = 0
        #: CPython's ``di_pos`` and ``len``, and whether the iterator let go of its dict
        self.pos, self.remaining, self.ended = 0, self.size, False
        self.ordered = issubclass(dict_vt.python_type(), collections.OrderedDict)
        self.deletions, self.changes = dict_vt.entries.deletions, dict_vt.entries.changes
        self.walks = not self.ordered and dict_vt.entries.walkable(self.keys)

    def python_type(self) -> type:
        return type(iter(getattr({}, self.kind)()))

    def next_item(self, tx: Tx) -> VT | None:
        if self.ended:
            return None
        if self.ordered:
            return self._ordered_step()
        if len(self.dict_vt.items) != self.size:
            self.size = -1  # sticky, as eager's
            raise_traced(RuntimeError, "dictionary changed size during iteration")
        table = self.dict_vt.entries
        if self.walks and table.walkable(self.dict_vt.items):
            return self._walk(table.entries)
        if table.deletions != self.deletions:  # keys changed at the same size: where eager raises, natively
            self._unmodelled_change()
        return self._listed_step()

    def _ordered_step(self) -> VT | None:
        """A C OrderedDict's iterator: done once it returned the last key; else a
        key added, deleted or moved since it started raises (and ends it)."""
        if self.index >= len(self.keys):
            self.ended = True
            return None
        if self.dict_vt.entries.changes != self.changes:
            self.ended = True
            raise_traced(RuntimeError, "OrderedDict mutated during iteration")
        if len(self.dict_vt.items) != self.size or self.dict_vt.entries.deletions != self.deletions:
            self._unmodelled_change()  # cleared: its own rules, natively
        return self._listed_step()

    @staticmethod
    def _unmodelled_change() -> None:
        user_error(
            "RuntimeError",
            context="dictionary changed during iteration",
            hint="Iterate over a copy (list(d)) when changing the dict in the loop.",
        )

    def _listed_step(self) -> VT | None:
        """The next of the keys listed when iteration started."""
        if self.index >= len(self.keys):
            self.ended = True
            return None
        self.index += 1
        return self._item(self.keys[self.index - 1])

    def _walk(self, entries: list) -> VT | None:
        """One step of CPython's dict iterator over the known entries."""
        i = self.pos
        while i < len(entries) and entries[i] is HOLE:
            i += 1
        if i >= len(entries):
            self.ended = True
            return None
        if self.remaining == 0:
            self.ended = True
            raise_traced(RuntimeError, "dictionary keys changed during iteration")
        self.pos, self.remaining = i + 1, self.remaining - 1
        self.index = self.keys.index(entries[i]) + 1 if entries[i] in self.keys else len(self.keys)
        return self._item(entries[i])

    def _item(self, hkey: Any) -> VT:
        key, value = self.dict_vt.items[hkey]
        if self.kind == "keys":
            return key
        if self.kind == "values":
            return value
        return sequences.TupleVariable([key, value])

    def reconstruct(self, codegen: PyCodegen) -> None:
        """The dict's own iterator of this kind, stepped to where the trace left
        it, while the dict holds the keys it held, in that order, when iteration
        started, none deleted meanwhile, and the iterator has not ended (the
        rebuilt iterator then yields what the traced one would, and still sees
        later changes as eager's does); otherwise it cannot be rebuilt."""
        if self.size != len(self.dict_vt.items) or list(self.dict_vt.items) != self.keys or (
                self.ended or self.deletions != self.dict_vt.entries.deletions):
            super().reconstruct(codegen)
            return
        codegen.load_callable(iterator_at)
        if self.owner is not None:  # the base's view of the instance, past any override
            codegen.load_callable(getattr(self.dict_vt.dict_cls, self.kind))
            codegen.reconstruct(self.owner)
            codegen.call(1)
        else:
            codegen.reconstruct(self.dict_vt)
            codegen.load_method(self.kind)
            codegen.call(0)
        codegen.load_const(self.index)
        codegen.call(2)

    def __repr__(self) -> str:
        return f"DictIteratorVariable({self.kind}, {self.index}/{len(self.keys)})"
