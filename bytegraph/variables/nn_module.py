"""``torch.nn.Module`` instances.

A module is guarded by identity when it is wrapped. Its parameters and buffers
become graph inputs read through ``_parameters[...]``/``_buffers[...]`` (fast in
guards and in the generated code); submodules are modules again; other instance
attributes are guarded constants or objects. Calling a module inlines its
``forward`` (or a Python ``__call__`` override) when it has no hooks; the
absence of hooks is guarded by the global hook-registration counter, so
registering any hook later forces a recompile.
"""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Sequence

import torch
from torch.utils.hooks import RemovableHandle

from bytegraph.breaks import unimplemented
from bytegraph.guards.guards import GlobalStateMatch
from bytegraph.guards.source import AttrSource, GetItemSource
from bytegraph.variables.base import BoundMethodVariable, VariableTracker
from bytegraph.variables.constant import ConstantVariable, raise_traced
from bytegraph.variables.containers import DictVariable, ListIteratorVariable, TupleVariable
from bytegraph.variables.functions import UserMethodVariable
from bytegraph.variables.tensor import replayed_hook_handles
from bytegraph.variables.user_defined import (
    _MISSING,
    bind_class_attribute,
    class_attribute,
    guard_not_in_instance_dict,
)

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker

_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_ALL_HOOK_DICTS = frozenset(_HOOK_DICTS) | {
    "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks_with_kwargs",
    "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
}
_GLOBAL_HOOK_DICTS = (
    "_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
    "_global_backward_pre_hooks", "_global_forward_hooks_always_called",
)


def hook_registrations() -> int:
    """How many hooks were ever registered in this process (``RemovableHandle.next_id``),
    not counting tensor hooks that compiled code registered replaying a trace."""
    return RemovableHandle.next_id - replayed_hook_handles()


def has_hooks(module: torch.nn.Module) -> bool:
    if any(getattr(module, name, None) for name in _HOOK_DICTS):
        return True
    module_mod = torch.nn.modules.module
    return any(getattr(module_mod, name, None) for name in _GLOBAL_HOOK_DICTS)


