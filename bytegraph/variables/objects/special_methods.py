"""The special methods of user objects: calls, ``with``, truth, iteration,
``str()``, ``repr()``, ``hash()`` and ``int()`` answered by the class's Python
``__call__``, ``__enter__``/``__exit__``, ``__bool__``/``__len__``,
``__iter__``/``__next__`` (or ``__getitem__``: the sequence protocol),
``__str__``/``__repr__``, ``__hash__``, ``__int__``/``__index__`` (inlined;
looked up on the class, as Python's implicit lookup does; their results
checked as CPython checks them), or by the builtin base's storage when the
class leaves them to it.

:class:`SpecialMethods` is mixed into
:class:`~bytegraph.variables.objects.user_objects.UserDefinedObjectVariable`.
"""
from __future__ import annotations

import sys
import types

from typing import TYPE_CHECKING, Any, Sequence


from bytegraph.breaks import unimplemented
from bytegraph.guards.guards import ConstantMatch
from bytegraph.guards.source import AttrSource, ConstSource
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables.functions import UserMethodVariable
from bytegraph.variables.constant import ConstantVariable, errors_are_the_programs, raise_traced
from bytegraph.variables.containers.dicts import DictVariable
from bytegraph.variables.containers import reprs
from bytegraph.variables.containers.dict_entries import DictIteratorVariable
from bytegraph.variables.containers.user_iterators import PythonIteratorVariable, SequenceIteratorVariable
from bytegraph.variables.objects import builtin_bases
from bytegraph.variables.objects.class_lookup import (
    _MISSING,
    class_attribute,
    guard_class_lookup,
    python_classes_only,
)
from bytegraph.variables.runtime_values import RuntimeValueVariable
from bytegraph.variables.tx import wrap_const

if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker


def python_iterator(tx: Tx, iterator: VT) -> PythonIteratorVariable | None:
    """``iterator`` as a lazily stepped iterator when it is a user object with a Python ``__next__``."""
    if not isinstance(iterator, SpecialMethods):
        return None
    next_fn = iterator.special_method(tx, "__next__")
    if not isinstance(next_fn, types.FunctionType):
        return None
    return PythonIteratorVariable(iterator, UserMethodVariable(next_fn, iterator))


