"""Class statements inside traced code (``LOAD_BUILD_CLASS``,
``builtins.__build_class__``): the kind is *a class made by a ``class``
statement while the trace runs*, with its siblings the class decorators that
only fill such a class in (``dataclasses.dataclass``, ``functools.total_ordering``,
``typing.final``) and the members its body builds (``staticmethod``,
``classmethod``, ``property``, ``dataclasses.field``).

The body runs in the trace like any inlined function, with its namespace as
its locals (``LOAD_NAME``/``STORE_NAME``). Then the class is made for real, at
trace time, from that namespace *realized*: constants and known objects as
themselves, a function made in the body as a real function whose closure
cells are *stand-ins*, real cells that the trace maps to its own cells
(``Tx.stand_in_cells``), so a method inlined later reads and writes the
enclosing function's variables as the trace holds them. The class then is an
ordinary user class to the rest of the trace (instances, ``super()``,
``autograd.Function.apply``, namedtuples).

Eager makes a new class on every call; the trace's class is one object. So
it, its functions and the classes its metaclass made are recorded in
:data:`~bytegraph.graph.codegen.TRACE_MADE`, and generated code that would
load one of them (the class, an instance or a method returned, stored or live
at a graph break) is a graph break instead: that statement then runs natively.
What cannot be realized or would run user code once instead of per call (a
metaclass other than the listed ones, a base's ``__init_subclass__``, a class
attribute that is a tensor or a mutable container, ``__set_name__``) is a
graph break naming it.
"""
from __future__ import annotations

import abc
import builtins
import dataclasses
import enum
import functools
import types
import typing
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch
from torch.autograd.function import FunctionMeta

from bytegraph.breaks import BreakSite, Unsupported, unimplemented
from bytegraph.graph.codegen import TRACE_MADE
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables.functions import CellVariable, NestedUserFunctionVariable, PartialVariable
from bytegraph.variables.constant import ConstantVariable, errors_are_the_programs, raise_traced_from
from bytegraph.variables.containers.dicts import DictVariable
from bytegraph.variables.objects.class_lookup import HEAPTYPE
from bytegraph.variables.tx import wrap_const

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: metaclasses whose class creation only builds the class (no user code, no state outside it)
METACLASSES = frozenset({type, abc.ABCMeta, FunctionMeta, typing.NamedTupleMeta})
#: ``__init_subclass__`` of these bases only fills the new class in
_PURE_INIT_SUBCLASS = frozenset({object, typing.Generic})
#: values a realized class attribute may hold as itself: immutable, or known by identity
_AS_ITSELF = (type(None), bool, int, float, complex, str, bytes, type, types.FunctionType, types.BuiltinFunctionType,
              types.ModuleType, torch.dtype, torch.device, torch.layout, enum.Enum, type(Ellipsis),
              dataclasses.Field, typing.TypeVar, type(typing.Optional[int]), types.GenericAlias)


def _break(context: str, explanation: str) -> None:
    unimplemented(
        gb_type="class statement",
        context=context,
        explanation=explanation,
        hints=("Define the class at module level, outside the compiled function.",),
    )


def made_in_trace(cls: Any) -> bool:
    return isinstance(cls, type) and cls in TRACE_MADE


class BuildClassVariable(VariableTracker):
    """``builtins.__build_class__``, as ``LOAD_BUILD_CLASS`` pushes it."""

    def python_type(self) -> type:
        return types.BuiltinFunctionType

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        body, name_vt, *base_vts = args
        if not isinstance(body, NestedUserFunctionVariable) or not name_vt.is_python_constant():
            _break(f"__build_class__({body}, {name_vt})", "Only class statements are traced.")
        name = name_vt.as_python_constant()
        if not all(b.is_python_constant() for b in (*base_vts, *kwargs.values())):
            _break(f"class {name}", "Bases and class keywords must be known when the class is made.")
        bases = tuple(b.as_python_constant() for b in base_vts)
        keywords = {k: v.as_python_constant() for k, v in kwargs.items()}
        resolved = types.resolve_bases(bases)  # __mro_entries__: typing.NamedTuple, Generic[T]
        meta = _metaclass(name, keywords.pop("metaclass", type(resolved[0]) if resolved else type), resolved)
        for klass in (k for base in resolved for k in base.__mro__):
            if "__init_subclass__" in vars(klass) and klass not in _PURE_INIT_SUBCLASS:
                _break(f"class {name}({klass.__qualname__})",
                       f"{klass.__qualname__}.__init_subclass__ would run once at trace time, not on every call.")
        namespace, classcell = tx.inline_class_body(body)
        stand_ins = _StandIns(tx)
        real_ns = {key: realize(tx, value, stand_ins, f"{name}.{key}", key == "__slots__")
                   for key, value in namespace.items() if key != "__classcell__"}
        for key, value in real_ns.items():
            if hasattr(type(value), "__set_name__") and not isinstance(value, (dataclasses.Field, property)):
                _break(f"class {name}: {key} = {type(value).__qualname__}(...)",
                       "__set_name__ of a class attribute would run once at trace time.")
        if isinstance(classcell, CellVariable):
            real_ns["__classcell__"] = stand_ins.cell(classcell)
        if resolved is not bases:
            real_ns["__orig_bases__"] = bases
        try:
            cls = meta(name, resolved, real_ns, **keywords)
        except Exception as e:  # a bad base, a slots conflict: known metaclasses decide from the bases and namespace alone
            raise_traced_from(e)
        mark_made(cls, tx.break_site())
        result = wrap_const(tx, cls)
        if isinstance(classcell, CellVariable):
            classcell.set(result)  # zero-argument super() and __class__ in the methods
        return result

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_const(builtins.__build_class__)  # a break in the body: the statement runs natively

    def __repr__(self) -> str:
        return "BuildClassVariable()"


