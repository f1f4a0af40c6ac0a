"""Wrap real Python values into VariableTrackers.

:func:`wrap` handles values read from a :class:`Source` (frame inputs, globals,
attributes of inputs): it picks the VT kind and installs the guards that make
the trace valid for later calls (tensor metadata, constant values, identities,
container lengths and keys). :func:`wrap_const` handles values with no source
(constants of the code, results folded at trace time, members of library
modules) and installs nothing.

Mutable objects keep one VT per object: reading the same list or module
through two paths gives the same VT, plus a guard that the paths still meet.
"""
from __future__ import annotations

import builtins
import collections
import copy
import enum
import functools
import math
import operator
import os
import sys
import traceback
import types
import warnings
import weakref
from typing import TYPE_CHECKING, Any

import torch
from torch.fx.experimental.symbolic_shapes import RelaxedUnspecConstraint, StrictMinMaxConstraint
from torch.utils._sympy.numbers import int_oo
from torch.utils._sympy.value_ranges import ValueRanges

from bytegraph import compat
from bytegraph.breaks import unimplemented
from bytegraph.bytecode.resume import RESUME_FRESH
from bytegraph.config import config
from bytegraph.guards.guards import (
    ConstantMatch,
    DictKeysMatch,
    EqualsMatch,
    FiniteFloat,
    IdMatch,
    LenMatch,
    SameObject,
    TypeMatch,
    compared_by_value,
)
from bytegraph.guards.source import AttrSource, ConstSource, ConvertSource, GetItemSource, LocalSource, Source
from bytegraph.guards.tensor_guards import TensorMatch
from bytegraph.variables import tx as protocol
from bytegraph.variables.base import BoundMethodVariable, VariableTracker
from bytegraph.variables.callables import func_transforms
from bytegraph.variables.callables.func_functional_call import FunctionalCallVariable
from bytegraph.variables.callables.builtins import BuiltinVariable, computes_from_arguments
from bytegraph.variables.callables.cached_functions import WrappedFunctionVariable
from bytegraph.variables.callables.copying import CopyFunctionVariable
from bytegraph.variables.callables.deferred_calls import DeferredCallVariable
from bytegraph.variables.callables.functions import (
    PartialVariable,
    UserFunctionVariable,
    UserMethodVariable,
)
from bytegraph.variables.callables.polyfills import EVALUATED_ON_CONSTANTS, EvaluatedCallVariable, polyfill_for
from bytegraph.variables.callables.torch_functions import (
    TorchFunctionVariable,
    VmapVariable,
    is_torch_callable,
    registered_op,
)
from bytegraph.variables.constant import ConstantVariable, is_constant_value
from bytegraph.variables.containers import iterator_tools, iterators
from bytegraph.variables.containers.dict_views import DictViewVariable
from bytegraph.variables.containers.dicts import DictVariable, LazyDictVariable
from bytegraph.variables.containers.iterator_tools import ItertoolsFunctionVariable, is_itertools_callable
from bytegraph.variables.containers.named_tuples import NamedTupleVariable, is_modelled_namedtuple
from bytegraph.variables.containers.constant_tuples import ConstantTupleInput
from bytegraph.variables.containers.sequences import ListVariable, SizeVariable, TupleVariable
from bytegraph.variables.containers.sets import SetVariable
from bytegraph.variables.exceptions import ClearFramesVariable, ExceptionStateVariable
from bytegraph.variables import formatting  # noqa: F401  (provides format_value, format_string)
from bytegraph.variables.objects import construction  # noqa: F401  (provides construct_object)
from bytegraph.variables.objects.library_objects import (
    EnvironVariable,
    OpaqueConstantVariable,
    PythonModuleVariable,
    WeakRefVariable,
)
from bytegraph.variables.objects.nn_modules import NNModuleVariable, has_hooks
from bytegraph.variables.objects.user_classes import UserDefinedClassVariable
from bytegraph.variables.objects.user_objects import UserDefinedObjectVariable
from bytegraph.variables.tensors import numpy_ops as npops
from bytegraph.variables.tensors.collectives import CollectiveVariable, is_collective
from bytegraph.variables.tensors.dtensor import (
    DTensorCallableVariable,
    is_dtensor,
    is_dtensor_callable,
    wrap_dtensor,
)
from bytegraph.variables.tensors.ndarray import NumpyFunctionVariable, NumpyNdarrayVariable
from bytegraph.variables.tensors.subclass import TensorSubclassVariable, as_plain_tensor, check_traceable
from bytegraph.variables.tensors.symbolic import SymNodeVariable
from bytegraph.variables.tensors.tensor import TensorVariable
from bytegraph.variables.torch_state.base import StateContextVariable
from bytegraph.variables.torch_state.contexts import STATE_CONTEXTS, existing_state_context
from bytegraph.variables.torch_state.break_regions import wrap_region
from bytegraph.variables.torch_state.queries import STATE_QUERIES, STATE_SETTERS
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: attributes ``mark_dynamic``/``maybe_mark_dynamic``/``mark_static`` set on tensors

