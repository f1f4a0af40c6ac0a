"""CPython's entry table of a dict, where bytegraph knows it: what a dict
iterator walks. A dict keeps its keys in an array in insertion order; a deleted
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

from typing import Any, Iterable

#: a deleted entry
HOLE = object()
#: insertions an eight-slot table takes before the next one resizes it
USABLE = 5
#: :attr:`EntryTable.room` of the empty dict's shared table (no room: the first insertion allocates)
EMPTY = -1


class EntryTable:
    """The entries of a dict as CPython lays them out, where known (otherwise
    :attr:`lost`), and a count of the deletions that changed its layout."""

    def __init__(self, known: bool, presized: bool = False) -> None:
        self.entries: list[Any] = []
        #: insertions the table takes before it resizes (None: unknown; EMPTY: the empty dict's table)
        self.room: int | None = None if presized else EMPTY
        #: whether all keys of the table were exactly ``str`` (its first non-str key resizes it)
        self.str_keys = True
        self.lost = not known
        #: deletions so far: an iterator that saw the count change cannot trust its key list
        self.deletions = 0

    def insert(self, hkey: Any) -> None:
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
        self.deletions += 1
        if hkey in self.entries:
            self.entries[self.entries.index(hkey)] = HOLE

    def pop_last(self, hkey: Any) -> None:
        """``popitem()``: the last entry goes, and the table ends where it was."""
        self.deletions += 1
        if hkey in self.entries:
            del self.entries[self.entries.index(hkey):]

    def moved(self) -> None:
        """An OrderedDict's ``move_to_end``: its order is its own."""
        self.deletions += 1
        self.lost = True

    def clear(self) -> None:
        """``clear()``: back to the empty dict's table, whose layout is known again."""
        self.deletions += 1
        self.entries, self.room, self.str_keys, self.lost = [], EMPTY, True, False

    def walkable(self, keys: Iterable[Any]) -> bool:
        """Whether positions are known and the entries hold ``keys``, in order."""
        return not self.lost and [e for e in self.entries if e is not HOLE] == list(keys)

    def packed(self) -> bool:
        """Whether the entries have no holes (a dict rebuilt from its keys lays them out alike)."""
        return HOLE not in self.entries
