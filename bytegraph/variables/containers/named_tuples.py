"""Named tuples: ``collections.namedtuple`` and ``typing.NamedTuple`` classes
(and their plain subclasses) and ``torch.return_types`` structseqs, whose
generated tuple protocol and helpers (``_asdict``, ``_replace``, fields) are
modelled on the tuple's items; methods written in the class body are inlined.
"""
from __future__ import annotations

import collections
import types
import typing
from typing import TYPE_CHECKING, Any, Sequence

from bytegraph.breaks import unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables.functions import UserMethodVariable
from bytegraph.variables.constant import ConstantVariable, raise_traced
from bytegraph.variables.containers.dicts import DictVariable
from bytegraph.variables.containers.sequences import TupleVariable
from bytegraph.variables.objects.class_lookup import _MISSING, class_attribute
from bytegraph.variables.tx import wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: a class made by ``collections.namedtuple``: its helpers and ``__new__``
#: are the same code for every namedtuple, its fields ``_tuplegetter``s
_REFERENCE_NAMEDTUPLE = collections.namedtuple("_REFERENCE_NAMEDTUPLE", "a")
_NAMEDTUPLE_CODE = tuple(name for name in ("_make", "_replace", "_asdict", "__repr__", "__getnewargs__", "__replace__")
                         if name in _REFERENCE_NAMEDTUPLE.__dict__)  # __replace__ from 3.13 (copy.replace)
_NAMEDTUPLE_OWN = frozenset({*_NAMEDTUPLE_CODE, "_fields", "_field_defaults", "__new__", "__match_args__"})
#: class-body names that do not change how instances behave
_INERT_NAMES = frozenset({"__module__", "__qualname__", "__doc__", "__slots__", "__annotations__", "__dict__",
                          "__weakref__", "__orig_bases__", "__parameters__", "__firstlineno__",
                          "__static_attributes__", "__class_getitem__"})


def _code_of(attr: Any) -> Any:
    return getattr(getattr(attr, "__func__", attr), "__code__", None)


def is_modelled_namedtuple(cls: Any) -> bool:
    """Whether :class:`NamedTupleVariable` models instances of ``cls``: a
    structseq (``torch.return_types``), or a ``collections.namedtuple`` class
    (also ``typing.NamedTuple``, and subclasses) whose tuple protocol and
    namedtuple helpers are the generated ones. A class that defines a dunder
    of its own (``__iter__``, ``__len__``, ``__eq__``, ``__init__``...) or
    redefines a helper or a field is a user class."""
    if not isinstance(cls, type) or type(cls) is not type or not issubclass(cls, tuple) or cls is tuple:
        return False
    mro = cls.__mro__
    base = mro[mro.index(tuple) - 1]  # the generated class
    # a typing.NamedTuple may also derive from Generic (``class P(NamedTuple, Generic[T])``)
    if mro[mro.index(tuple):] not in ((tuple, object), (tuple, typing.Generic, object)) or (
            base.__bases__ not in ((tuple,), (tuple, typing.Generic))):
        return False
    if "n_sequence_fields" in base.__dict__:  # a structseq (cannot be subclassed)
        return base is cls
    fields = base.__dict__.get("_fields")
    if not isinstance(fields, tuple) or getattr(cls, "__match_args__", None) != fields:
        return False
    for klass in mro[: mro.index(tuple)]:
        generated = _NAMEDTUPLE_OWN.union(fields) if klass is base else frozenset()
        for name in klass.__dict__:
            if name not in _INERT_NAMES and name not in generated and (
                name.startswith("__") or name in _NAMEDTUPLE_OWN or name in fields
            ):
                return False
    getter = type(_REFERENCE_NAMEDTUPLE.a)
    new = base.__dict__.get("__new__")
    return (
        all(_code_of(base.__dict__.get(n)) is _code_of(_REFERENCE_NAMEDTUPLE.__dict__[n]) for n in _NAMEDTUPLE_CODE)
        and getattr(getattr(new, "__func__", None), "__globals__", {}).get("_tuple_new") is tuple.__new__
        and all(type(base.__dict__.get(f)) is getter and base.__dict__[f].__reduce__()[1][0] == i
                for i, f in enumerate(fields))
    )