#: builtin types and callables answered by BuiltinVariable.
_BUILTIN_CALLABLES = frozenset(
    v for v in vars(builtins).values() if callable(v) and not (isinstance(v, type) and issubclass(v, BaseException))
)
_BUILTIN_MODULES = (operator, math)


#: dict view types -> the dict method that makes them
_DICT_VIEWS = {type({}.keys()): "keys", type({}.values()): "values", type({}.items()): "items"}
#: views of dicts and OrderedDicts (a mapping proxy's ``keys()`` is its dict's view)
_CONSTANT_VIEWS = {**_DICT_VIEWS, type(collections.OrderedDict().keys()): "keys",
                   type(collections.OrderedDict().values()): "values", type(collections.OrderedDict().items()): "items"}


def _in(value: Any, table: Any) -> bool:
    """``value in table`` for values that may be unhashable; never true of an object
    whose class hashes or compares in Python (that code is the program's, not run now)."""
    if types.FunctionType in (type(type(value).__hash__), type(type(value).__eq__)):
        return False
    try:
        return value in table
    except TypeError:
        return False


def _is_builtin_callable(value: Any) -> bool:
    if _in(value, _BUILTIN_CALLABLES):
        return True
    module = getattr(value, "__module__", None)
    return isinstance(value, types.BuiltinFunctionType) and module in ("_operator", "operator", "math") or (
        computes_from_arguments(value))


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and is_modelled_namedtuple(type(value))


