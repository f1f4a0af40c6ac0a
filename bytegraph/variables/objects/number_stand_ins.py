"""User objects handed to C code that takes numbers (``float(x)``, ``int(s, base)``,
``math.floor(x)``, ``"ab".center(width)``, ``round(x, n)``...).

C code reads such an argument through its number protocols (``__index__``,
``__int__``, ``__float__``, ``__complex__``, the rounding dunders), in an order
and with checks of its own (``PyNumber_Index``, ``PyNumber_Float``...). Rather
than restate those rules per function, the call is made now, natively, on a
*stand-in*: an instance of a class with the user class's name whose number
dunders inline the user's Python methods into the trace and hand C their
constant results. Every other special method, and any attribute read, stops
the call with a graph break: C code that needs more of the object (its
iteration, hash, repr) is not answered from a stand-in.
"""
from __future__ import annotations

import operator
import types
from typing import TYPE_CHECKING, Any, Callable, Sequence

from bytegraph.breaks import HINT_REWRITE, unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables.functions import UserMethodVariable
from bytegraph.variables.constant import is_constant_value, raise_traced_from
from bytegraph.variables.objects.class_lookup import _MISSING, python_classes_only
from bytegraph.variables.objects.special_methods import SpecialMethods
from bytegraph.variables import tx as protocol
from bytegraph.variables.tx import wrap_const

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: the protocols C code reads numbers through; their Python methods are inlined
NUMBER_DUNDERS = ("__index__", "__int__", "__float__", "__complex__", "__round__", "__trunc__", "__floor__", "__ceil__")
#: the conversions whose result CPython checks by exact type (a subclass: a DeprecationWarning, not modelled)
_EXACT_RESULTS = {"__index__": int, "__int__": int, "__float__": float, "__complex__": complex}
#: class-level names that are no special method C code calls on an instance
_NOT_SLOTS = frozenset({
    "__init__", "__new__", "__del__", "__class__", "__init_subclass__", "__subclasshook__", "__module__",
    "__qualname__", "__doc__", "__dict__", "__weakref__", "__slots__", "__class_getitem__", "__set_name__",
    "__annotations__", "__firstlineno__", "__static_attributes__", "__orig_bases__", "__parameters__",
})


class _Escape(BaseException):
    """Unwinds the native call when a stand-in cannot answer (a BaseException: no C code catches it)."""


def stands_in(vt: VT) -> bool:
    """Whether ``vt`` is a user object whose class is Python classes only (no builtin base
    whose C storage a stand-in would lack)."""
    if not isinstance(vt, SpecialMethods) or not isinstance(vt, VariableTracker):
        return False
    return python_classes_only(vt.python_type())