def _metaclass(name: str, meta: Any, bases: tuple) -> type:
    """The most derived metaclass of ``meta`` and the bases' (CPython's rule),
    if it is one of :data:`METACLASSES`."""
    if isinstance(meta, type):
        for base in bases:
            if issubclass(type(base), meta):
                meta = type(base)
    if isinstance(meta, type) and not issubclass(meta, type) and not meta.__flags__ & HEAPTYPE:
        with errors_are_the_programs():  # ``class F(1)``: int("F", (1,), ns), C code refusing the call
            meta(name, bases, {})
    if meta not in METACLASSES:
        _break(f"class {name}(metaclass={getattr(meta, '__qualname__', meta)})",
               "Only classes made by type, ABCMeta, autograd.Function's and NamedTuple's metaclasses are traced.")
    return meta


def check_runs_natively(tx: Tx, cls: type) -> None:
    """Break unless ``cls``, made in the trace, may run natively (in a graph
    node, as ``autograd.Function.apply`` does): none of its functions closes
    over a variable of the trace (its stand-in cells are empty outside it)."""
    if not made_in_trace(cls):
        return
    for value in vars(cls).values():
        fn = getattr(value, "__func__", value)
        for cell in getattr(fn, "__closure__", None) or ():
            known = tx.stand_in_cells.get(id(cell))
            if known is not None and known[1].name != "__class__":  # __class__ holds the real class
                try:
                    _break(f"{cls.__qualname__}.{fn.__name__} closes over {known[1].name!r}",
                           "The class runs natively in the graph, where the trace's variables do not exist.")
                except Unsupported as brk:
                    TRACE_MADE[cls].relocate(brk)  # the class statement runs natively
                    raise


def store_class_attribute(tx: Tx, cls: type, name: str, value: VT) -> None:
    """``cls.name = value`` on a class made in the trace: set on the real class
    now (nothing outside the trace sees it), ``value`` realized as in the body."""
    real = realize(tx, value, _StandIns(tx), f"{cls.__qualname__}.{name}")
    setattr(cls, name, real)
    if isinstance(real, types.FunctionType):
        TRACE_MADE.setdefault(real, TRACE_MADE[cls])


def mark_made(cls: type, site: BreakSite) -> None:
    """Record ``cls`` and the functions and classes it holds as made in the
    trace, by the statement the compiled frame breaks at ``site`` to run natively."""
    TRACE_MADE[cls] = site
    for value in vars(cls).values():
        for inner in (value, getattr(value, "__func__", None), *(getattr(value, a, None) for a in ("fget", "fset", "fdel"))):
            if isinstance(inner, types.FunctionType) or (isinstance(inner, type) and inner.__qualname__.startswith(
                    cls.__qualname__)):
                TRACE_MADE.setdefault(inner, site)


class _StandIns:
    """The real cells standing for the trace's cells in one realized namespace:
    one per trace cell (its owner frame and name), recorded on the root translator."""

    def __init__(self, tx: Tx):
        self.registry = tx.root().stand_in_cells

    def cell(self, cell: CellVariable) -> types.CellType:
        key = (id(cell.owner_locals), cell.name)
        for real, known in self.registry.values():
            if (id(known.owner_locals), known.name) == key:
                return real
        real = types.CellType()
        self.registry[id(real)] = (real, cell)
        return real