@protocol.wrap.provide
def wrap(tx: Tx, value: Any, source: Source) -> VT:
    """Wrap ``value``, read from ``source``, installing the guards it needs."""
    guards = tx.output.guards
    side_effects = tx.output.side_effects

    tracked = side_effects.tracked(value)
    if tracked is not None:
        if tracked.source is not None and tracked.source != source:
            guards.add(SameObject(source, tracked.source))
        return tracked

    if isinstance(value, torch.Tensor):
        return _wrap_tensor(tx, value, source)

    if npops.np is not None and type(value) is npops.np.ndarray and config.trace_numpy:
        return _wrap_ndarray(tx, value, source)

    if type(value) in (int, float) and _symbolic_scalar(tx, value, source):
        guards.add(TypeMatch(source, int) if type(value) is int else FiniteFloat(source))
        node, example = tx.output.add_scalar_input(source, value)
        return SymNodeVariable(node, example)

    if npops.np is not None and type(value) in (npops.np.finfo, npops.np.iinfo):
        # np.iinfo(t) is a new object per call: guard the attributes read (info.max), not its identity
        guards.add(TypeMatch(source, type(value)))
        return OpaqueConstantVariable(value, source)

    if is_constant_value(value) and type(value) is not tuple:
        guards.add(ConstantMatch(source, value))
        return ConstantVariable(value, source)

    if isinstance(value, torch.Size):
        guards.add(ConstantMatch(source, value))
        return SizeVariable([ConstantVariable(int(s)) for s in value], source)

    if type(value) is tuple and is_constant_value(value) and not any(type(v) is float for v in value):
        return ConstantTupleInput(value, source, guards)  # guarded as read: one check when all of it is

    if isinstance(value, (tuple, list)):
        if type(value) not in (tuple, list) and not _is_namedtuple(value):
            return _wrap_object(tx, value, source)  # a user subclass: iterating it may run its own __iter__
        guards.add(LenMatch(source, type(value), len(value)))
        items = [wrap(tx, item, GetItemSource(source, i)) for i, item in enumerate(value)]
        if _is_namedtuple(value):
            return NamedTupleVariable(items, type(value), source)
        if isinstance(value, list):
            return side_effects.track(value, ListVariable(items, source))
        return TupleVariable(items, source)

    if type(value) in iterators.SEQUENCE_ITERATORS:
        iterator = iterators.wrap_sequence_iterator(tx, value, source, wrap)
        if iterator is not None:
            return iterator
    if type(value) is enumerate and _is_resume_stack_slot(tx, source):
        iterator = iterator_tools.wrap_resume_enumerate(tx, value, source, wrap)
        if iterator is not None:
            return iterator
    if type(value) in (zip, map, filter):
        iterator = iterator_tools.wrap_combining_iterator(tx, value, source, wrap)
        if iterator is not None:
            return iterator

    if type(value) in (dict, collections.OrderedDict, collections.defaultdict):
        if not all(compared_by_value(k) or _identity_key(k) for k in value):
            return _wrap_object(tx, value, source)
        guards.add(TypeMatch(source, type(value)))
        return side_effects.track(value, LazyDictVariable(value, source))

    if type(value) is types.MappingProxyType and all(type(k) in (str, int) for k in value):
        guards.add(TypeMatch(source, types.MappingProxyType))  # a class's __dict__: read key by key, never written
        return LazyDictVariable(value, source)

    if type(value) in _DICT_VIEWS and all(type(k) in (str, int) for k in value.mapping):
        # a view of a dict the frame cannot name: the dict is read through the view's ``mapping`` proxy
        owner = LazyDictVariable(value.mapping, AttrSource(source, "mapping"))
        guards.add(TypeMatch(source, type(value)))
        return DictViewVariable(owner.materialize(tx), _DICT_VIEWS[type(value)])

    if type(value) in (set, frozenset) and all(is_constant_value(v) or _identity_is_value(v) for v in value):
        # members are constants, or functions/classes/modules (hashed by identity, guarded by equality)
        guards.add(TypeMatch(source, type(value)))
        guards.add(EqualsMatch(source, frozenset(value)))
        var = SetVariable([wrap_const(tx, v) for v in value], type(value), source, tx)
        return side_effects.track(value, var) if type(value) is set else var

    if isinstance(value, torch.nn.Module):
        # by type, as torch.compile: every instance of the class reuses the entry, guarded by what the trace
        # read of it (attributes, submodules, parameters and buffers, which are graph inputs), not its identity
        guards.add(TypeMatch(source, type(value)))
        if getattr(type(value), COMPILED_MODULE, False) and not has_hooks(value):
            # a module bytegraph.compile returned, met in traced code: traced as the module it
            # compiles, as torch.compile inlines a compiled module called by compiled code
            return wrap(tx, value._orig_mod, AttrSource(source, "_orig_mod"))
        return side_effects.track(value, NNModuleVariable(value, source))

    if isinstance(value, types.MethodType):
        guards.add(IdMatch.of(AttrSource(source, "__func__"), value.__func__))
        obj = wrap(tx, value.__self__, AttrSource(source, "__self__"))
        if isinstance(obj, StateContextVariable):
            return obj.var_getattr(tx, value.__func__.__name__)
        original = compiled_original(value.__func__)
        if original is not None:  # a method bytegraph.compile returned (Lightning's compiled training_step)
            return UserMethodVariable(original, obj, source)
        if isinstance(value.__func__, types.FunctionType):
            return UserMethodVariable(value.__func__, obj, source)
        if isinstance(value.__func__, functools._lru_cache_wrapper):  # a cached function used as a method
            return PartialVariable(wrap(tx, value.__func__, AttrSource(source, "__func__")), [obj], {})
        return OpaqueConstantVariable(value, source)  # calling it is a graph break

    if type(value) is weakref.ReferenceType:
        guards.add(TypeMatch(source, weakref.ReferenceType))
        return WeakRefVariable(value, source)

    if type(value) is functools.partial:
        guards.add(TypeMatch(source, functools.partial))
        func = wrap(tx, value.func, AttrSource(source, "func"))
        args = [wrap(tx, a, GetItemSource(AttrSource(source, "args"), i)) for i, a in enumerate(value.args)]
        guards.add(LenMatch(AttrSource(source, "args"), tuple, len(value.args)))
        guards.add(DictKeysMatch(AttrSource(source, "keywords"), dict, tuple(value.keywords)))
        keywords = {k: wrap(tx, v, GetItemSource(AttrSource(source, "keywords"), k)) for k, v in value.keywords.items()}
        return PartialVariable(func, args, keywords, source)

    if isinstance(value, functools._lru_cache_wrapper) and isinstance(value.__wrapped__, types.FunctionType):
        guards.add(IdMatch.of(source, value))
        return WrappedFunctionVariable(value, wrap(tx, value.__wrapped__, AttrSource(source, "__wrapped__")), source)

    if isinstance(value, types.BuiltinMethodType) and polyfill_for(value) is not None:  # cls.fromkeys, bound anew
        guards.add(IdMatch.of(AttrSource(source, "__self__"), value.__self__))  # on each read: guard its class
        return _wrap_by_kind(tx, value, source)
    if isinstance(value, types.BuiltinMethodType) and not isinstance(value.__self__, types.ModuleType):
        owner = value.__self__
        if not is_torch_callable(value) and not _is_builtin_callable(value):
            obj = wrap(tx, owner, AttrSource(source, "__self__"))
            return BoundMethodVariable(obj, value.__name__)

    if compiled_original(value) is not None:  # a function bytegraph.compile returned: traced as what it compiles
        guards.add(IdMatch.of(source, value))
        return wrap(tx, compiled_original(value), AttrSource(source, COMPILED_FUNCTION))
    if isinstance(value, types.FunctionType) and (value.__closure__ is not None or "<locals>" in value.__qualname__):
        # a nested function (a closure, a lambda) is recreated on each call of its enclosing function:
        # guard its code (and, as they are read, its cells and defaults) rather than the object
        guards.add(IdMatch.of(AttrSource(source, "__code__"), value.__code__))
    elif _identity_is_value(value):
        guards.add(IdMatch.of(source, value))
    return _wrap_by_kind(tx, value, source)


