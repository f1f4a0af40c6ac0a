"""User functions: real Python functions, bound methods, and functions created
inside the trace (``MAKE_FUNCTION``: lambdas, closures, comprehensions).

Calling any of them inlines its body (:meth:`InstructionTranslatorBase.inline_call`);
these classes only describe what is being called: code, globals, defaults and
closure cells.
"""
from __future__ import annotations

import functools
import inspect
import logging
import operator
import types
from typing import TYPE_CHECKING, Any, Callable, Sequence

from bytegraph import compat
from bytegraph.breaks import unimplemented, user_error
from bytegraph.guards.guards import DictContains
from bytegraph.guards.source import AttrSource, ConstSource, GetItemSource, Source
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.constant import ConstantVariable, raise_traced
from bytegraph.variables.containers.dicts import DictVariable
from bytegraph.variables.containers.sequences import TupleVariable
from bytegraph.variables.operators import call_operator
from bytegraph.variables.tx import wrap, wrap_const

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class CellVariable(VariableTracker):
    """A closure cell shared between a frame and functions it creates.

    The cell's contents live in the owner frame's ``symbolic_locals[name]``
    (or in ``contents`` once detached), so writes through ``nonlocal`` are
    seen by every function sharing the cell.
    """

    def __init__(self, owner_locals: dict[str, VT], name: str, owner_code: types.CodeType | None = None):
        super().__init__()
        self.owner_locals = owner_locals
        self.name = name
        self.owner_code = owner_code  # the frame whose real cell this is, when it has one

    def python_type(self) -> type:
        return types.CellType

    def get(self) -> VT:
        value = self.owner_locals.get(self.name)
        if value is None:
            user_error(
                "NameError",
                context=f"free variable {self.name!r} referenced before assignment",
                hint="Assign the variable before the inner function reads it.",
            )
        return value

    def set(self, value: VT) -> None:
        self.owner_locals[self.name] = value

    def reconstruct(self, codegen: PyCodegen) -> None:
        """The real cell, when it belongs to the frame the code is generated for."""
        if self.owner_code is not codegen.code:
            unimplemented(
                gb_type="escaping closure",
                context=f"cell {self.name!r} of an inlined frame is live after the graph",
                explanation="A closure over variables of an inlined function cannot be rebuilt outside it.",
                hints=("Define the inner function at module level, or outside the compiled function.",),
            )
        codegen.load_closure(self.name)


def _constant_of_fn(name: str) -> Callable[[UserFunctionVariable, Tx], VT]:
    """The ``attr_<name>`` handler of a function attribute that is a constant of the function."""
    def read(self: UserFunctionVariable, tx: Tx) -> VT:
        return ConstantVariable(getattr(self.fn, name))
    return read


def _read_from_fn(name: str) -> Callable[[UserFunctionVariable, Tx], VT]:
    """The ``attr_<name>`` handler of a function attribute read (guarded) through the function."""
    def read(self: UserFunctionVariable, tx: Tx) -> VT:
        return wrap(tx, getattr(self.fn, name), AttrSource(self.fn_source(), name))
    return read