class SpecialMethods:
    """Special-method protocols of a user object (``self``: a
    :class:`~bytegraph.variables.objects.user_objects.UserDefinedObjectVariable`)."""

    def special_method(self, tx: Tx, name: str) -> Any:
        """``type(self).name`` as Python's implicit special-method lookup finds it
        (on the class, never the instance), guarded so that replacing or
        adding it on a class recompiles; _MISSING when absent."""
        cls = self.python_type()
        attr = class_attribute(cls, name)
        guard_class_lookup(tx, cls, name, attr)
        return attr

    def python_method(self, tx: Tx, name: str) -> VT | None:
        """The special method ``name`` bound to self when it is a Python function, else None."""
        fn = self.special_method(tx, name)
        return UserMethodVariable(fn, self) if isinstance(fn, types.FunctionType) else None

    def enter(self, tx: Tx) -> VT:
        """``with self``: inline ``__enter__``."""
        return self._context_method(tx, "__enter__").call_function(tx, [], {})

    def exit(self, tx: Tx, args: Sequence[VT]) -> VT:
        """Leaving ``with self``: inline ``__exit__(exc_type, exc, traceback)``."""
        padded = list(args) + [ConstantVariable(None)] * (3 - len(args))
        return self._context_method(tx, "__exit__").call_function(tx, padded, {})

    def _context_method(self, tx: Tx, name: str) -> VT:
        method = self.python_method(tx, name)
        if method is None:
            unimplemented(
                gb_type="unsupported context manager",
                context=f"with {self.python_type().__qualname__} ({name} is not written in Python)",
                explanation="bytegraph traces context managers whose __enter__/__exit__ are Python functions.",
                hints=("Move the with block out of the compiled function.",),
            )
        return method

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        call = self.special_method(tx, "__call__")
        if isinstance(call, types.FunctionType):
            return tx.inline_call(UserMethodVariable(call, self), [self, *args], kwargs)
        return super().call_function(tx, args, kwargs)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name.startswith("__") and name.endswith("__"):  # a protocol (len(), obj[i]...): the class's method
            method = self.python_method(tx, name)
            if method is not None:
                result = method.call_function(tx, args, kwargs)
                if name == "__len__" and (result.is_python_constant() or not issubclass(result.python_type(), int)):
                    return ConstantVariable(checked_len(result))  # len(obj) comes here: its check
                return result
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def truthy(self, tx: Tx) -> bool:
        for dunder, checked in _TRUTH_METHODS:
            fn = self.special_method(tx, dunder)
            if fn is not _MISSING:
                if isinstance(fn, types.FunctionType):
                    return bool(checked(UserMethodVariable(fn, self).call_function(tx, [], {})))
                blocked_slot(fn)
                if builtin_bases.leaves_to_base(self, tx, dunder):
                    return builtin_bases.storage(tx, self).truthy(tx)
                return super().truthy(tx)
        return True

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return self.special_method(tx, "__iter__") is not _MISSING or self._indexed_only(tx)

    def has_iteration_protocol(self, tx: Tx) -> bool:
        """Whether ``iter(self)`` finds a protocol on the class: an ``__iter__``
        that is not None, or, without one, a ``__getitem__``."""
        iter_fn = self.special_method(tx, "__iter__")
        return iter_fn is not None and (iter_fn is not _MISSING or self.special_method(tx, "__getitem__") is not _MISSING)

    def _indexed_only(self, tx: Tx) -> bool:
        """Whether ``iter(self)`` is CPython's sequence iterator: the class has no
        ``__iter__`` and a Python ``__getitem__``."""
        return self.special_method(tx, "__iter__") is _MISSING and isinstance(
            self.special_method(tx, "__getitem__"), types.FunctionType)

    def lazy_iterator(self, tx: Tx) -> VT | None:
        """``iter(self)`` through a Python ``__iter__`` (None without one): stepped
        one ``__next__`` at a time when it returns a Python iterator; without
        ``__iter__``, through a Python ``__getitem__`` (the sequence protocol);
        neither (or ``__iter__ = None``): eager's TypeError."""
        if not self.has_iteration_protocol(tx):
            raise_traced(TypeError, f"'{self.python_type().__name__}' object is not iterable")
        iter_fn = self.special_method(tx, "__iter__")
        if self._indexed_only(tx):
            return SequenceIteratorVariable(self)
        if not isinstance(iter_fn, types.FunctionType):
            return self._base_dict_iterator(tx)
        iterator = UserMethodVariable(iter_fn, self).call_function(tx, [], {})
        if not hasattr(iterator.python_type(), "__next__"):
            raise_traced(TypeError, f"iter() returned non-iterator of type '{iterator.python_type().__name__}'")
        return python_iterator(tx, iterator) or iterator

    def _base_dict_iterator(self, tx: Tx) -> VT | None:
        """``iter(self)`` of a dict subclass's instance made in the trace that
        leaves ``__iter__`` to its base: the base's iterator over the instance's
        items, which sees the changes made to them as eager's does."""
        if not builtin_bases.leaves_to_base(self, tx, "__iter__"):
            return None
        part = builtin_bases.storage(tx, self)
        return DictIteratorVariable(part, "keys", owner=self) if isinstance(part, DictVariable) else None

    def str_text(self, tx: Tx) -> VT | None:
        """``str(self)`` when the class answers it in Python: its ``__str__``, or, with
        object's ``__str__``, its repr (``Objects/object.c``: ``PyObject_Str``); None
        when other C code would answer."""
        method = self.python_method(tx, "__str__")
        if method is not None:
            return _checked_text(method.call_function(tx, [], {}), "__str__")
        if self.special_method(tx, "__str__") is object.__str__:
            return self.repr_text(tx)
        return self._base_answer(tx, "__str__", str)

    def repr_text(self, tx: Tx) -> VT | None:
        """``repr(self)``: the class's Python ``__repr__``; object's repr (it holds
        the address) is made after the graph; None when other C code would answer."""
        method = self.python_method(tx, "__repr__")
        if method is not None:
            return _checked_text(method.call_function(tx, [], {}), "__repr__")
        if self.special_method(tx, "__repr__") is object.__repr__:
            real = tx.output.side_effects.object_of(self) if self.source is not None else None
            if real is None or not self.guard_identity(tx):
                return RuntimeValueVariable(self, repr, str)  # made after the graph
            cls = type(real)  # "<module.qualname object at address>": the object's identity and its class's names
            for name in ("__module__", "__qualname__"):
                tx.output.guards.add(ConstantMatch(AttrSource(ConstSource(cls, cls.__qualname__), name),
                                                   getattr(cls, name)))
            return ConstantVariable(object.__repr__(real))
        answer = self._base_answer(tx, "__repr__", repr)
        if answer is None and builtin_bases.leaves_to_base(self, tx, "__repr__"):
            answer = reprs.base_repr(tx, builtin_bases.storage(tx, self), self)  # items not all constants, or itself
        return answer

    def _base_answer(self, tx: Tx, dunder: str, fn: Any) -> VT | None:
        """``fn(self)`` when the class leaves ``dunder`` to its builtin base: ``fn``
        of the builtin part, folded when it is a constant (``str(IntSub(5))``); else None."""
        if not builtin_bases.leaves_to_base(self, tx, dunder):
            return None
        answer = _folded(builtin_bases.storage(tx, self), fn)
        if answer is None or fn not in (repr, str):
            return answer
        cls = self.python_type()
        return ConstantVariable(reprs.subclass_text(cls, builtin_bases.builtin_base(cls), answer.as_python_constant()))

    def hash_value(self, tx: Tx) -> VT | None:
        """``hash(self)`` as CPython's ``slot_tp_hash`` answers it: the class's
        Python ``__hash__`` (its result checked and reduced); ``__hash__ = None``
        (a class defining ``__eq__`` only): eager's TypeError; a builtin base's
        own hash of the builtin part; object's identity hash, read from the real
        object (guarded by identity) or, for an object made in the trace, made
        after the graph. None otherwise (a break)."""
        fn = self.special_method(tx, "__hash__")
        if fn is None:
            raise_traced(TypeError, f"unhashable type: '{self.python_type().__name__}'")
        if isinstance(fn, types.FunctionType):
            result = UserMethodVariable(fn, self).call_function(tx, [], {})
            if isinstance(result, RuntimeValueVariable) and result.fn in (id, hash):
                return result  # (``hash(id(self))``) a word, never -1: slot_tp_hash keeps it
            return ConstantVariable(checked_hash(result, builtin_bases.operand(tx, result)))
        if builtin_bases.leaves_to_base(self, tx, "__hash__"):
            part = builtin_bases.storage(tx, self)
            if not part.is_python_constant():
                return None
            with errors_are_the_programs():  # a tuple holding a list: eager's TypeError
                return ConstantVariable(hash(part.as_python_constant()))
        if fn is not object.__hash__:
            return None
        real = tx.output.side_effects.object_of(self)
        if real is not None and self.guard_identity(tx):
            return ConstantVariable(hash(real))
        return RuntimeValueVariable(self, hash, int) if self.source is None else None

    def int_value(self, tx: Tx) -> VT | None:
        """``int(self)`` as ``PyNumber_Long`` answers it: the class's ``__int__``,
        else ``__index__`` (a Python one inlined, its result an exact int or
        eager's TypeError; a builtin base's applied to the builtin part); a
        ``str``/``bytes`` base's text parsed; a class of Python classes only with
        none of them: eager's TypeError. None (a break) where CPython warns
        (an int subclass returned, the ``__trunc__`` fallback) or C code answers."""
        cls = self.python_type()
        for dunder in ("__int__", "__index__"):
            fn = self.special_method(tx, dunder)
            if fn is _MISSING:
                continue
            if builtin_bases.leaves_to_base(self, tx, dunder):
                return _folded(builtin_bases.storage(tx, self), int)
            if not isinstance(fn, types.FunctionType):
                blocked_slot(fn)
                return None
            result = UserMethodVariable(fn, self).call_function(tx, [], {})
            if result.python_type() is int:
                return result
            if not issubclass(result.python_type(), int):
                raise_traced(TypeError, f"{dunder} returned non-int (type {result.python_type().__name__})")
            return None  # an int subclass: CPython warns (DeprecationWarning), then takes its value
        if builtin_bases.builtin_base(cls) in (str, bytes):
            return _folded(builtin_bases.storage(tx, self), int)
        if self.special_method(tx, "__trunc__") is _MISSING and python_classes_only(cls):
            raise_traced(TypeError, "int() argument must be a string, a bytes-like object or a real number, "
                         f"not '{cls.__name__}'")
        return None

    def reversed_iter(self, tx: Tx) -> VT | None:
        """``reversed(self)`` through the class's Python ``__reversed__`` (a
        ``Sequence``'s is a generator, stepped lazily); a builtin base's own
        ``__reversed__`` (a dict's, an OrderedDict's, a list's) walks the
        builtin part, as its C code does whatever the class's ``__iter__``."""
        method = self.python_method(tx, "__reversed__")
        if method is None and builtin_bases.leaves_to_base(self, tx, "__reversed__"):
            return wrap_const(tx, reversed).call_function(tx, [builtin_bases.storage(tx, self)], {})
        return None if method is None else method.call_function(tx, [], {})

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        iterator = self.lazy_iterator(tx)
        if iterator is not None:
            return iterator.unpack_var_sequence(tx)
        if builtin_bases.leaves_to_base(self, tx, "__iter__"):
            return builtin_bases.storage(tx, self).unpack_var_sequence(tx)
        return super().unpack_var_sequence(tx)