class NamedTupleVariable(TupleVariable):
    """A ``collections.namedtuple`` or ``torch.return_types`` structseq value."""

    def __init__(self, items: Sequence[VT], tuple_cls: type, source=None):
        super().__init__(items, source)
        self.tuple_cls = tuple_cls
        #: attributes stored in the trace on an instance of a subclass (which has a ``__dict__``)
        self.attrs: dict[str, VT] = {}

    def python_type(self) -> type:
        return self.tuple_cls

    def fields(self) -> tuple[str, ...]:
        return self.tuple_cls.__match_args__

    def as_python_constant(self) -> Any:
        return self._build([i.as_python_constant() for i in self.items])

    def as_example(self) -> Any:
        return self._build([i.as_example() for i in self.items])

    def as_proxy(self) -> Any:
        return tuple(i.as_proxy() for i in self.items)

    def _build(self, values: list) -> Any:
        if hasattr(self.tuple_cls, "_make"):
            return self.tuple_cls._make(values)
        return self.tuple_cls(values)

    def with_items(self, items: Sequence[VT]) -> VT:
        return TupleVariable(items)

    def var_getattr(self, tx: Tx, name: str) -> VT:
        fields = self.fields()
        if name in fields:
            return self.items[fields.index(name)]
        if name in self.attrs:
            return self.attrs[name]
        found = self.attr_from_handler(tx, name)
        if found is not None:
            return found
        method = self._user_method(tx, name)
        if method is not None:
            return method
        cls = self.tuple_cls
        if hasattr(cls, "_fields") and class_attribute(cls, name) is _MISSING and class_attribute(
                cls, "__getattr__") is _MISSING and (cls.__dictoffset__ == 0 or self.source is None):
            raise_traced(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}")  # none anywhere
        return super().var_getattr(tx, name)

    def attr__fields(self, tx: Tx) -> VT | None:
        return ConstantVariable(self.tuple_cls._fields) if hasattr(self.tuple_cls, "_fields") else None

    def has_attr(self, tx: Tx, name: str) -> bool:
        return name in self.attrs or super().has_attr(tx, name)

    def store_attr(self, tx: Tx, name: str, value: VT) -> None:
        """``obj.name = value``: fields are read-only (``_tuplegetter``); other
        names go to the instance ``__dict__`` that a subclass's instances have."""
        cls = self.tuple_cls
        _raise_store_error(cls, name, self.fields(), lambda probe: setattr(probe, name, None))
        if name in self.fields() or cls.__dictoffset__ == 0 or any(name in vars(k) for k in cls.__mro__):
            unimplemented(
                gb_type="unsupported attribute store",
                context=f"setting {name!r} on a {cls.__qualname__} (a field, a class attribute, or no __dict__)",
                explanation="bytegraph stores attributes only in the __dict__ of a namedtuple subclass's instance.",
                hints=("Move the assignment out of the compiled function.",),
            )
        if self.source is not None:
            tx.output.side_effects.store_attr(self, name, value)
        self.attrs[name] = value

    def delete_attr(self, tx: Tx, name: str) -> None:
        """``del obj.name``: eager's AttributeError where no Python code would run
        (a field, or a class without instance ``__dict__``); otherwise a break."""
        _raise_store_error(self.tuple_cls, name, self.fields(), lambda probe: delattr(probe, name))
        super().delete_attr(tx, name)

    def _user_method(self, tx: Tx, name: str) -> VT | None:
        """A method the namedtuple's class body defines in Python (``def add(self)``, a
        staticmethod or classmethod), bound as Python binds it; None for anything else."""
        if name in _NAMEDTUPLE_OWN:  # the generated helpers are modelled above
            return None
        attr = next((vars(k)[name] for k in self.tuple_cls.__mro__ if name in vars(k)), None)
        if isinstance(attr, types.FunctionType):
            return UserMethodVariable(attr, self)
        if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
            return wrap_const(tx, attr.__func__)
        if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
            return UserMethodVariable(attr.__func__, wrap_const(tx, self.tuple_cls))
        return None

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        """A Python method of the class body first (never one of the generated
        helpers, which are ``method_`` handlers), then the tuple's methods."""
        method = self._user_method(tx, name) if not (name.startswith("__") and name.endswith("__")) else None
        if method is not None:
            return method.call_function(tx, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def method__asdict(self, tx: Tx, /) -> VT | None:
        """``collections.namedtuple``'s ``_asdict()`` (None: not a namedtuple class)."""
        if not hasattr(self.tuple_cls, "_fields"):
            return None
        return DictVariable({f: (ConstantVariable(f), v) for f, v in zip(self.fields(), self.items)})

    def method_dunder_getnewargs(self, tx: Tx, /) -> VT | None:
        """``collections.namedtuple``'s ``__getnewargs__()``: its items as a plain tuple."""
        return TupleVariable(self.items) if hasattr(self.tuple_cls, "_fields") else None

    def method__replace(self, tx: Tx, /, **changes: VT) -> VT | None:
        """``collections.namedtuple``'s ``_replace(**changes)`` (None: not a namedtuple class)."""
        if not hasattr(self.tuple_cls, "_fields"):
            return None
        fields = self.fields()
        unknown = set(changes) - set(fields)
        if unknown:
            raise_traced(ValueError, f"Got unexpected field names: {sorted(unknown)!r}")
        return NamedTupleVariable([changes.get(f, v) for f, v in zip(fields, self.items)], self.tuple_cls)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(getattr(self.tuple_cls, "_make", self.tuple_cls))
        self.reconstruct_items(codegen)
        codegen.emit("BUILD_TUPLE", len(self.items))
        codegen.call(1)
        for name, value in self.attrs.items():
            codegen.call_on_top(object.__setattr__, ConstantVariable(name), value)


def _raise_store_error(cls: type, name: str, fields: tuple[str, ...], store: Any) -> None:
    """Eager's AttributeError for storing or deleting ``name`` on an instance of
    the namedtuple class ``cls`` when only C code decides it: a field (its
    ``_tuplegetter`` is read-only), or, without an instance ``__dict__``, a name that
    is no data descriptor of the class. ``store`` is tried on a stand-in instance."""
    attr = class_attribute(cls, name)
    c_only = name in fields or cls.__dictoffset__ == 0 and (
        attr is _MISSING or not hasattr(type(attr), "__set__") and not hasattr(type(attr), "__delete__"))
    if not hasattr(cls, "_fields") or not c_only or class_attribute(cls, "__setattr__") is not object.__setattr__ or (
            class_attribute(cls, "__delattr__") is not object.__delattr__):
        return
    try:
        store(tuple.__new__(cls, (None,) * len(fields)))
    except AttributeError as e:
        raise_traced(AttributeError, str(e))