class UserFunctionVariable(ConstantCallableVariable):
    """A real Python function (``types.FunctionType``) read from a source; calls inline it."""

    # what inlining needs -----------------------------------------------------
    def get_code(self) -> types.CodeType:
        return self.fn.__code__

    def get_globals(self) -> dict:
        return self.fn.__globals__

    def get_name(self) -> str:
        return self.fn.__qualname__

    def bound_self(self) -> VT | None:
        return None

    def constant_identity(self) -> int | None:
        return id(self.as_python_constant())  # a bound method too (not a Python constant): its function's

    def fn_source(self) -> Source:
        """Where the function object is read from: its source, or the function
        itself as a constant (a method of an object made in the trace). Its
        defaults and closure cells are read through it, so their values are
        guarded and mutations of them are replayed on the real objects."""
        return self.source if self.source is not None else ConstSource(self.fn, self.fn.__qualname__)

    def get_defaults(self, tx: Tx) -> tuple[list[VT], dict[str, VT]]:
        """Positional defaults and keyword-only defaults, as VTs."""
        base = self.fn_source()
        defaults = [wrap(tx, value, GetItemSource(AttrSource(base, "__defaults__"), i))
                    for i, value in enumerate(self.fn.__defaults__ or ())]
        kwdefaults = {name: wrap(tx, value, GetItemSource(AttrSource(base, "__kwdefaults__"), name))
                      for name, value in (self.fn.__kwdefaults__ or {}).items()}
        return defaults, kwdefaults

    def get_closure_cell(self, tx: Tx, index: int) -> VT:
        """Contents of closure cell ``index`` as a VT (guarded through the source)."""
        cell = self.fn.__closure__[index]
        known = tx.stand_in_cells.get(id(cell))
        if known is not None:  # a method of a class made in the trace: the cell of the trace it stands for
            return known[1].get()
        shared = tx.frame_cell_name(cell)
        if shared is not None:  # the compiled frame's own cell: its current value may be traced
            return tx.root().load_freevar(shared)
        try:
            contents = cell.cell_contents
        except ValueError:
            user_error(
                "NameError",
                context=f"free variable {self.fn.__code__.co_freevars[index]!r} is empty",
                hint="Assign the variable before calling the function.",
            )
        src = AttrSource(GetItemSource(AttrSource(self.fn_source(), "__closure__"), index), "cell_contents")
        return wrap(tx, contents, src)

    # VariableTracker ---------------------------------------------------------
    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if self.fn in FOLDABLE_LIBRARY_FUNCTIONS or (
            getattr(self.fn, compat.MARKED_CONSTANT, False)  # torch.compiler.assume_constant_result: the
            and all(a.is_python_constant() for a in (*args, *kwargs.values()))  # user vouches, no guard
        ):
            values = [_fold_argument(self.fn, a) for a in (*args, *kwargs.values())]
            if all(v is not _NOT_CONSTANT for v in values):
                return wrap_const(tx, self.fn(*values[:len(args)], **dict(zip(kwargs, values[len(args):]))))
        return tx.inline_call(self, args, kwargs)

    # the function's attributes ---------------------------------------------
    attr_dunder_name = _constant_of_fn("__name__")
    attr_dunder_qualname = _constant_of_fn("__qualname__")
    attr_dunder_module = _constant_of_fn("__module__")
    attr_dunder_doc = _constant_of_fn("__doc__")
    attr_dunder_code = _constant_of_fn("__code__")
    attr_dunder_defaults = _read_from_fn("__defaults__")
    attr_dunder_kwdefaults = _read_from_fn("__kwdefaults__")
    attr_dunder_annotations = _read_from_fn("__annotations__")
    attr_dunder_dict = _read_from_fn("__dict__")
    attr_dunder_globals = _read_from_fn("__globals__")
    if hasattr(types.FunctionType, "__type_params__"):  # from 3.12 (functools.wraps copies it)
        def attr_dunder_type_params(self, tx: Tx) -> VT:
            return wrap_const(tx, self.fn.__type_params__)

    def var_getattr(self, tx: Tx, name: str) -> VT:
        found = self.attr_from_handler(tx, name)
        if found is not None:
            return found
        if name in self.fn.__dict__:
            return wrap(tx, self.fn.__dict__[name], AttrSource(self.fn_source(), name))
        if not hasattr(self.fn, name):  # eager's AttributeError, until the function's __dict__ gains the name
            tx.output.guards.add(DictContains(AttrSource(self.fn_source(), "__dict__"), name, False))
            raise_function_attribute_error(name)
        return super().var_getattr(tx, name)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
        else:
            codegen.load_const(self.fn)

    def __repr__(self) -> str:
        return f"UserFunctionVariable({self.fn.__qualname__})"


