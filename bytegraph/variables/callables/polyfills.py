"""Library functions the trace handles without tracing their own code.

- **Python twins** of C functions that call back into user code: a call to a
  function in :data:`POLYFILLS` (or to a ``fromkeys`` of ``dict``/``OrderedDict``/
  ``defaultdict``) inlines its twin below, like user code, so the callbacks it
  makes (the reducing function, the predicate, ``__hash__``/``__setitem__``) are
  traced too. Each twin follows its C implementation step by step: the same
  order of calls into user code, the same errors with the same messages
  (``Modules/_functoolsmodule.c``: ``functools_reduce``;
  ``Objects/abstract.c``: ``PyObject_LengthHint``;
  ``Modules/itertoolsmodule.c``: ``filterfalse_next``; ``Modules/_collectionsmodule.c``:
  ``_count_elements``; ``Modules/_heapqmodule.c``; ``Objects/dictobject.c``:
  ``_PyDict_FromKeys``; torch's ``torch/csrc/fx/node.cpp``: ``map_aggregate``).
- **Evaluated on constants** (:data:`EVALUATED_ON_CONSTANTS`): functions that only
  compute from their arguments (``collections.namedtuple`` makes a class,
  ``typing.get_args`` reads an annotation) or read process state
  (``sys.getrecursionlimit``, guarded) run at trace time when every argument is
  a constant; the result is a constant of the trace.
"""
from __future__ import annotations

import collections
import functools
import heapq
import itertools
import operator
import re
import sys
import types
import typing
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch.fx

from bytegraph import recursion
from bytegraph.breaks import unimplemented
from bytegraph.guards.guards import GlobalStateMatch
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.constant import raise_traced_from
from bytegraph.variables.tensors import numpy_ops as npops
from bytegraph.variables.tx import wrap_const
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx


def reduce(function: Callable, iterable: Any, *initial: Any) -> Any:
    """``functools.reduce(function, iterable[, initial])``."""
    if len(initial) > 1:
        raise TypeError(f"reduce expected at most 3 arguments, got {2 + len(initial)}")
    iterator = iter(iterable)
    if initial:
        value = initial[0]
    else:
        try:
            value = next(iterator)
        except StopIteration:
            raise TypeError("reduce() of empty iterable with no initial value") from None
    for element in iterator:
        value = function(value, element)
    return value


def filterfalse(predicate: Any, iterable: Any) -> Any:
    """``itertools.filterfalse(predicate, iterable)``: the items whose predicate
    (their own truth when ``predicate`` is None) is false."""
    for item in iterable:
        if not (item if predicate is None else predicate(item)):
            yield item


def fromkeys(cls: type, iterable: Any, value: Any = None) -> Any:
    """``cls.fromkeys(iterable, value)`` for a dict class that does not override it."""
    result = cls()
    for key in iterable:
        result[key] = value
    return result


def length_hint(*args: Any, **kwargs: Any) -> int:
    """``operator.length_hint(obj, default=0, /)`` (``Objects/abstract.c``:
    ``PyObject_LengthHint``): ``len(obj)`` when its type has one (a TypeError
    from it falls through), else the type's ``__length_hint__`` (a TypeError
    or NotImplemented gives ``default``), which must be an int >= 0. The
    argument errors are the C function's."""
    if kwargs:
        raise TypeError("_operator.length_hint() takes no keyword arguments")
    if not args:
        raise TypeError("length_hint expected at least 1 argument, got 0")
    if len(args) > 2:
        raise TypeError(f"length_hint expected at most 2 arguments, got {len(args)}")
    obj = args[0]
    default = _ssize_t(operator.index(args[1])) if len(args) == 2 else 0
    cls = type(obj)
    if hasattr(cls, "__len__"):
        try:
            return len(obj)
        except TypeError:
            pass
    hint = getattr(cls, "__length_hint__", None)
    if hint is None:
        return default
    try:
        result = hint(obj)
    except TypeError:
        return default
    if result is NotImplemented:
        return default
    if not isinstance(result, int):
        raise TypeError(f"__length_hint__ must be an integer, not {type(result).__name__}")
    result = _ssize_t(result)
    if result < 0:
        raise ValueError("__length_hint__() should return >= 0")
    return result


def _ssize_t(value: int) -> int:
    """``value`` as C's Py_ssize_t holds it (a bool arrives as an int)."""
    if not -sys.maxsize - 1 <= value <= sys.maxsize:
        raise OverflowError("Python int too large to convert to C ssize_t")
    return 1 * value


