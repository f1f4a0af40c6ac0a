"""Tensors and the values that stand for tensor data: :class:`TensorVariable`
(:mod:`.tensor`, its handlers in :mod:`.tensor_methods`, the API tables in
:mod:`.surface`), graph calls on them (:mod:`.graph_calls`, scalar arguments
read as eager reads them in :mod:`.scalar_args`), symbolic scalars
(:mod:`.symbolic`), storages, data pointers and hook handles
(:mod:`.handles`), ``__torch_function__`` subclasses (:mod:`.subclass`, their
dispatch in :mod:`.subclass_dispatch`), NumPy arrays (:mod:`.ndarray`,
:mod:`.numpy_calls`, NumPy's tables in :mod:`.numpy_ops`), DTensors
(:mod:`.dtensor`) and functional collectives (:mod:`.collectives`)."""