#: the attribute of a function ``bytegraph.compile`` returned that holds what it compiles
COMPILED_FUNCTION = "_bytegraph_orig_fn"
#: the class attribute that marks bytegraph's compiled modules (``OptimizedModule``)
COMPILED_MODULE = "_bytegraph_compiled_module"


def compiled_original(value: Any) -> types.FunctionType | None:
    """The Python function a function returned by ``bytegraph.compile`` compiles, else None."""
    original = getattr(value, COMPILED_FUNCTION, None) if isinstance(value, types.FunctionType) else None
    return original if isinstance(original, types.FunctionType) else None


def _is_resume_stack_slot(tx: Tx, source: Source) -> bool:
    """Whether ``source`` is a stack value a resume function received that the
    generated code at the break built for that call only (``ResumeSpec.fresh``;
    a user's own object, e.g. an ``enumerate`` passed in, is not one)."""
    return isinstance(source, LocalSource) and source.local_name in RESUME_FRESH.get(tx.code, ())


def _identity_is_value(value: Any) -> bool:
    """Objects the trace specialises on by identity (functions, classes, modules);
    other objects are guarded by type and by the attributes the trace reads."""
    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType,
                              functools.partial, types.UnionType)) or callable(value) and (
        is_torch_callable(value) or npops.is_numpy_callable(value)
    )


