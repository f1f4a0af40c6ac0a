"""``torch.nn.Module`` instances.

A module is guarded by its type when it is wrapped, not its identity, so one
compiled entry serves every instance of the class with the same structure, as
under torch.compile. Its parameters and buffers become graph inputs read
through ``_parameters[...]``/``_buffers[...]`` (fast in guards and in the
generated code), each guarded by its metadata; submodules are modules again;
other instance attributes are guarded constants or objects. Calling a module inlines its
``forward`` (or a Python ``__call__`` override) when it has no hooks; the
absence of hooks is guarded per module (:class:`NoModuleHooks`) and for the
global hook dicts, so registering a module hook later forces a recompile
(hooks on tensors, which torch's own compilers register, do not).
"""
from __future__ import annotations

import collections
import inspect
import types
from typing import TYPE_CHECKING, Any, Sequence

import torch

from bytegraph.breaks import unimplemented, user_error
from bytegraph.guards.guards import DictKeysMatch, GlobalStateMatch
from bytegraph.guards.module_guards import MODULE_HOOK_DICTS, NoModuleHooks, reads_instance_dict
from bytegraph.guards.source import AttrSource, GetItemSource
from bytegraph.variables.base import BoundMethodVariable, VariableTracker
from bytegraph.variables.callables.functions import UserMethodVariable
from bytegraph.variables.constant import ConstantVariable, raise_traced
from bytegraph.variables.containers.iterators import ListIteratorVariable
from bytegraph.variables.containers.sequences import TupleVariable
from bytegraph.variables.objects.class_lookup import _MISSING, class_attribute, guard_not_in_instance_dict
from bytegraph.variables.objects.user_objects import bind_class_attribute, instance_answer_of_object, object_has_attr
from bytegraph.variables.tensors.tensor import TensorVariable
from bytegraph.variables.tx import wrap, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

_MODULE_GLOBALS = vars(torch.nn.modules.module)


def global_module_hooks() -> bool:
    """Whether any global module hook (``register_module_forward_hook``...) is
    registered (a guard checked on every call of a compiled module: no generator)."""
    get = _MODULE_GLOBALS.get
    return bool(get("_global_forward_hooks") or get("_global_forward_pre_hooks") or get("_global_backward_hooks")
                or get("_global_backward_pre_hooks") or get("_global_forward_hooks_always_called"))


def _has_backward_hooks(module: torch.nn.Module) -> bool:
    module_mod = torch.nn.modules.module
    return bool(module._backward_hooks or module._backward_pre_hooks or module_mod._global_backward_hooks
                or module_mod._global_backward_pre_hooks)


def has_hooks(module: torch.nn.Module) -> bool:
    return any(getattr(module, name, None) for name in MODULE_HOOK_DICTS) or global_module_hooks()


