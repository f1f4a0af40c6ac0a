"""Python containers and the iterators over them: tuples, lists, ``torch.Size``,
named tuples, deques, slices (:mod:`.sequences`, :mod:`.named_tuples`; a tuple of constants
passed in, guarded as read: :mod:`.constant_tuples`; sorting: :mod:`.sorting`), dicts
(:mod:`.dicts`) and their views (:mod:`.dict_views`), sets (:mod:`.sets`), the keys both
are looked up by (:mod:`.dict_keys`), the
iterators ``for`` loops use (:mod:`.iterators`), and ``enumerate``/``zip``/
``map``/``filter`` and ``itertools`` (:mod:`.iterator_tools`). Items are
VariableTrackers; mutations of a container that existed before the call are
side effects replayed after the graph."""