def _wrap_by_kind(tx: Tx, value: Any, source: Source | None) -> VT:
    """The VT kind for functions, classes, modules and other objects."""
    polyfill = polyfill_for(value)
    if isinstance(polyfill, functools.partial):  # cls.fromkeys: the twin with its class bound; heapq's min/max twins
        return PartialVariable(UserFunctionVariable(polyfill.func), [wrap_const(tx, a) for a in polyfill.args],
                               {k: wrap_const(tx, v) for k, v in polyfill.keywords.items()}, source)
    if polyfill is not None:  # a C function calling back into user code: its Python twin is traced
        return UserFunctionVariable(polyfill, source)
    if _in(value, EVALUATED_ON_CONSTANTS):
        return EvaluatedCallVariable(value, source)
    if _in(value, STATE_SETTERS) or _in(value, STATE_QUERIES):  # (sys.set_int_max_str_digits: not torch's)
        return TorchFunctionVariable(value, source)
    if value is copy.copy or value is copy.deepcopy:
        return CopyFunctionVariable(value, source)
    if value is warnings.warn:
        return DeferredCallVariable(value)
    if value is traceback.clear_frames:
        return ClearFramesVariable(value, source)
    if value is sys.exception or value is sys.exc_info:
        return ExceptionStateVariable(value, source)
    if value is os.environ:
        return EnvironVariable(source)
    if isinstance(value, types.UnionType) or type(value).__module__ == "typing":  # annotations: read, never traced
        return OpaqueConstantVariable(value, source)
    if registered_op(value) is not None:  # torch.ops.<ns>.<op> (its Python __getattr__ finds overloads)
        return TorchFunctionVariable(value, source)
    if value is torch.vmap:
        return VmapVariable(value, source)
    if any(value is t for t in (*func_transforms.FUNCTION_TRANSFORMS, *func_transforms.CALL_TRANSFORMS)):
        return func_transforms.FuncTransformVariable(value, source)
    if value is torch.func.functional_call:
        return FunctionalCallVariable(value, source)
    if _probing_runs_user_code(value):  # a user object: classifying it would run its Python dunders
        return _wrap_object(tx, value, source) if source is not None else OpaqueConstantVariable(value)
    if isinstance(value, STATE_CONTEXTS) and source is not None:
        existing = existing_state_context(tx, value, source)
        if existing is not None:
            return existing
    region = wrap_region(tx, value, source)
    if region is not None:
        return region
    if is_collective(value):
        return CollectiveVariable(value, source)
    if is_dtensor_callable(value):
        return DTensorCallableVariable(value, source)
    if is_torch_callable(value):
        return TorchFunctionVariable(value, source)
    if npops.is_numpy_callable(value):
        return NumpyFunctionVariable(value, source)
    if _is_builtin_callable(value):
        return BuiltinVariable(value, source)
    if is_itertools_callable(value):
        return ItertoolsFunctionVariable(value, source)
    if isinstance(value, types.FunctionType):
        return UserFunctionVariable(value, source)
    if isinstance(value, types.ModuleType):
        return PythonModuleVariable(value, source)
    if isinstance(value, type):
        # one VT per class, so attribute stores on it are seen by every later read; a class reached
        # without a path (type(obj), a class passed to __torch_function__) is still one real object:
        # a ConstSource makes writes to its attributes (cls.log.append) replay on it
        existing = tx.output.side_effects.tracked(value)
        if isinstance(existing, UserDefinedClassVariable):
            return existing
        var = UserDefinedClassVariable(value, source or ConstSource(value, value.__qualname__))
        return tx.output.side_effects.track(value, var)
    if isinstance(value, functools.partial) or type(value).__module__ == "logging":
        return OpaqueConstantVariable(value, source)
    if source is None:
        return OpaqueConstantVariable(value)
    return _wrap_object(tx, value, source)


#: dunders through which reading an attribute of, hashing or comparing an object runs Python code
_PROBED_DUNDERS = ("__getattr__", "__getattribute__", "__hash__", "__eq__")


def _probing_runs_user_code(value: Any) -> bool:
    """Whether the classifiers above (attribute reads, set membership) would run
    code of ``value``'s class written in Python, which eager never runs here."""
    if isinstance(value, (type, types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.ModuleType)):
        return False
    return any(isinstance(vars(klass).get(name), types.FunctionType)
               for klass in type(value).__mro__[:-1] for name in _PROBED_DUNDERS)


def _identity_key(key: Any) -> bool:
    """Whether a dict key is found by identity alone: a tensor, a module, or an
    object whose class keeps object's ``__hash__`` and ``__eq__``."""
    cls = type(key)
    return isinstance(key, (torch.Tensor, torch.nn.Module)) or (
        cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__)


def _wrap_object(tx: Tx, value: Any, source: Source) -> VT:
    tx.output.guards.add(TypeMatch(source, type(value)))
    return tx.output.side_effects.track(value, UserDefinedObjectVariable(value, source))


def _wrap_tensor(tx: Tx, value: torch.Tensor, source: Source) -> VT:
    with torch._C.DisableTorchFunctionSubclass():  # never run a subclass's __torch_function__ here
        layout = value.layout
    if layout is not torch.strided:
        unimplemented(
            gb_type="unsupported tensor layout",
            context=f"input with layout {layout}",
            explanation="Only strided (dense) tensors are graph inputs; sparse and mkldnn tensors are not traced.",
            hints=("Convert the tensor with .to_dense(), or run this code outside the compiled function.",),
        )
    if is_dtensor(value):
        return wrap_dtensor(tx, value, source)
    if type(value) not in (torch.Tensor, torch.nn.Parameter):
        return _wrap_tensor_subclass(tx, value, source)
    node, example = tx.output.add_graph_input(source, value, _dynamic_dims(tx, value, source))
    symbolic = frozenset(i for i, size in enumerate(example.shape) if isinstance(size, torch.SymInt))
    tx.output.guards.add(TensorMatch.of(source, value, symbolic))
    var = TensorVariable(node, example, source, class_type=type(value))
    return tx.output.side_effects.track(value, var)


