"""Python objects that are neither tensors, containers nor callables: user
classes (:mod:`.user_classes`, lookup along the MRO in :mod:`.class_lookup`)
and their instances (:mod:`.user_objects`, special methods in
:mod:`.special_methods`, builtin methods applied to them in :mod:`.slot_methods`,
their ``__slots__`` entries in :mod:`.slots`, the builtin part of container subclasses in
:mod:`.builtin_bases`), ``nn.Module`` instances (:mod:`.nn_modules`), and
library objects read by identity (modules, ``os.environ``, weak references:
:mod:`.library_objects`)."""