def _folded(part: VT, fn: Any) -> VT | None:
    """``fn(part)`` (``int``, ``str``, ``repr``) of the builtin part of an object: folded
    when it is a constant (a bad literal, digits past the limit: eager's ValueError), else None."""
    if not part.is_python_constant():
        return None
    with errors_are_the_programs():
        return ConstantVariable(fn(part.as_python_constant()))


def _checked_text(result: VT, name: str) -> VT:
    """What ``str()``/``repr()`` make of ``__str__``/``__repr__``'s result: a string, else eager's TypeError."""
    if not (result.is_python_constant() and isinstance(result.as_python_constant(), str)):
        raise_traced(TypeError, f"{name} returned non-string (type {result.python_type().__name__})")
    return result


def blocked_slot(attr: Any) -> None:
    """A special method set to a value that is not callable (``__bool__ = None``,
    which blocks the protocol): Python calls it anyway, eager's TypeError."""
    if not callable(attr):
        raise_traced(TypeError, f"'{type(attr).__name__}' object is not callable")


def checked_bool(result: VT) -> bool:
    """What Python makes of the VT ``__bool__`` returned: a non-bool (an int, the
    object itself) raises eager's TypeError in the traced program."""
    if result.python_type() is not bool or not result.is_python_constant():
        raise_traced(TypeError, f"__bool__ should return bool, returned {result.python_type().__name__}")
    return result.as_python_constant()