def fx_map_aggregate(a: Any, fn: Callable) -> Any:
    """``torch.fx.node.map_aggregate(a, fn)`` (C++ ``map_aggregate`` in
    ``torch/csrc/fx/node.cpp``): ``fn`` applied to every leaf of nested tuples,
    lists, dicts and slices, in order. Tuples stay tuples (a subclass with
    ``_fields`` is rebuilt as ``type(a)(*items)``), lists become
    ``immutable_list`` and dicts ``immutable_dict`` (filled with the base
    types' methods, as the C code does); an empty exact tuple or empty
    immutable container is returned itself. Items are read with the base
    types' methods, never a subclass's overrides."""
    from torch.fx.immutable_collections import immutable_dict, immutable_list

    if isinstance(a, tuple):
        if tuple.__len__(a) == 0 and type(a) is tuple:
            return a
        items = tuple([fx_map_aggregate(item, fn) for item in tuple.__iter__(a)])
        return type(a)(*items) if type(a) is not tuple and hasattr(a, "_fields") else items
    if isinstance(a, list):
        if list.__len__(a) == 0 and type(a) is immutable_list:
            return a
        mapped = immutable_list()
        for item in list.__iter__(a):
            list.append(mapped, fx_map_aggregate(item, fn))
        return mapped
    if isinstance(a, dict):
        if dict.__len__(a) == 0 and type(a) is immutable_dict:
            return a
        mapped_dict = immutable_dict()
        for key, value in dict.items(a):
            dict.__setitem__(mapped_dict, key, fx_map_aggregate(value, fn))
        return mapped_dict
    if isinstance(a, slice):
        return slice(fx_map_aggregate(a.start, fn), fx_map_aggregate(a.stop, fn), fx_map_aggregate(a.step, fn))
    return fn(a)


def count_elements(mapping: Any, iterable: Any) -> None:
    """``collections._count_elements(mapping, iterable)`` (``Counter.update``'s
    tally): ``mapping[elem] = mapping.get(elem, 0) + 1`` for each element."""
    mapping_get = mapping.get
    for elem in iterable:
        mapping[elem] = mapping_get(elem, 0) + 1


# ---- heapq (``Modules/_heapqmodule.c``): the same comparisons, in the same order ----------------------

def _heap_list(heap: Any, what: str) -> None:
    if not isinstance(heap, list):
        raise TypeError(f"{what} must be list, not {type(heap).__name__}")
    if len(heap) > 2500:  # _heapqmodule.c heapifies long lists in another order
        unimplemented(gb_type="long heap", context=f"heapq on a list of {len(heap)} items",
                      explanation="bytegraph traces heapq only on lists of at most 2500 items.",
                      hints=("Call heapq outside the compiled function.",))


def _sift_down(heap: list, start: int, pos: int, below: Callable) -> None:
    """Move ``heap[pos]`` up towards ``start`` while it sorts ``below`` its parent."""
    while pos > start:
        parent = (pos - 1) >> 1
        if not below(heap[pos], heap[parent]):
            break
        heap[parent], heap[pos] = heap[pos], heap[parent]
        pos = parent


def _sift_up(heap: list, pos: int, below: Callable) -> None:
    """Move the smaller child up from ``pos`` to a leaf, then sift that leaf down."""
    end, start = len(heap), pos
    while pos < end >> 1:
        child = 2 * pos + 1
        if child + 1 < end and not below(heap[child], heap[child + 1]):
            child += 1
        heap[pos], heap[child] = heap[child], heap[pos]
        pos = child
    _sift_down(heap, start, pos, below)


