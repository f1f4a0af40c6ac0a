"""ConstantVariable: a Python value known at trace time.

Holds immutable values (None, bool, int, float, complex, str, bytes, Ellipsis,
``torch.dtype``/``device``/``layout``/``memory_format``, enum members, code
objects...). Operations on constants are folded at trace time; the guards that
make the fold valid were installed when the constant was read from its source.
"""
from __future__ import annotations

import contextlib
import enum
import re
import sys
import types
from typing import TYPE_CHECKING, Any, Callable, Iterator, NoReturn, Sequence

import torch

from bytegraph.variables.base import BoundMethodVariable, KnownObjectVariable, VariableTracker, bad_method
from bytegraph.variables.handlers import BUILTIN_CONTAINERS, call_method_handler
from bytegraph.variables.exceptions import ExceptionVariable, TracedException
from bytegraph.variables.tx import call_with_stand_ins, format_string, frozenset_members, range_iterator, wrap_const
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

CONSTANT_TYPES: tuple[type, ...] = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    type(Ellipsis),
    type(NotImplemented),
    torch.dtype,
    torch.device,
    torch.layout,
    torch.memory_format,
    types.CodeType,
    range,
    slice,
    torch.finfo,
    torch.iinfo,
    re.Pattern,  # compiled regular expressions and their matches are immutable
    re.Match,
)


_CONSTANT_TYPE_SET = frozenset(CONSTANT_TYPES)


def is_constant_value(value: Any) -> bool:
    """Whether ``value`` can be a ConstantVariable (tuples and frozensets of constants included)."""
    if type(value) in _CONSTANT_TYPE_SET:  # the common case first: none of these is an enum or a tuple
        return True
    if isinstance(value, enum.Enum) or is_pybind_enum_member(value):
        return True
    if type(value) in (tuple, frozenset):  # (a frozenset of objects hashed and compared by their own code is not)
        return all(is_constant_value(v) for v in value)
    return is_numpy_constant(value)


def is_pybind_enum_member(value: Any) -> bool:
    """Whether ``value`` is a member of a pybind11 enum (``torch.nn.attention.SDPBackend.MATH``,
    ``torch._C._autograd.DeviceType.CPU``, or a copy of one): immutable, hashed and compared in C by
    its value."""
    cls = type(value)
    return any(base.__module__ == "pybind11_builtins" for base in cls.__mro__[1:-1]) and isinstance(
        getattr(cls, "__members__", None), dict) and any(value == m for m in cls.__members__.values())


def is_numpy_constant(value: Any) -> bool:
    """NumPy's immutable values: a dtype (``np.dtype("float32")``), a limits
    object (``np.finfo(np.float32)``, ``np.iinfo(np.int16)``, like
    ``torch.finfo``), a numeric or bool scalar (``np.float32(1.5)``)."""
    np = sys.modules.get("numpy")  # only values of an imported NumPy can reach the trace
    return np is not None and isinstance(value, (np.dtype, np.finfo, np.iinfo, np.number, np.bool_))


def as_torch_scalar(value: Any) -> Any:
    """The Python number a torch operator takes a NumPy scalar operand for, or
    ``value`` itself: torch reads ``np.integer`` as int, ``np.floating`` as float
    and ``np.complex128`` as complex (the same dtypes and values in every
    operator, each direction, checked against eager), but ``np.bool_`` and
    ``np.complex64`` as float, which the graph keeps as is (an argument FX
    cannot render: a graph break)."""
    np = sys.modules.get("numpy")
    if np is None or not isinstance(value, (np.integer, np.floating, np.complex128)):
        return value
    return int(value) if isinstance(value, np.integer) else value.item()


