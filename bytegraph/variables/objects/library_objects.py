"""Library objects read by identity and attributes, never traced into: Python
modules (:class:`PythonModuleVariable`), ``os.environ``, weak references, and
opaque constants such as loggers and ``typing`` aliases."""
from __future__ import annotations

import functools
import logging
import os
import types
from typing import TYPE_CHECKING, Any, NoReturn, Sequence

import torch
import torch.backends
from torch.utils._config_module import ConfigModule

from bytegraph.breaks import unimplemented, user_error
from bytegraph.graph.state_setters import CONFIG_OPTION
from bytegraph.guards.guards import DictContains, GlobalStateMatch
from bytegraph.guards.source import AttrSource, ConvertSource, WeakRefCallSource
from bytegraph.variables.base import KnownObjectVariable, VariableTracker
from bytegraph.variables.callables.deferred_calls import logger_method
from bytegraph.variables.constant import ConstantVariable, getattr_or_raise, raise_traced
from bytegraph.variables.callables.functions import UserFunctionVariable
from bytegraph.variables.torch_state.queries import fold_query, switch_state
from bytegraph.variables.tx import wrap, wrap_attr, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


_PROXY_READERS = frozenset({"items", "keys", "values", "get", "copy", "__getitem__", "__contains__", "__len__"})


class OpaqueConstantVariable(KnownObjectVariable):
    """A library object used only by identity and for its attributes (e.g. a
    logger, a ``typing`` alias): read, compared and passed around, never traced
    into. Calls on it are graph breaks."""

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if isinstance(self.value, logging.Logger) and (method := logger_method(self.value, name)) is not None:
            return method
        value = getattr_or_raise(self.value, name)
        if self.source is not None:
            return wrap(tx, value, AttrSource(self.source, name))
        return wrap_const(tx, value)

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        """``type.__dict__["__mro__"].__get__(cls)``: a descriptor of ``type`` read
        on a class with a source is read natively, its value guarded through
        ``getter(cls)`` (what a metaclass shadowing ``cls.__mro__`` cannot change)."""
        desc = getattr(self.value, "__self__", None)
        if (getattr(self.value, "__name__", None) == "__get__"
                and type(desc) in (types.GetSetDescriptorType, types.MemberDescriptorType)
                and desc.__objclass__ is type and len(args) == 1 and not kwargs and args[0].source is not None
                and isinstance(cls := args[0].as_python_constant() if args[0].is_python_constant() else None, type)):
            return wrap(tx, self.value(cls), ConvertSource(args[0].source, self.value, f"type.{desc.__name__}"))
        if (type(desc) is types.MappingProxyType and getattr(self.value, "__name__", None) in _PROXY_READERS
                and all(a.is_python_constant() for a in (*args, *kwargs.values()))):
            # a read of a constant mapping proxy (inspect.Signature.parameters.items()): nothing can write
            # through a proxy, so the answer is the constant the real call gives now
            return wrap_const(tx, self.value(*[a.as_python_constant() for a in args],
                                            **{k: v.as_python_constant() for k, v in kwargs.items()}))
        return super().call_function(tx, args, kwargs)

    def __repr__(self) -> str:
        return f"OpaqueConstantVariable({type(self.value).__name__})"