def checked_hash(result: VT, number: VT) -> int:
    """What ``slot_tp_hash`` makes of the VT ``__hash__`` returned (``number``:
    its int part): an int (of any subclass) is used as it is when it fits a
    machine word (-1 becomes -2), else reduced as ``int.__hash__`` reduces it;
    anything else raises eager's TypeError."""
    if not issubclass(result.python_type(), int):
        raise_traced(TypeError, "__hash__ method should return an integer")
    if not number.is_python_constant():
        unimplemented(gb_type="unsupported hash", context=f"__hash__ returned {result}",
                      explanation="The hash of this object is not known at trace time.")
    value = int(number.as_python_constant())
    if not -sys.maxsize - 1 <= value <= sys.maxsize:
        return hash(value)
    return -2 if value == -1 else value


def checked_len(result: VT | Any) -> int:
    """What Python makes of ``__len__``'s result (a VT or a constant): an int
    (``True`` -> 1); a result of the wrong type or a negative length raises
    eager's TypeError/ValueError in the traced program."""
    cls = result.python_type() if isinstance(result, VariableTracker) else type(result)
    if not issubclass(cls, int):
        raise_traced(TypeError, f"'{cls.__name__}' object cannot be interpreted as an integer")
    value = result.as_python_constant() if isinstance(result, VariableTracker) else result
    if value < 0:
        raise_traced(ValueError, "__len__() should return >= 0")
    if value > sys.maxsize:
        raise_traced(OverflowError, "cannot fit 'int' into an index-sized integer")
    return int(value)


#: what ``bool(obj)`` asks, in order, each with CPython's check of its result
_TRUTH_METHODS = (("__bool__", checked_bool), ("__len__", checked_len))