@protocol.call_with_stand_ins.provide
def call_with_stand_ins(tx: Tx, fn: Callable[..., Any], args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
    """``fn(*args, **kwargs)`` now, the user objects among the arguments replaced by
    stand-ins; None when an argument is neither a constant nor a user object of
    Python classes, or none is such an object, or the result is no constant (a
    graph break follows). An error C raises is eager's, raised in the trace."""
    operands = (*args, *kwargs.values())
    if not any(_holds_stand_ins(a) for a in operands) or not all(_readable(a) for a in operands):
        return None
    escaped: list[BaseException] = []
    made: dict[int, Any] = {}

    def value(vt: VT) -> Any:
        if vt.is_python_constant():
            return vt.as_python_constant()
        if _is_tuple(vt):
            return tuple(value(item) for item in vt.items)
        if _is_slice(vt):
            return slice(*[value(part) for part in vt.parts])
        if id(vt) not in made:
            made[id(vt)] = _stand_in(tx, fn, vt, escaped)
        return made[id(vt)]

    values = [value(a) for a in args]
    kw = {k: value(v) for k, v in kwargs.items()}
    try:
        result = fn(*values, **kw)
    except _Escape:
        raise escaped[0] from None
    except Exception as e:
        if escaped:  # C code turned the escape into an error of its own
            raise escaped[0] from None
        raise_traced_from(e)
    if escaped:
        raise escaped[0]
    if any(a.mutable for a in operands if a.is_python_constant()) and not is_constant_value(result):
        return None  # a list argument, folded as a copy, may be (in) the result: its identity is lost
    same = next((a for a, v in zip(args, values) if v is result and a.rebuilds_constant), None)
    return same or (wrap_const(tx, result) if _plain(result) else None)


def _is_tuple(vt: VT) -> bool:
    return vt.python_type() is tuple and hasattr(vt, "items")


def _is_slice(vt: VT) -> bool:
    return vt.python_type() is slice and hasattr(vt, "parts")


def _parts(vt: VT) -> Sequence[VT]:
    """The items of a tuple, the bounds of a slice: read through to the user objects in them."""
    return vt.items if _is_tuple(vt) else vt.parts if _is_slice(vt) else ()


def _holds_stand_ins(vt: VT) -> bool:
    """Whether ``vt`` is a user object a stand-in replaces, or a tuple or slice holding one
    (``"%d" % (obj,)``, ``text[obj:]``)."""
    return stands_in(vt) or any(_holds_stand_ins(part) for part in _parts(vt))


def _readable(vt: VT) -> bool:
    """Whether ``vt`` is a constant, a user object a stand-in replaces, or a tuple or slice of such."""
    return vt.is_python_constant() or stands_in(vt) or bool(_parts(vt)) and all(_readable(p) for p in _parts(vt))


def _plain(value: Any) -> bool:
    """Whether ``value`` is made of constants only (``str.split``'s list), no stand-in among them."""
    if type(value) in (list, tuple, set, frozenset):
        return all(_plain(v) for v in value)
    if type(value) is dict:
        return all(_plain(k) and _plain(v) for k, v in value.items())
    return is_constant_value(value)


def _stand_in(tx: Tx, fn: Any, vt: SpecialMethods, escaped: list[BaseException]) -> Any:
    """An instance standing in for ``vt``: its class has the user class's name (C's
    messages name it) and, for each special method the user class has, a number
    dunder inlining the user's, ``None`` where the user blocks one, or a stop."""
    cls = vt.python_type()
    namespace: dict[str, Any] = {}
    names = {n for klass in cls.__mro__ for n in vars(klass) if n.startswith("__") and n.endswith("__")}
    for name in sorted(names - _NOT_SLOTS):
        attr = vt.special_method(tx, name)
        if attr is None or attr is _MISSING:
            namespace[name] = None if attr is None else _stop(fn, cls, name, escaped)
        elif name in NUMBER_DUNDERS and isinstance(attr, types.FunctionType):
            namespace[name] = _inlining(tx, vt, attr, name, escaped)
        else:
            namespace[name] = _stop(fn, cls, name, escaped)
    namespace["__getattr__"] = _stop(fn, cls, "__getattr__", escaped)  # an attribute read: no stand-in answers it
    stand_in_cls = type(cls.__name__, (), namespace)
    stand_in_cls.__qualname__, stand_in_cls.__module__ = cls.__qualname__, cls.__module__
    return object.__new__(stand_in_cls)


def _inlining(tx: Tx, vt: VT, method: types.FunctionType, name: str, escaped: list[BaseException]) -> Any:
    def dunder(_self: Any, *args: Any) -> Any:
        try:
            result = UserMethodVariable(method, vt).call_function(tx, [wrap_const(tx, a) for a in args], {})
            if not result.is_python_constant():
                _no_stand_in(name, f"{name} returned {result}, not a constant")
            answer = result.as_python_constant()
            exact = _EXACT_RESULTS.get(name)
            if exact is not None and isinstance(answer, exact) and type(answer) is not exact:
                _no_stand_in(name, f"{name} returned a {type(answer).__name__}, which CPython warns about")
        except BaseException as e:  # the trace's own: a break, an exception of the user's
            escaped.append(e)
            raise _Escape from None
        return answer

    dunder.__name__ = name
    return dunder


def _stop(fn: Any, cls: type, name: str, escaped: list[BaseException]) -> Any:
    def stop(_self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            _no_stand_in(name, f"{getattr(fn, '__name__', fn)}() uses {cls.__qualname__}.{name}")
        except BaseException as e:
            escaped.append(e)
        raise _Escape

    return stop


def _no_stand_in(name: str, context: str) -> None:
    unimplemented(
        gb_type="builtin needs a user object",
        context=context,
        explanation=(f"A C function was handed a user object; bytegraph answers only its number conversions "
                     f"({', '.join(NUMBER_DUNDERS)}) with constants, and this call needs {name}."),
        hints=(HINT_REWRITE,),
    )


@protocol.as_index.provide
def as_index(tx: Tx, vt: VT) -> VT:
    """An index or count as CPython reads it (``PyNumber_Index``): a user object's
    Python ``__index__`` inlined, its result checked; any other value as it is."""
    if not stands_in(vt) or vt.special_method(tx, "__index__") is _MISSING:
        return vt
    return call_with_stand_ins(tx, operator.index, [vt], {}) or vt