def _wrap_tensor_subclass(tx: Tx, value: torch.Tensor, source: Source) -> VT:
    """A tensor-subclass input: its data is a plain-tensor graph input
    (``value.as_subclass(torch.Tensor)``, sharing memory and autograd history,
    converted on every call), its class is guarded and kept in the VT. Reading
    the metadata through the plain alias keeps guards from calling the
    subclass's ``__torch_function__``."""
    cls = type(value)
    check_traceable(cls)
    tx.output.guards.add(TypeMatch(source, cls))
    plain = as_plain_tensor(value)
    plain_source = ConvertSource(source, as_plain_tensor, "as_plain_tensor")
    with torch._C.DisableTorchFunctionSubclass():  # reading the real input must not run the user's override
        leaf = value.is_leaf
        dynamic = _dynamic_dims(tx, value, plain_source)
    # the example is a leaf when the input is (the alias itself is not)
    example_value = plain.detach().requires_grad_() if leaf and plain.requires_grad else plain
    node, example = tx.output.add_graph_input(plain_source, example_value, dynamic)
    symbolic = frozenset(i for i, size in enumerate(example.shape) if isinstance(size, torch.SymInt))
    tx.output.guards.add(TensorMatch.of(plain_source, example_value, symbolic))
    var = TensorSubclassVariable(node, example, cls, source, value)
    return tx.output.side_effects.track(value, var)


def _wrap_ndarray(tx: Tx, value: Any, source: Source) -> VT:
    """An ndarray input: a graph input ``torch.from_numpy(value)``, which shares
    the array's memory, so in-place NumPy operations reach the user's array."""
    problem = None
    if not value.flags.writeable:
        problem = "it is read-only"
    else:
        try:
            tensor = torch.from_numpy(value)
        except (TypeError, ValueError) as e:  # dtype torch lacks, negative strides, byte order...
            problem = str(e)
    if problem is not None:
        unimplemented(
            gb_type="unsupported ndarray input",
            context=f"ndarray input {source.name()} of dtype {value.dtype}",
            explanation=f"bytegraph traces ndarrays through torch.from_numpy, which refuses this one: {problem}.",
            hints=("Pass a writeable array of a numeric dtype, or a copy (np.ascontiguousarray).",),
        )
    guards = tx.output.guards
    guards.add(TypeMatch(source, npops.np.ndarray))
    guards.add(ConstantMatch(AttrSource(AttrSource(source, "flags"), "writeable"), True))
    tensor_source = ConvertSource(source, torch.from_numpy, "torch.from_numpy")
    node, example = tx.output.add_graph_input(tensor_source, tensor, _dynamic_dims(tx, tensor, tensor_source))
    symbolic = frozenset(i for i, size in enumerate(example.shape) if isinstance(size, torch.SymInt))
    guards.add(TensorMatch.of(tensor_source, tensor, symbolic))
    return tx.output.side_effects.track(value, NumpyNdarrayVariable(node, example, source))


def _dynamic_dims(tx: Tx, value: torch.Tensor, source: Source) -> dict[int, Any]:
    """Dims of an input tensor to trace symbolically, with their ShapeEnv
    constraints: the policy's (``dynamic=True``, automatic dynamic), then
    ``mark_dynamic``/``maybe_mark_dynamic`` (torch's or bytegraph's: the marks
    on the tensor, :func:`bytegraph.compat.tensor_marks`), minus ``mark_static``.
    Parameters and buffers stay static (as with torch.compile)."""
    policy = tx.output.policy
    dims: dict[int, Any] = {}
    if not (isinstance(value, torch.nn.Parameter) or _is_buffer_source(source)):
        if policy.all_dims:
            dims.update((i, None) for i in range(value.dim()))
        dims.update((i, None) for i in policy.dims.get(source, ()))
        if source in policy.data_dependent and value.dim() > 0:
            dims[0] = None  # a data-dependent size (x[mask], nonzero): dynamic from the first compile
    marks = compat.tensor_marks(value)
    dims.update((i % value.dim(), _constraint(bounds)) for i, bounds in marks.dynamic.items())
    for i in marks.static:
        dims.pop(i % value.dim(), None)
    return dims