class ConstantVariable(KnownObjectVariable):
    """A known immutable Python value, loaded from the code's constants."""

    rebuilt_once = False
    loaded_as_constant = True

    def constant_identity(self) -> int | None:
        return None  # a constant equal to another may or may not be the same object

    def same_object(self, tx: Tx, other: VariableTracker) -> bool | None:
        if isinstance(other, ConstantVariable):
            return self.value is other.value
        return super().same_object(tx, other)

    def instance_answer(self, cls: Any) -> tuple[type, bool]:
        return type(self.value), isinstance(self.value, cls)

    def get_iter(self, tx: Tx) -> VariableTracker:
        return range_iterator(self.value) if type(self.value) is range else super().get_iter(tx)

    def as_proxy(self) -> Any:
        return self.value

    def as_example(self) -> Any:
        return self.value

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return isinstance(self.value, (str, bytes, range, frozenset, tuple))

    def unpack_var_sequence(self, tx: Tx) -> list[VariableTracker]:
        """The items of a constant string, tuple...; iterating a constant whose
        type is not iterable (``None``, an int) raises eager's TypeError."""
        if not self.has_unpack_var_sequence(tx):
            cls = type(self.value)
            if not any("__iter__" in vars(k) or "__getitem__" in vars(k) for k in cls.__mro__):
                raise_traced(TypeError, f"{cls.__name__!r} object is not iterable")
            return super().unpack_var_sequence(tx)
        return [ConstantVariable(v) for v in self.value]

    def var_getattr(self, tx: Tx, name: str) -> VariableTracker:
        member = getattr_or_raise(self.value, name)
        if callable(member) and not isinstance(member, type):
            return BoundMethodVariable(self, name)
        return wrap_const(tx, member)

    def call_method(self, tx: Tx, name: str, args: Sequence[VariableTracker], kwargs: dict) -> VariableTracker:
        """Methods of constants (``"a,b".split(",")``, ``(1.5).is_integer()``) are
        folded when their arguments are constants too."""
        result = call_method_handler(self, tx, name, args, kwargs)
        if result is not None:
            return result
        known = all(a.is_python_constant() for a in args) and all(v.is_python_constant() for v in kwargs.values())
        if not known and type(self.value) is frozenset:  # ``fs.union(s)`` of a set holding objects
            return frozenset_members(self.value).call_method(tx, name, args, kwargs)
        if known:
            method = getattr(self.value, name, None)
            if method is not None:
                try:
                    result = method(*[a.as_python_constant() for a in args],
                                    **{k: v.as_python_constant() for k, v in kwargs.items()})
                except Exception as e:
                    raise_traced_from(e)
                return wrap_const(tx, result)
        method = getattr(self.value, name, None)
        if method is not None:
            result = call_with_stand_ins(tx, method, args, kwargs)  # user objects read as numbers
            if result is not None:
                return result
        return super().call_method(tx, name, args, kwargs)

    def contains_op(self, tx: Tx, item: VariableTracker) -> Any:
        """``item in frozenset(...)`` (a set display of constants) for an item not known now:
        a hash lookup among the members, as CPython's (the item hashed, then compared only with
        members of its hash); never a scan comparing it with each member."""
        if type(self.value) is frozenset and not item.is_python_constant():
            return frozenset_members(self.value).contains_op(tx, item)
        return super().contains_op(tx, item)

    def method_join(self, tx: Tx, iterable: VariableTracker, /) -> VariableTracker | None:
        """``sep.join(map(...))``: a lazy iterable's items joined now when all are
        constants; None: folded as any other method."""
        if not isinstance(self.value, (str, bytes)) or iterable.is_python_constant() or not (
                iterable.has_unpack_var_sequence(tx)):
            return None
        parts = iterable.unpack_var_sequence(tx)
        if not all(p.is_python_constant() for p in parts):
            return None
        return self.call_method(tx, "join", [wrap_const(tx, tuple(p.as_python_constant() for p in parts))], {})

    def method_format(self, tx: Tx, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker | None:
        """``"{}".format(obj)`` with arguments not all constants, field by field;
        None: folded as any other method."""
        if type(self.value) is not str or all(a.is_python_constant() for a in (*args, *kwargs.values())):
            return None
        return format_string(tx, self.value, args, kwargs)

    def __repr__(self) -> str:
        return f"ConstantVariable({self.value!r})"


def raise_traced(exc_type: type[BaseException], *args: Any) -> NoReturn:
    """Make the traced program raise ``exc_type(*args)`` (constants) at this point."""
    raise TracedException(ExceptionVariable(exc_type, [ConstantVariable(a) for a in args]))


def getattr_or_raise(value: Any, name: str) -> Any:
    """``getattr(value, name)`` at trace time; a missing attribute raises eager's
    AttributeError in the traced program (so ``try``/``except AttributeError``
    and ``hasattr``-style code behave as in eager)."""
    try:
        return getattr(value, name)
    except AttributeError as e:
        raise_traced_from(e)


@contextlib.contextmanager
def errors_are_the_programs() -> Iterator[None]:
    """Around an operation bytegraph does on the program's own values as eager
    does it (an index, a sort, a slice store into a list's items): an error it
    raises is the one eager raises, so the traced program raises it."""
    try:
        yield
    except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError) as e:
        raise_traced_from(e)


def raise_traced_from(error: BaseException, as_vt: Callable[[Any], VariableTracker] | None = None) -> NoReturn:
    """Make the traced program raise what evaluating a folded operation raised
    at trace time (same type and constant arguments; ``as_vt`` gives an argument
    that is one of the operation's own operands back as its VT, as
    ``KeyError(key)`` holds the key object itself)."""
    raise TracedException(ExceptionVariable(type(error), [(as_vt or ConstantVariable)(a) for a in error.args]))


def unmodelled_method(container: VariableTracker, name: str, args: Sequence[VariableTracker],
                      kwargs: dict[str, VariableTracker]) -> NoReturn:
    """A method call of a builtin container that no handler takes: eager's
    TypeError when the arguments' count or keywords do not fit the C method
    (``[].append()``, ``{}.get()``), else a graph break. The error is found by
    calling the real method on an empty instance with placeholders of two kinds
    for the arguments: the same TypeError for both does not depend on the values."""
    cls = container.python_type()
    if cls in BUILTIN_CONTAINERS and name not in ("__init__", "__new__") and callable(getattr(cls, name, None)):
        messages = set()
        for placeholder in (None, 0):
            try:
                getattr(cls(), name)(*[placeholder] * len(args), **dict.fromkeys(kwargs, placeholder))
                messages.add(None)
            except TypeError as e:
                messages.add(str(e))
            except Exception:
                messages.add(None)
        if len(messages) == 1 and None not in messages:
            raise_traced(TypeError, messages.pop())
    bad_method(container, name)