def raise_function_attribute_error(name: str) -> None:
    """Make the traced program raise eager's error for a missing function attribute."""
    raise_traced(AttributeError, f"'function' object has no attribute {name!r}")


#: library functions with no side effects, evaluated at trace time when every
#: argument is a constant (functions and classes count as constants: they are
#: guarded by identity)
FOLDABLE_LIBRARY_FUNCTIONS = frozenset({
    inspect.signature, inspect.isclass, inspect.isfunction, inspect.ismethod, inspect.isgeneratorfunction,
    inspect.iscoroutinefunction, inspect.getfullargspec, inspect.isabstract, inspect.unwrap, logging.getLogger,
})


#: foldable functions that only read a callable's signature and kind: a bound
#: method's ``self`` does not matter to them
_SIGNATURE_READERS = frozenset({
    inspect.signature, inspect.ismethod, inspect.isfunction, inspect.isgeneratorfunction, inspect.iscoroutinefunction,
    inspect.getfullargspec,
})
_NOT_CONSTANT = object()


def _fold_argument(fn: Any, arg: VT) -> Any:
    """The value ``arg`` stands for in a folded call of ``fn``, or _NOT_CONSTANT.
    For signature readers a bound Python method is a method bound to a
    placeholder (its signature and kind do not depend on the object)."""
    if arg.is_python_constant():
        return arg.as_python_constant()
    if fn in _SIGNATURE_READERS and isinstance(arg, UserMethodVariable):
        return types.MethodType(arg.fn, _NOT_CONSTANT)
    return _NOT_CONSTANT


class MethodObject:
    """What a bound method object (``types.MethodType``) is to ``is`` and
    ``==``: each attribute read or ``MethodType(...)`` call makes a new one, so
    one made in the trace is only itself; ``==`` compares ``__self__`` by
    identity and ``__func__`` by ``==`` (CPython's ``method_richcompare``)."""

    def constant_identity(self) -> int | None:
        return None  # not its function's: ``h.f is h.f`` is False

    def same_object(self, tx: Tx, other: VT) -> bool | None:
        if self is not other and (self.source is None or other.source is None):
            return False
        return VariableTracker.same_object(self, tx, other)

    def binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        if op not in (operator.eq, operator.ne) or not isinstance(other, MethodObject):
            return NotImplemented
        same_self = self.bound_self().same_object(tx, other.bound_self())
        if same_self is None:
            return NotImplemented
        funcs = [self.attr_dunder_func(tx), other.attr_dunder_func(tx)]
        equal = same_self and (funcs[0].same_object(tx, funcs[1]) or call_operator(tx, operator.eq, funcs).truthy(tx))
        return ConstantVariable(equal == (op is operator.eq))


class UserMethodVariable(MethodObject, UserFunctionVariable):
    """A Python function bound to an object (``obj.method``): calls prepend ``obj``."""

    def __init__(self, fn: types.FunctionType, obj: VT, source=None):
        super().__init__(fn, source)
        self.obj = obj

    def bound_self(self) -> VT | None:
        return self.obj

    def python_type(self) -> type:
        return types.MethodType

    def is_python_constant(self) -> bool:
        return False

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return tx.inline_call(self, [self.obj, *args], kwargs)

    def attr_dunder_self(self, tx: Tx) -> VT:
        return self.obj

    def attr_dunder_func(self, tx: Tx) -> VT:
        return UserFunctionVariable(self.fn, AttrSource(self.source, "__func__") if self.source else None)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        # types.MethodType(fn, obj), not obj.<name>: under super(), or for a
        # classmethod bound to a subclass, that name finds a different function
        codegen.load_callable(types.MethodType)
        codegen.load_const(self.fn)
        codegen.reconstruct(self.obj)
        codegen.call(2)

    def __repr__(self) -> str:
        return f"UserMethodVariable({self.fn.__qualname__}, {self.obj})"