class NNModuleVariable(VariableTracker):
    """An ``nn.Module`` read from a source (guarded by identity)."""

    def __init__(self, module: torch.nn.Module, source=None):
        super().__init__(source)
        self.value = module

    def python_type(self) -> type:
        return type(self.value)

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
                return tx.wrap(d[holder][name], GetItemSource(AttrSource(self.source, holder), name))
        cls = type(module)
        if name == "__class__":
            return tx.wrap_const(cls)
        attr = class_attribute(cls, name)
        if name in _LISTINGS and attr is getattr(torch.nn.Module, name):
            return BoundMethodVariable(self, name)
        if name in ("keys", "values", "items") and _container_holder(module) is not None:
            return BoundMethodVariable(self, name)
        if attr is not _MISSING and isinstance(attr, property):
            return bind_class_attribute(tx, self, cls, name, attr)
        if name in d:
            if name in _ALL_HOOK_DICTS and not d[name]:
                return self._empty_hook_dict(tx, name)
            return tx.wrap(d[name], AttrSource(self.source, name))
        guard_not_in_instance_dict(tx, self, name)
        if attr is not _MISSING:
            return bind_class_attribute(tx, self, cls, name, attr)
        getattr_fn = class_attribute(cls, "__getattr__")
        if isinstance(getattr_fn, types.FunctionType) and getattr_fn is not torch.nn.Module.__getattr__:
            return UserMethodVariable(getattr_fn, self).call_function(tx, [ConstantVariable(name)], {})
        raise_traced(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}")

    def _empty_hook_dict(self, tx: Tx, name: str) -> VT:
        """An empty hook dict of this module, guarded by the global hook-registration
        counter instead of a per-dict check: it stays empty unless a hook is registered."""
        tx.output.guards.add(
            GlobalStateMatch(None, hook_registrations, hook_registrations(), "hook registrations")
        )
        holder = self.value.__dict__[name]
        existing = tx.output.side_effects.tracked(holder)
        if existing is not None:
            return existing
        return tx.output.side_effects.track(holder, DictVariable({}, type(holder), AttrSource(self.source, name)))

    def has_attr(self, tx: Tx, name: str) -> bool:
        return hasattr(self.value, name)

    # ---- calls ---------------------------------------------------------------
    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        module = self.value
        if has_hooks(module):
            unimplemented(
                gb_type="module hooks",
                context=f"call of {type(module).__name__} with hooks registered",
                explanation="Modules with forward/backward hooks are not traced yet.",
                hints=("Remove the hooks, or accept the graph break.",),
            )
        tx.output.guards.add(
            GlobalStateMatch(None, hook_registrations, hook_registrations(), "hook registrations")
        )
        call = class_attribute(type(module), "__call__")
        if isinstance(call, types.FunctionType) and call is not torch.nn.Module.__call__:
            return tx.inline_call(UserMethodVariable(call, self), [self, *args], kwargs)
        forward = self.var_getattr(tx, "forward")
        return forward.call_function(tx, args, kwargs)

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name in _LISTINGS and class_attribute(type(self.value), name) is getattr(torch.nn.Module, name):
            return self._listing(tx, name, args, kwargs)
        container = _container_holder(self.value)
        if container is not None:
            if name == "__len__" and not args:
                return ConstantVariable(len(self.value))
            if name == "__getitem__" and len(args) == 1:
                return self._container_item(tx, container, args[0].as_python_constant())
            if name == "__iter__" and not args:
                return ListIteratorVariable(self.unpack_var_sequence(tx))
            if name == "__contains__" and isinstance(self.value, (torch.nn.ModuleDict, torch.nn.ParameterDict)):
                return ConstantVariable(args[0].as_python_constant() in self.value)
            if name in ("keys", "values", "items") and isinstance(
                self.value, (torch.nn.ModuleDict, torch.nn.ParameterDict)
            ):
                keys = list(self.value.keys())
                if name == "keys":
                    return ListIteratorVariable([ConstantVariable(k) for k in keys])
                values = [self._container_item(tx, container, k) for k in keys]
                if name == "values":
                    return ListIteratorVariable(values)
                return ListIteratorVariable([TupleVariable([ConstantVariable(k), v]) for k, v in zip(keys, values)])
        return super().call_method(tx, name, args, kwargs)

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        return _container_holder(self.value) is not None

    def unpack_var_sequence(self, tx: Tx) -> list[VT]:
        container = _container_holder(self.value)
        if container is None:
            return super().unpack_var_sequence(tx)
        keys = list(self.value.__dict__[container].keys())
        if isinstance(self.value, (torch.nn.ModuleDict, torch.nn.ParameterDict)):
            return [ConstantVariable(k) for k in keys]
        return [self._item_by_key(tx, container, k) for k in keys]

    def _container_item(self, tx: Tx, container: str, index: Any) -> VT:
        """``module[index]`` for ModuleList/Sequential/ModuleDict/ParameterList/ParameterDict."""
        if isinstance(self.value, (torch.nn.ModuleDict, torch.nn.ParameterDict)):
            return self._item_by_key(tx, container, index)
        if isinstance(index, slice):
            unimplemented(
                gb_type="module container slice",
                context=f"{type(self.value).__name__}[{index}]",
                explanation="Slicing a module container creates a new module; not traced yet.",
                hints=("Index single elements, or iterate over the container.",),
            )
        keys = list(self.value.__dict__[container].keys())
        try:
            key = keys[index]
        except (IndexError, TypeError) as e:
            unimplemented(
                gb_type="user error",
                context=f"{type(self.value).__name__}[{index!r}] raised {type(e).__name__}",
                explanation="The traced code raises; it runs natively so the error is the eager one.",
                hints=("Fix the index.",),
            )
        return self._item_by_key(tx, container, key)

    def _item_by_key(self, tx: Tx, container: str, key: str) -> VT:
        holder = self.value.__dict__[container]
        if key not in holder:
            unimplemented(
                gb_type="user error",
                context=f"{type(self.value).__name__} has no key {key!r}",
                explanation="The traced code raises KeyError; it runs natively so the error is the eager one.",
                hints=("Check the key.",),
            )
        return tx.wrap(holder[key], GetItemSource(AttrSource(self.source, container), key))

    def _listing(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        """``parameters()``, ``named_modules()``... as an iterator of guarded VTs."""
        values = [a.as_python_constant() for a in args]
        kw = {k: v.as_python_constant() for k, v in kwargs.items()}
        named = getattr(self.value, name if name.startswith("named_") else f"named_{name}")
        items = []
        for path, obj in named(*values, **kw):
            vt = tx.wrap(obj, self._path_source(path)) if path else self
            items.append(TupleVariable([ConstantVariable(path), vt]) if name.startswith("named_") else vt)
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