class NNModuleVariable(VariableTracker):
    """An ``nn.Module`` read from a source (guarded by type and by what is read of it)."""

    def __init__(self, module: torch.nn.Module, source=None):
        super().__init__(source)
        self.value = module

    def python_type(self) -> type:
        return type(self.value)

    instance_answer = instance_answer_of_object

    def truthy(self, tx: Tx) -> bool:
        if class_attribute(type(self.value), "__len__") is not _MISSING:
            return bool(len(self.value))
        return True

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is None:
            super().reconstruct(codegen)
        else:
            codegen.load_source(self.source)

    # ---- attributes ----------------------------------------------------------
    def var_getattr(self, tx: Tx, name: str) -> VT:
        module = self.value
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is not None:
            return pending
        d = module.__dict__
        for holder in ("_parameters", "_buffers", "_modules"):
            if name in d.get(holder, ()):
                return wrap(tx, d[holder][name], GetItemSource(AttrSource(self.source, holder), name))
        cls = type(module)
        found = self.attr_from_handler(tx, name)
        if found is not None:
            return found
        attr = class_attribute(cls, name)
        if name in _LISTINGS and attr is getattr(torch.nn.Module, name):
            return BoundMethodVariable(self, name)
        if attr is not _MISSING and isinstance(attr, property):
            return bind_class_attribute(tx, self, cls, name, attr)
        if name in d:
            return wrap(tx, d[name], AttrSource(self.source, name))
        guard_not_in_instance_dict(tx, self, name)
        if attr is not _MISSING:
            return bind_class_attribute(tx, self, cls, name, attr)
        getattr_fn = class_attribute(cls, "__getattr__")
        if isinstance(getattr_fn, types.FunctionType) and getattr_fn is not torch.nn.Module.__getattr__:
            return UserMethodVariable(getattr_fn, self).call_function(tx, [ConstantVariable(name)], {})
        raise_traced(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}")

    def has_attr(self, tx: Tx, name: str) -> bool:
        """``hasattr(module, name)``: as for user objects, plus the parameter,
        buffer and submodule dicts ``Module.__getattr__`` reads."""
        return object_has_attr(tx, self, name, ("_parameters", "_buffers", "_modules"))

    def store_attr(self, tx: Tx, name: str, value: VT) -> None:
        """``module.name = value``: a property setter is inlined; a plain store is
        recorded as a side effect; a custom ``__setattr__``, another data
        descriptor, or replacing a registered parameter is a graph break."""
        cls = type(self.value)
        attr = class_attribute(cls, name)
        if isinstance(attr, property):
            if attr.fset is None:
                user_error(
                    "AttributeError",
                    context=f"property {cls.__qualname__}.{name} has no setter",
                    hint="Assign a property that has a setter.",
                )
            wrap_const(tx, attr.fset).call_function(tx, [self, value], {})
            return
        if cls.__setattr__ is not torch.nn.Module.__setattr__ or (
            attr is not _MISSING and inspect.isdatadescriptor(attr)
            and not isinstance(attr, types.MemberDescriptorType)
        ):
            unimplemented(
                gb_type="unsupported attribute store",
                context=f"setting {name!r} on {cls.__qualname__} (custom __setattr__ or descriptor)",
                explanation="This assignment runs user code that may store something other than the value; "
                "bytegraph traces only plain attribute stores and property setters.",
                hints=("Move the assignment out of the compiled function.",),
            )
        if isinstance(value, TensorVariable) and name in self.value._parameters:
            unimplemented(
                gb_type="parameter assignment",
                context=f"assigning module parameter {name!r}",
                explanation="Replacing a registered parameter inside the compiled region is not supported.",
                hints=("Assign parameters outside the compiled function.",),
            )
        tx.output.side_effects.store_attr(self, name, value)

    # ---- calls ---------------------------------------------------------------
    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        module = self.value
        if any("__getattribute__" in vars(k) for k in type(module).__mro__[:-1]):
            unimplemented(
                gb_type="module with __getattribute__",
                context=f"call of {type(module).__name__}, whose class defines __getattribute__",
                explanation="Every attribute read of such a module (its hooks, forward, parameters) runs the "
                "class's own code, which the trace of a module call does not follow; the call runs natively.",
                hints=("Define __getattr__ (asked only for missing attributes) instead, or accept the graph break.",),
            )
        if has_hooks(module):
            if _has_backward_hooks(module):
                unimplemented(
                    gb_type="module backward hooks",
                    context=f"call of {type(module).__name__} with backward hooks registered",
                    explanation="Module backward hooks wrap the inputs and outputs in autograd nodes; "
                    "bytegraph does not trace them.",
                    hints=("Register a hook on the output tensor instead, or accept the graph break.",),
                )
            # forward (pre-)hooks: trace torch's own Module._call_impl, which runs them
            return tx.inline_call(UserMethodVariable(torch.nn.Module._call_impl, self), [self, *args], kwargs)
        tx.output.guards.add(GlobalStateMatch(None, global_module_hooks, False, "global module hooks"))
        if self.source is not None:
            tx.output.guards.add(NoModuleHooks(self.source, type(module) if reads_instance_dict(module) else None))
        call = class_attribute(type(module), "__call__")
        if isinstance(call, types.FunctionType) and call is not torch.nn.Module.__call__:
            return tx.inline_call(UserMethodVariable(call, self), [self, *args], kwargs)
        forward = self.var_getattr(tx, "forward")
        return forward.call_function(tx, args, kwargs)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name in _LISTINGS and class_attribute(type(self.value), name) is getattr(torch.nn.Module, name):
            return self._listing(tx, name, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    # a module container's (Sequential, ModuleList, ModuleDict, ParameterList...) own
    # protocol; None for other modules: their methods are read as attributes
    def method_dunder_len(self, tx: Tx, /) -> VT | None:
        if _container_holder(self.value) is None:
            return None
        return ConstantVariable(len(self.container_keys(tx)))

    def method_dunder_getitem(self, tx: Tx, key: VT, /) -> VT | None:
        container = _container_holder(self.value)
        return None if container is None else self._container_item(tx, container, key.as_python_constant())

    def method_dunder_iter(self, tx: Tx, /) -> VT | None:
        if _container_holder(self.value) is None:
            return None
        return ListIteratorVariable(self.unpack_var_sequence(tx))

    def method_dunder_contains(self, tx: Tx, key: VT, /) -> VT | None:
        if _container_holder(self.value) is None or not isinstance(
                self.value, (torch.nn.ModuleDict, torch.nn.ParameterDict)):
            return None
        return ConstantVariable(key.as_python_constant() in self.container_keys(tx))

    def container_keys(self, tx: Tx) -> list:
        """The keys of a module container's items, guarded (appending a layer
        after compiling recompiles)."""
        container = _container_holder(self.value)
        return _guarded_keys(tx, self.value.__dict__[container], AttrSource(self.source, container))

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return _container_holder(self.value) is not None

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        container = _container_holder(self.value)
        if container is None:  # the class's own __iter__ (inlined), or a graph break
            return self.call_method(tx, "__iter__", [], {}).unpack_var_sequence(tx)
        keys = self.container_keys(tx)
        if isinstance(self.value, (torch.nn.ModuleDict, torch.nn.ParameterDict)):
            return [ConstantVariable(k) for k in keys]
        return [self._item_by_key(tx, container, k) for k in keys]

    def _container_item(self, tx: Tx, container: str, index: Any) -> VT:
        """``module[index]`` for ModuleList/Sequential/ModuleDict/ParameterList/ParameterDict."""
        if isinstance(self.value, (torch.nn.ModuleDict, torch.nn.ParameterDict)):
            return self._item_by_key(tx, container, index)
        keys = self.container_keys(tx)
        if isinstance(index, slice) and type(self.value) in (torch.nn.ModuleList, torch.nn.Sequential):
            items = [(k, self._item_by_key(tx, container, k)) for k in keys[index]]
            return ModuleSliceVariable(type(self.value), items)
        try:
            key = keys[index]
        except (IndexError, TypeError) as e:
            raise_traced(type(e), f"index {index!r} is out of range" if isinstance(e, IndexError) else str(e))
        if isinstance(index, slice):
            unimplemented(
                gb_type="module container slice",
                context=f"{type(self.value).__name__}[{index}]",
                explanation="Slicing a subclass of a module container runs its own constructor; not traced.",
                hints=("Index single elements, or iterate over the container.",),
            )
        return self._item_by_key(tx, container, key)

    def _item_by_key(self, tx: Tx, container: str, key: str) -> VT:
        holder = self.value.__dict__[container]
        if key not in holder:
            raise_traced(KeyError, key)
        return wrap(tx, holder[key], GetItemSource(AttrSource(self.source, container), key))

    def _listing(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        """``parameters()``, ``named_modules()``... as an iterator of guarded VTs;
        the holder dicts walked are guarded by their keys (a parameter or
        submodule added after compiling recompiles)."""
        values = [a.as_python_constant() for a in args]
        kw = {k: v.as_python_constant() for k, v in kwargs.items()}
        kind = name.removeprefix("named_")
        named = getattr(self.value, f"named_{kind}")
        items = []
        for path, obj in named(*values, **kw):
            vt = wrap(tx, obj, self._path_source(path)) if path else self
            items.append(TupleVariable([ConstantVariable(path), vt]) if name.startswith("named_") else vt)
        recurse = kw.get("recurse", True) if kind in ("parameters", "buffers") else kind == "modules"
        holders = {"parameters": ("_parameters",), "buffers": ("_buffers",)}.get(kind, ("_modules",))
        if recurse:
            holders = tuple({"_modules", *holders})
        for path, module in (self.value.named_modules() if recurse else [("", self.value)]):
            source = self._path_source(path) if path else self.source
            for holder in holders:
                _guarded_keys(tx, module.__dict__[holder], AttrSource(source, holder))
        return ListIteratorVariable(items)

    def _path_source(self, path: str):
        """Source of ``self.<dotted path>`` through the holder dicts."""
        source = self.source
        module: Any = self.value
        for part in path.split("."):
            for holder in ("_modules", "_parameters", "_buffers"):
                d = module.__dict__.get(holder, {})
                if part in d:
                    source = GetItemSource(AttrSource(source, holder), part)
                    module = d[part]
                    break
        return source

    def __repr__(self) -> str:
        return f"NNModuleVariable({type(self.value).__name__})"


def _guarded_keys(tx: Tx, holder: dict, source: Any) -> list:
    """``list(holder)``, guarded through ``source``."""
    keys = list(holder)
    tx.output.guards.add(DictKeysMatch(source, type(holder), tuple(keys)))
    return keys


class ModuleSliceVariable(VariableTracker):
    """``container[a:b]`` of an ``nn.ModuleList`` or ``nn.Sequential``: a new
    container holding the same submodules, as eager builds with
    ``type(container)(...)`` (a ModuleList renumbers its keys, a Sequential
    keeps them). Calling a Sequential slice calls its modules in order."""

    def __init__(self, cls: type, items: list[tuple[str, VT]]):
        super().__init__()
        self.cls = cls
        self.items = items

    def python_type(self) -> type:
        return self.cls

    def truthy(self, tx: Tx) -> bool:
        return bool(self.items)

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return True

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        return [vt for _, vt in self.items]

    def method_dunder_len(self, tx: Tx, /) -> VT:
        return ConstantVariable(len(self.items))

    def method_dunder_iter(self, tx: Tx, /) -> VT:
        return ListIteratorVariable(self.unpack_var_sequence(tx))

    def method_dunder_getitem(self, tx: Tx, key: VT, /) -> VT:
        index = key.as_python_constant()
        if isinstance(index, slice):
            return ModuleSliceVariable(self.cls, self.items[index])
        try:
            return self.items[index][1]
        except (IndexError, TypeError) as e:
            raise_traced(type(e), str(e))

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if self.cls is not torch.nn.Sequential or len(args) != 1 or kwargs:
            return super().call_function(tx, args, kwargs)
        tx.output.guards.add(GlobalStateMatch(None, global_module_hooks, False, "global module hooks"))
        value = args[0]
        for _, module in self.items:
            value = module.call_function(tx, [value], {})
        return value

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_callable(self.cls)
        if self.cls is torch.nn.Sequential:
            codegen.load_callable(collections.OrderedDict)
            for key, module in self.items:
                codegen.load_const(key)
                codegen.reconstruct(module)
                codegen.emit("BUILD_TUPLE", 2)
            codegen.emit("BUILD_LIST", len(self.items))
            codegen.call(1)
        else:
            for _, module in self.items:
                codegen.reconstruct(module)
            codegen.emit("BUILD_LIST", len(self.items))
        codegen.call(1)

    def __repr__(self) -> str:
        return f"ModuleSliceVariable({self.cls.__name__}, {len(self.items)})"


def _container_holder(module: torch.nn.Module) -> str | None:
    """The dict holding a module container's items, or None for other modules."""
    if isinstance(module, (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict)):
        return "_modules"
    if isinstance(module, (torch.nn.ParameterList, torch.nn.ParameterDict)):
        return "_parameters"
    return None


_LISTINGS = frozenset(
    {"parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
     "modules", "named_modules"}
)