class EnvironVariable(VariableTracker):
    """``os.environ``. Reads (``get``, ``[key]``, ``key in``) are folded at trace
    time and guarded on that variable's value, so changing the environment
    variable recompiles; anything else (writes, iteration) is a graph break."""

    def __init__(self, source=None):
        super().__init__(source)

    def python_type(self) -> type:
        return type(os.environ)

    def contains_op(self, tx: Tx, item: VT) -> VT:
        return self.call_method(tx, "__contains__", [item], {})

    def unhandled_method(self, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> NoReturn:
        unimplemented(
            gb_type="unsupported environment access",
            context=f"os.environ.{name} with {len(args)} arguments",
            explanation="bytegraph folds os.environ.get(key[, default]), os.environ[key] and key in os.environ "
                        "with constant keys; other uses run natively.",
            hints=("Read the environment outside the compiled function.",),
        )

    def _value(self, tx: Tx, key: VT) -> str | None:
        """The variable's value now, guarded (a change recompiles)."""
        name = key.as_python_constant()
        value = os.environ.get(name)
        tx.output.guards.add(GlobalStateMatch(None, _environ_getter(name), value, f"environment variable {name}"))
        return value

    # reads with constant arguments are folded (None: not folded, a graph break)
    def method_get(self, tx: Tx, key: VT, default: VT | None = None, /) -> VT | None:
        if not key.is_python_constant() or default is not None and not default.is_python_constant():
            return None
        value = self._value(tx, key)
        if value is None:
            return default if default is not None else ConstantVariable(None)
        return ConstantVariable(value)

    def method_dunder_getitem(self, tx: Tx, key: VT, /) -> VT | None:
        if not key.is_python_constant():
            return None
        value = self._value(tx, key)
        if value is None:
            raise_traced(KeyError, key.as_python_constant())
        return ConstantVariable(value)

    def method_dunder_contains(self, tx: Tx, key: VT, /) -> VT | None:
        return ConstantVariable(self._value(tx, key) is not None) if key.is_python_constant() else None

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_const(os.environ)


@functools.lru_cache(maxsize=None)
def _environ_getter(key: str) -> Any:
    """``os.environ.get(key)`` as a guard's getter (one per key, so equal guards merge)."""
    return functools.partial(os.environ.get, key)


class WeakRefVariable(VariableTracker):
    """A ``weakref.ref`` read from a source; calling it reads the referent,
    guarded through ``ref()`` (so its death or replacement recompiles)."""

    def __init__(self, ref: Any, source: Any):
        super().__init__(source)
        self.ref = ref

    def python_type(self) -> type:
        return type(self.ref)

    def truthy(self, tx: Tx) -> bool:
        return True

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if args or kwargs:
            return super().call_function(tx, args, kwargs)
        return wrap(tx, self.ref(), WeakRefCallSource(self.source))


class PythonModuleVariable(KnownObjectVariable):
    """A Python module object (``torch``, ``math``, ``torch.nn.functional``, a user module).

    Members of library modules (see ``LIBRARY_MODULES``) are treated as
    immutable and read without guards; members of other modules are guarded
    through their source.
    """

    @property
    def module(self) -> types.ModuleType:
        """The module (its :attr:`value`)."""
        return self.value

    def python_type(self) -> type:
        return types.ModuleType

    def truthy(self, tx: Tx) -> bool:
        return True

    def has_attr(self, tx: Tx, name: str) -> bool:
        """``hasattr(module, name)``: for a user module read from a source, whether
        its ``__dict__`` holds ``name`` (guarded), or its ``__getattr__`` (PEP 562)
        answers; library modules are fixed, so they are asked directly."""
        if self.source is None or is_library_module(self.module):
            return super().has_attr(tx, name)
        present = name in self.module.__dict__
        tx.output.guards.add(DictContains(AttrSource(self.source, "__dict__"), name, present))
        return present or hasattr(self.module, name)

    def var_getattr(self, tx: Tx, name: str) -> VT:
        computed = vars(type(self.module)).get(name) if type(self.module) is not types.ModuleType else None
        if computed is not None and hasattr(type(computed), "__set__"):
            return self._read_computed(tx, name, computed)
        try:
            value = getattr(self.module, name)
        except AttributeError:
            user_error(
                "AttributeError",
                context=f"module {self.module.__name__!r} has no attribute {name!r}",
                hint="Check the attribute name.",
            )
        if is_library_module(self.module) or self.source is None:
            return wrap_const(tx, value)
        return wrap_attr(tx, self, value, name)

    def _read_computed(self, tx: Tx, name: str, descriptor: Any) -> VT:
        """An attribute the module object's class computes (``torch.backends.cudnn.enabled``, a
        ``ContextProp``; a ``property``): never a stored constant. A flag is a state query (folded and
        guarded); a property's getter is traced; any other descriptor is a graph break."""
        if isinstance(descriptor, torch.backends.ContextProp):
            return fold_query(tx, descriptor.getter, f"{self.module.__name__}.{name}")
        if isinstance(descriptor, property) and isinstance(descriptor.fget, types.FunctionType):
            return tx.inline_call(UserFunctionVariable(descriptor.fget), [self], {})
        unimplemented(
            gb_type="unsupported module attribute",
            context=f"{self.module.__name__}.{name}, computed by a {type(descriptor).__qualname__}",
            explanation="The module's class computes this attribute with code bytegraph does not model; "
                        "folding its value without a guard could go stale, so the read runs natively.",
            hints=("Read it outside the compiled function and pass it in.",),
        )

    def store_attr(self, tx: Tx, name: str, value: VT) -> None:
        """``module.name = v`` where the module object's class computes ``name`` by a ``property``
        (``torch.utils.deterministic.fill_uninitialized_memory``): its setter is traced; a constant
        stored in an option of one of torch's configuration modules (``torch._inductor.config``): a
        switch of process state (``switch_state``); any other store is the base's (a graph break)."""
        computed = vars(type(self.module)).get(name) if type(self.module) is not types.ModuleType else None
        if isinstance(computed, property) and isinstance(computed.fset, types.FunctionType):
            tx.inline_call(UserFunctionVariable(computed.fset), [self, value], {})
            return
        if isinstance(self.module, ConfigModule) and value.is_python_constant():
            switch_state(tx, CONFIG_OPTION, (self.module, name), value.as_python_constant())
            return
        super().store_attr(tx, name, value)

    def __repr__(self) -> str:
        return f"PythonModuleVariable({self.module.__name__})"


LIBRARY_MODULES = ("torch", "math", "operator", "builtins", "functools", "itertools", "collections",
                   "typing", "numpy", "warnings", "inspect", "enum", "dataclasses", "abc", "types",
                   "contextlib", "copy", "re", "os", "sys", "logging")


def is_library_module(module: types.ModuleType) -> bool:
    """Whether ``module`` belongs to a library bytegraph assumes nobody monkeypatches
    while compiled code runs (documented in docs/guards.md)."""
    top = module.__name__.split(".", 1)[0]
    return top in LIBRARY_MODULES