def realize(tx: Tx, vt: VT, stand_ins: _StandIns, where: str, slots: bool = False) -> Any:
    """The real value a class attribute ``vt`` becomes, or a graph break.
    ``__slots__`` (``slots``) may also be a list of constant names: type() only
    reads the names, and the class keeps a list equal to the trace's."""
    if isinstance(vt, NestedUserFunctionVariable):
        defaults, kwdefaults = vt.get_defaults(tx)
        fn = types.FunctionType(vt.code, vt.f_globals, vt.code.co_name,
                                tuple(realize(tx, d, stand_ins, where) for d in defaults) or None,
                                tuple(stand_ins.cell(c) for c in vt.closure) if vt.closure else None)
        fn.__qualname__ = vt.qualname
        fn.__kwdefaults__ = {k: realize(tx, v, stand_ins, where) for k, v in kwdefaults.items()} or None
        for name, value in [*vt.slots.items(), *((k, v) for k, (_, v) in vt.func_dict.items.items())]:
            setattr(fn, name, realize(tx, value, stand_ins, where))  # annotations, functools.wraps' attributes
        return fn  # recorded as made in the trace with its class
    if isinstance(vt, ClassMemberVariable):
        return vt.kind(*[realize(tx, a, stand_ins, where) for a in vt.args],
                       **{k: realize(tx, v, stand_ins, where) for k, v in vt.kwargs.items()})
    if isinstance(vt, DictVariable) and vt.python_type() is dict:  # __annotations__
        return {k.as_python_constant(): realize(tx, v, stand_ins, where) for k, v in vt.items.values()}
    if vt.is_python_constant():
        value = vt.as_python_constant()
        if _immutable(value) or slots and isinstance(value, list) and all(isinstance(n, str) for n in value):
            return value
    _break(where, f"The class attribute {vt} is not a constant, a known object or a function made in the body: "
           "the class would hold a copy of it.")


def _immutable(value: Any) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(_immutable(v) for v in value)
    return isinstance(value, _AS_ITSELF)


class ClassMemberVariable(VariableTracker):
    """A member a class body builds from values of the trace:
    ``staticmethod(f)``, ``classmethod(f)``, ``property(fget, fset)``,
    ``dataclasses.field(default_factory=f)``; it becomes ``kind(*args, **kwargs)``
    when the class is made."""

    #: the callables that make such a member
    KINDS = (staticmethod, classmethod, property, dataclasses.field)

    def __init__(self, kind: Callable, args: Sequence[VT], kwargs: dict[str, VT]):
        super().__init__()
        self.kind, self.args, self.kwargs = kind, list(args), dict(kwargs)

    def python_type(self) -> type:
        return dataclasses.Field if self.kind is dataclasses.field else self.kind

    def _property_with(self, index: int, fn: VT) -> VT:
        args = (self.args + [ConstantVariable(None)] * 4)[:4]
        args[index] = fn
        return ClassMemberVariable(property, args, self.kwargs)

    def method_getter(self, tx: Tx, fn: VT) -> VT:
        return self._property_with(0, fn)

    def method_setter(self, tx: Tx, fn: VT) -> VT:
        return self._property_with(1, fn)

    def method_deleter(self, tx: Tx, fn: VT) -> VT:
        return self._property_with(2, fn)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if self.kind is property and name in ("getter", "setter", "deleter") and len(args) == 1 and not kwargs:
            return getattr(self, f"method_{name}")(tx, args[0])
        return super().call_method(tx, name, args, kwargs)

    def __repr__(self) -> str:
        return f"ClassMemberVariable({self.kind.__name__})"


def make_member(kind: Callable) -> Callable[[Tx, list, dict], VT]:
    def make(tx: Tx, args: list, kwargs: dict) -> VT:
        return ClassMemberVariable(kind, args, kwargs)

    return make


def _decorate(decorator: Callable) -> Callable[[Tx, list, dict], VT]:
    def model(tx: Tx, args: list, kwargs: dict) -> VT:
        if not all(v.is_python_constant() for v in (*args, *kwargs.values())):
            _break(f"{decorator.__qualname__}(...)", "The decorator's arguments must be known when the class is made.")
        keywords = {k: v.as_python_constant() for k, v in kwargs.items()}
        if not args:  # ``@dataclass(frozen=True)``: the decorator, applied to the class next
            return PartialVariable(wrap_const(tx, decorator), [], kwargs)
        cls = args[0].as_python_constant()
        if len(args) != 1 or not made_in_trace(cls):
            _break(f"{decorator.__qualname__}({cls!r})",
                   "A class decorator changes the class in place: only a class made in the trace is decorated there.")
        try:
            result = decorator(cls, **keywords)
        except Exception as e:
            _break(f"{decorator.__qualname__}({cls.__qualname__})", f"The decorator raised {type(e).__name__}: {e}")
        mark_made(result, TRACE_MADE[cls])
        return wrap_const(tx, result)

    return model


#: Python functions modelled where a class statement uses them
CLASS_MODELS: dict[Any, Callable[[Tx, list, dict], VT]] = {
    dataclasses.dataclass: _decorate(dataclasses.dataclass),
    functools.total_ordering: _decorate(functools.total_ordering),
    typing.final: _decorate(typing.final),
    dataclasses.field: make_member(dataclasses.field),
}