def _constraint(bounds: tuple[int | None, int | None] | None) -> Any:
    """The ShapeEnv constraint of a dim marked dynamic: None for ``maybe_mark_dynamic`` (it
    may be specialised), else one that raises when the trace specialises it, with its range."""
    if bounds is None:
        return None
    low, high = bounds
    if low is None and high is None:
        return RelaxedUnspecConstraint(warn_only=False)
    return StrictMinMaxConstraint(vr=ValueRanges(0 if low is None else low, int_oo if high is None else high),
                                  warn_only=False)


def _is_buffer_source(source: Source) -> bool:
    return isinstance(source, GetItemSource) and isinstance(source.base, AttrSource) and (
        source.base.attr == "_buffers"
    )


def _symbolic_scalar(tx: Tx, value: int | float, source: Source) -> bool:
    """Whether a Python int/float input is traced as a SymInt/SymFloat: it changed
    between calls (automatic dynamic), it is an int read from tensor data
    (``DynamicPolicy.data_dependent``), or it is a frame argument and every
    input is dynamic (``dynamic=True``, ``assume_static_by_default=False``), as
    with torch.compile; ``specialize_int``/``specialize_float`` keep ints/floats
    constant in every case but the data-dependent one.

    A float that is NaN, infinite or zero is never symbolic (a constant, whose
    ``ConstantMatch`` tells NaN and -0.0 apart): the ShapeEnv reasons about a SymFloat
    as a real number, which has no NaN, infinity or sign of zero, so what it decides
    (``math.isnan(v)``, ``math.copysign(1.0, v)``) would not hold for such a value.
    The trace of a symbolic float then holds for finite values only
    (:class:`~bytegraph.guards.guards.FiniteFloat`), and its specialisations
    (``v == 2.5``) never accept a zero of the other sign."""
    policy = tx.output.policy
    if type(value) is float and (policy.static_floats or not math.isfinite(value) or value == 0.0):
        return False
    if type(value) is int and source in policy.data_dependent:
        return True
    if config.specialize_int if type(value) is int else config.specialize_float:
        return False
    if source in policy.scalars:
        return True
    return isinstance(source, LocalSource) and policy.all_dims and not policy.static


@protocol.wrap_const.provide
def wrap_const(tx: Tx, value: Any) -> VT:
    """Wrap a value that has no source (no guards installed)."""
    if is_constant_value(value) and type(value) is not tuple:
        return ConstantVariable(value)
    if isinstance(value, torch.Size):
        return SizeVariable([ConstantVariable(int(s)) for s in value])
    if _is_namedtuple(value):
        return NamedTupleVariable([wrap_const(tx, v) for v in value], type(value))
    if type(value) is tuple:
        return TupleVariable([wrap_const(tx, v) for v in value])
    if type(value) is list:
        return ListVariable([wrap_const(tx, v) for v in value])
    if type(value) in (dict, collections.OrderedDict) and all(is_constant_value(k) for k in value):
        return DictVariable({k: (ConstantVariable(k), wrap_const(tx, v)) for k, v in value.items()}, type(value))
    if type(value) in (set, frozenset) and all(is_constant_value(v) for v in value):
        return SetVariable([ConstantVariable(v) for v in value], type(value))
    if type(value) in _CONSTANT_VIEWS and all(is_constant_value(k) for k in value.mapping):
        # a view of a constant's dict (inspect.signature(f).parameters.keys()): read over a snapshot
        return DictViewVariable(wrap_const(tx, dict(value.mapping)), _CONSTANT_VIEWS[type(value)])
    if isinstance(value, torch.Tensor) or (npops.np is not None and isinstance(value, npops.np.ndarray)):
        unimplemented(
            gb_type="tensor without source",
            context=f"a {type(value).__name__} reached from a library constant",
            explanation="bytegraph can only read tensors from the frame's inputs, globals and attributes.",
            hints=("Pass the tensor as an argument.",),
        )
    if isinstance(value, enum.Enum):
        return ConstantVariable(value)
    if isinstance(value, types.MethodType) and isinstance(value.__self__, types.ModuleType) and isinstance(
            value.__func__, types.FunctionType):  # a method of a module object (torch.backends.mkldnn.is_available)
        return UserMethodVariable(value.__func__, wrap_const(tx, value.__self__))
    if isinstance(value, functools._lru_cache_wrapper) and isinstance(value.__wrapped__, types.FunctionType):
        return WrappedFunctionVariable(value, UserFunctionVariable(value.__wrapped__))
    return _wrap_by_kind(tx, value, None)