def _heapify(heap: Any, below: Callable, name: str) -> None:
    _heap_list(heap, f"{name}() argument")
    for i in reversed(range(len(heap) // 2)):
        _sift_up(heap, i, below)


def _heappop(heap: Any, below: Callable, name: str) -> Any:
    _heap_list(heap, f"{name}() argument")
    if not heap:
        raise IndexError("index out of range")
    last = heap.pop()
    if not heap:
        return last
    top, heap[0] = heap[0], last
    _sift_up(heap, 0, below)
    return top


def _heapreplace(heap: Any, item: Any, below: Callable, name: str) -> Any:
    _heap_list(heap, f"{name}() argument 1")
    if not heap:
        raise IndexError("index out of range")
    top, heap[0] = heap[0], item
    _sift_up(heap, 0, below)
    return top


def heappush(heap: Any, item: Any) -> None:
    _heap_list(heap, "heappush() argument 1")
    heap.append(item)
    _sift_down(heap, 0, len(heap) - 1, operator.lt)


def heappushpop(heap: Any, item: Any) -> Any:
    _heap_list(heap, "heappushpop() argument 1")
    if not heap or not heap[0] < item:
        return item
    return _heapreplace(heap, item, operator.lt, "heappushpop")


def _above(a: Any, b: Any) -> bool:
    return b < a


#: real function -> its traced twin
POLYFILLS: dict[Callable, Callable] = {
    heapq.heapify: functools.partial(_heapify, below=operator.lt, name="heapify"),
    heapq.heappop: functools.partial(_heappop, below=operator.lt, name="heappop"),
    heapq.heapreplace: functools.partial(_heapreplace, below=operator.lt, name="heapreplace"),
    heapq.heappush: heappush,
    heapq.heappushpop: heappushpop,
    heapq._heapify_max: functools.partial(_heapify, below=_above, name="_heapify_max"),
    heapq._heappop_max: functools.partial(_heappop, below=_above, name="_heappop_max"),
    heapq._heapreplace_max: functools.partial(_heapreplace, below=_above, name="_heapreplace_max"),
    collections._count_elements: count_elements,
    functools.reduce: reduce,
    itertools.filterfalse: filterfalse,
    operator.length_hint: length_hint,
    torch.fx.node.map_aggregate: fx_map_aggregate,
    torch._C._fx_map_aggregate: fx_map_aggregate,
}


#: classes whose ``fromkeys`` is the C one of ``dict`` (or ``OrderedDict``'s, which behaves the same)
_C_FROMKEYS = (vars(dict)["fromkeys"], vars(collections.OrderedDict)["fromkeys"])


def polyfill_for(value: Any) -> Callable | None:
    """The twin traced in place of ``value`` (with its class bound for ``fromkeys``), or None."""
    twin = next((twin for real, twin in POLYFILLS.items() if value is real), None)
    if twin is None and type(value) is type(dict.fromkeys) and getattr(value, "__name__", None) == "fromkeys":
        owner = getattr(value, "__self__", None)
        if isinstance(owner, type) and issubclass(owner, dict) and _own_fromkeys(owner) in _C_FROMKEYS:
            return functools.partial(fromkeys, owner)
    return twin


def _own_fromkeys(cls: type) -> Any:
    """The ``fromkeys`` attribute ``cls`` finds first along its MRO."""
    return next(vars(klass)["fromkeys"] for klass in cls.__mro__ if "fromkeys" in vars(klass))


#: library functions run at trace time on constant arguments; the value names
#: the process state they read (guarded), or is None for pure computations.
EVALUATED_ON_CONSTANTS: dict[Callable, str | None] = {
    collections.namedtuple: None,
    typing.get_args: None,
    typing.get_origin: None,
    sys.getrecursionlimit: "recursion limit",
    **dict.fromkeys((re.compile, re.search, re.match, re.fullmatch, re.sub, re.subn, re.split, re.findall,
                     re.finditer, re.escape, re.purge), None),  # (re's cache of patterns is invisible)
    **({npops.np.dtype: None, npops.np.finfo: None, npops.np.iinfo: None} if npops.np is not None else {}),
}


#: what answers for the user's program while a trace runs (the trace raised the recursion limit)
_AT_TRACE_TIME: dict[Callable, Callable] = {sys.getrecursionlimit: recursion.user_recursion_limit}


class EvaluatedCallVariable(ConstantCallableVariable):
    """A function of :data:`EVALUATED_ON_CONSTANTS`."""

    def call_function(self, tx: Tx, args: Sequence[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if not all(a.is_python_constant() for a in (*args, *kwargs.values())) or any(
                isinstance(a.as_python_constant(), (types.FunctionType, types.MethodType, functools.partial))
                for a in (*args, *kwargs.values())):
            unimplemented(
                gb_type="non-constant library call",
                context=f"{self.fn.__module__}.{self.fn.__qualname__} with arguments known only at run time, or a "
                        "function of the program",
                explanation="This library function runs at trace time, which needs every argument to be a constant "
                            "(and no callback into the program).",
                hints=("Pass constants, or call it outside the compiled function.",),
            )
        values = [a.as_python_constant() for a in args]
        keywords = {k: v.as_python_constant() for k, v in kwargs.items()}
        try:
            result = _AT_TRACE_TIME.get(self.fn, self.fn)(*values, **keywords)
        except Exception as e:  # noqa: BLE001 - eager's own error, raised in the traced program
            raise_traced_from(e)
        state = EVALUATED_ON_CONSTANTS[self.fn]
        if state is not None:
            getter = functools.partial(self.fn, *values, **keywords) if values or keywords else self.fn
            tx.output.guards.add(GlobalStateMatch(None, getter, result, state))
        return wrap_const(tx, result)

    def __repr__(self) -> str:
        return f"EvaluatedCallVariable({self.fn.__qualname__})"
