"""``copy.copy`` and ``copy.deepcopy`` traced for the values model code copies:
configuration objects (HuggingFace deep-copies its config inside ``forward``),
containers and constants. The copy is a new object made in the trace.

An object is copied the way ``copy`` copies it through ``__reduce_ex__(4)`` when
its class defines no copy hooks and no ``__slots__`` and derives from
``object`` alone: ``cls.__new__(cls)`` then its ``__dict__`` (copied entry by
entry for a deep copy). Anything else (tensors, classes with hooks, other
builtin bases) is a graph break, so the real ``copy`` runs.
"""
from __future__ import annotations

import collections
import copy
import enum
import types
from typing import TYPE_CHECKING, Sequence

import torch

from bytegraph.breaks import unimplemented
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.containers.dicts import DictVariable, LazyDictVariable
from bytegraph.variables.containers.named_tuples import NamedTupleVariable
from bytegraph.variables.containers.sequences import ListVariable, TupleVariable
from bytegraph.variables.containers.sets import SetVariable
from bytegraph.variables.objects.user_objects import NewObjectVariable, UserDefinedObjectVariable

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: types ``copy`` returns unchanged (its atomic types, plus torch's immutable values)
_ATOMIC = (type(None), int, float, bool, complex, str, bytes, type, range, types.FunctionType,
           types.BuiltinFunctionType, type(Ellipsis), type(NotImplemented), enum.Enum, torch.dtype, torch.device)
_COPY_HOOKS = ("__copy__", "__deepcopy__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__",
               "__slots__")


def copied_by_dict(cls: type) -> bool:
    """Whether ``copy`` copies instances of ``cls`` as ``cls.__new__(cls)`` plus
    their ``__dict__``: no copy hooks or slots below ``object``, no other builtin base."""
    bases = cls.__mro__[:-1]
    return (cls.__new__ is object.__new__
            and all(k.__module__ != "builtins" and not any(h in vars(k) for h in _COPY_HOOKS) for k in bases))


class CopyFunctionVariable(ConstantCallableVariable):
    """``copy.copy`` or ``copy.deepcopy`` (see the module docstring)."""

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if len(args) != 1 or kwargs:
            unimplemented(
                gb_type="unsupported copy",
                context=f"{self.fn.__name__} with {len(args)} arguments and keywords {sorted(kwargs)}",
                explanation="bytegraph traces copy.copy(x) and copy.deepcopy(x) without a memo.",
                hints=("Drop the memo argument, or copy outside the compiled function.",),
            )
        if self.fn is copy.copy:
            return _copy(tx, args[0], None)
        return _copy(tx, args[0], {})

    def __repr__(self) -> str:
        return f"CopyFunctionVariable({self.fn.__name__})"


def _copy(tx: Tx, vt: VT, memo: dict[int, VT] | None) -> VT:
    """A shallow copy (``memo`` None) or a deep copy of ``vt``; ``memo`` maps
    VTs already copied to their copies, so shared references stay shared."""
    if memo is not None and id(vt) in memo:
        return memo[id(vt)]
    cls = vt.python_type()
    if isinstance(vt, ConstantVariable) or issubclass(cls, _ATOMIC) or memo is None and cls is frozenset:
        return vt  # (``copy.copy`` gives a frozenset back itself)
    if isinstance(vt, LazyDictVariable):
        vt = vt.materialize(tx)

    def item(value: VT) -> VT:
        return value if memo is None else _copy(tx, value, memo)

    if isinstance(vt, TupleVariable) and cls is tuple or isinstance(vt, NamedTupleVariable):
        items = [item(i) for i in vt.items]
        if all(a is b for a, b in zip(items, vt.items)):
            return vt
        return NamedTupleVariable(items, cls) if isinstance(vt, NamedTupleVariable) else TupleVariable(items)
    if type(vt) is ListVariable:
        new: VT = ListVariable([])
        _remember(memo, vt, new)
        new.items = [item(i) for i in vt.items]
        return new
    if type(vt) is DictVariable and cls in (dict, collections.OrderedDict) and vt.default_factory is None:
        new = DictVariable({}, cls)
        _remember(memo, vt, new)
        for key, (key_vt, value) in vt.items.items():
            if not key_vt.is_python_constant():
                break
            new.items[key] = (key_vt, item(value))
        else:
            return new
    if isinstance(vt, SetVariable) and (memo is None or vt.is_python_constant()):
        return vt.copy_as(cls)
    if memo is None and isinstance(vt, UserDefinedObjectVariable) and isinstance(
            getattr(cls, "__copy__", None), types.FunctionType) and cls not in copy._copy_dispatch:
        return vt.call_method(tx, "__copy__", [], {})  # the class's own copy hook, as copy.copy calls it
    if isinstance(vt, UserDefinedObjectVariable) and copied_by_dict(cls):
        new = NewObjectVariable(cls)
        _remember(memo, vt, new)
        for name, value in vt.attribute_items(tx):
            new.store_raw(tx, name, item(value))
        return new
    unimplemented(
        gb_type="unsupported copy",
        context=f"{'copy' if memo is None else 'deepcopy'} of {vt}",
        explanation="bytegraph copies constants, lists, dicts, sets, tuples and plain objects (no copy hooks, "
                    "no slots); this value is something else.",
        hints=("Copy the value outside the compiled function.",),
    )


def _remember(memo: dict[int, VT] | None, original: VT, copied: VT) -> None:
    if memo is not None:
        memo[id(original)] = copied