class BoundCallableVariable(MethodObject, VariableTracker):
    """``types.MethodType(func, obj)`` made in the trace for a callable that is
    not a plain Python function (one made in the trace, a builtin, a callable
    object, a bound method): calling it calls ``func(obj, *args)``."""

    def __init__(self, func: VT, obj: VT):
        super().__init__()
        self.func = func
        self.obj = obj

    def python_type(self) -> type:
        return types.MethodType

    def truthy(self, tx: Tx) -> bool:
        return True

    def bound_self(self) -> VT | None:
        return self.obj

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return self.func.call_function(tx, [self.obj, *args], kwargs)

    def attr_dunder_self(self, tx: Tx) -> VT:
        return self.obj

    def attr_dunder_func(self, tx: Tx) -> VT:
        return self.func

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_callable(types.MethodType)
        codegen.reconstruct(self.func)
        codegen.reconstruct(self.obj)
        codegen.call(2)

    def __repr__(self) -> str:
        return f"BoundCallableVariable({self.func}, {self.obj})"


class NestedUserFunctionVariable(VariableTracker):
    """A function created by ``MAKE_FUNCTION`` during the trace.

    Attribute stores (``functools.wraps`` sets ``__name__``, ``__doc__``,
    ``__wrapped__``...) are kept here and applied when the function is rebuilt.
    """

    #: writable attributes stored in the function object itself, not its ``__dict__``
    SLOT_ATTRIBUTES = ("__name__", "__qualname__", "__module__", "__doc__", "__annotations__", "__type_params__")

    def __init__(
        self,
        code: types.CodeType,
        f_globals: dict,
        qualname: str,
        defaults: VT | None,
        kwdefaults: VT | None,
        closure: tuple[CellVariable, ...] | None,
    ):
        super().__init__()
        self.code = code
        self.f_globals = f_globals
        self.qualname = qualname
        self.defaults = defaults
        self.kwdefaults = kwdefaults
        self.closure = closure
        self.slots: dict[str, VT] = {}
        self.func_dict = DictVariable({})

    def get_code(self) -> types.CodeType:
        return self.code

    def get_globals(self) -> dict:
        return self.f_globals

    def get_name(self) -> str:
        return self.qualname

    def bound_self(self) -> VT | None:
        return None

    def get_defaults(self, tx: Tx) -> tuple[list[VT], dict[str, VT]]:
        defaults = self.defaults.unpack_var_sequence(tx) if self.defaults is not None else []
        kwdefaults: dict[str, VT] = {}
        if self.kwdefaults is not None:
            for key, value in self.kwdefaults.items.values():
                kwdefaults[key.as_python_constant()] = value
        return defaults, kwdefaults

    def get_closure_cell(self, tx: Tx, index: int) -> VT:
        return self.closure[index].get()

    def closure_cell(self, index: int) -> CellVariable:
        return self.closure[index]

    def python_type(self) -> type:
        return types.FunctionType

    def truthy(self, tx: Tx) -> bool:
        return True

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return tx.inline_call(self, args, kwargs)

    # the new function's attributes (a stored value in ``slots`` answers first) ----------
    def attr_dunder_name(self, tx: Tx) -> VT:
        return ConstantVariable(self.code.co_name)

    def attr_dunder_qualname(self, tx: Tx) -> VT:
        return ConstantVariable(self.qualname)

    def attr_dunder_module(self, tx: Tx) -> VT:
        return ConstantVariable(self.f_globals.get("__name__"))

    def attr_dunder_doc(self, tx: Tx) -> VT:
        doc = self.code.co_consts[0] if self.code.co_consts else None
        return ConstantVariable(doc if isinstance(doc, str) else None)

    def attr_dunder_code(self, tx: Tx) -> VT:
        return ConstantVariable(self.code)

    if hasattr(types.FunctionType, "__type_params__"):  # 3.12+: () unless PEP 695 syntax
        def attr_dunder_type_params(self, tx: Tx) -> VT:
            return TupleVariable([])

    def attr_dunder_defaults(self, tx: Tx) -> VT:
        return self.defaults if self.defaults is not None else ConstantVariable(None)

    def attr_dunder_kwdefaults(self, tx: Tx) -> VT:
        return self.kwdefaults if self.kwdefaults is not None else ConstantVariable(None)

    def attr_dunder_dict(self, tx: Tx) -> VT:
        return self.func_dict

    def attr_dunder_annotations(self, tx: Tx) -> VT:
        self.slots["__annotations__"] = DictVariable({})  # created on first read, as CPython does
        return self.slots["__annotations__"]

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name in self.slots:
            return self.slots[name]
        found = self.attr_from_handler(tx, name)
        if found is not None:
            return found
        if name in self.func_dict.items:
            return self.func_dict.items[name][1]
        if not hasattr(types.FunctionType, name):
            raise_function_attribute_error(name)
        return super().var_getattr(tx, name)

    def has_attr(self, tx: Tx, name: str) -> bool:
        """``hasattr(fn, name)`` for the function made in the trace."""
        return name in self.slots or name in self.func_dict.items or hasattr(types.FunctionType, name)

    def store_attr(self, tx: Tx, name: str, value: VT) -> None:
        """``fn.name = value`` on the new function."""
        if name in self.SLOT_ATTRIBUTES:
            self.slots[name] = value
        elif name.startswith("__") and name.endswith("__") and name != "__wrapped__":
            unimplemented(
                gb_type="unsupported attribute store",
                context=f"setting {name!r} on {self}",
                explanation="bytegraph keeps the name, module, doc and plain attributes of functions made in the "
                            "trace; this special attribute is not modelled.",
                hints=("Set it outside the compiled function.",),
            )
        else:
            self.func_dict.items[name] = (ConstantVariable(name), value)

    def reconstruct(self, codegen: PyCodegen) -> None:
        flags = 0
        if self.defaults is not None:
            codegen.reconstruct(self.defaults)
            flags |= 0x01
        if self.kwdefaults is not None:
            codegen.reconstruct(self.kwdefaults)
            flags |= 0x02
        if self.closure:
            for cell in self.closure:
                codegen.reconstruct(cell)
            codegen.emit("BUILD_TUPLE", len(self.closure))
            flags |= 0x08
        codegen.load_const(self.code)
        codegen.emit("MAKE_FUNCTION", flags)
        for name, value in [*self.slots.items(), *((k, v) for k, (_, v) in self.func_dict.items.items())]:
            codegen.emit("COPY", 1)
            codegen.reconstruct(value)
            codegen.emit("SWAP", 2)
            codegen.emit("STORE_ATTR", name)

    def __repr__(self) -> str:
        return f"NestedUserFunctionVariable({self.qualname})"


class PartialVariable(VariableTracker):
    """``functools.partial(func, *args, **keywords)``: calling it calls ``func``
    with the stored arguments first."""

    def __init__(self, func: VT, args: Sequence[VT], keywords: dict[str, VT], source=None):
        super().__init__(source)
        self.func = func
        self.args = list(args)
        self.keywords = dict(keywords)

    def python_type(self) -> type:
        return functools.partial

    def truthy(self, tx: Tx) -> bool:
        return True

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return self.func.call_function(tx, [*self.args, *args], {**self.keywords, **kwargs})

    def attr_func(self, tx: Tx) -> VT:
        return self.func

    def attr_args(self, tx: Tx) -> VT:
        return TupleVariable(self.args)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        codegen.load_callable(functools.partial)
        codegen.reconstruct(self.func)
        for arg in self.args:
            codegen.reconstruct(arg)
        for value in self.keywords.values():
            codegen.reconstruct(value)
        if self.keywords:
            codegen.emit("KW_NAMES", tuple(self.keywords))
        codegen.call(1 + len(self.args) + len(self.keywords))

    def __repr__(self) -> str:
        return f"PartialVariable({self.func})"
