"""The guard that a module has no hooks of its own: :class:`NoModuleHooks`.

It runs for every module a trace called, so its per-call cost is multiplied by
the size of the model. Reading ``m._forward_hooks`` goes through
``nn.Module``'s ``__getattr__`` slot (every attribute read of a module does),
about three times the cost of reading the same value from ``m.__dict__``. The
guard therefore reads the four hook dicts from the instance ``__dict__`` where
that gives exactly what the attribute read gives, and checks, once per guard
call and module class, that it still does: see :meth:`NoModuleHooks.render`.
"""
from __future__ import annotations

import dataclasses
import weakref
from typing import Any, ClassVar

import torch

from bytegraph.guards.guards import Guard, Names, describe_source
from bytegraph.guards.source import Source
from bytegraph.guards.words import Words

#: a module's own hook dicts that change how calling it behaves
MODULE_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")

#: names that, defined by a class of a module's MRO, would make an attribute read of a hook
#: dict differ from the instance ``__dict__``'s entry (a data descriptor, another lookup)
_SHADOWING = (*MODULE_HOOK_DICTS, "__getattribute__")


def reads_instance_dict(module: torch.nn.Module) -> bool:
    """Whether ``module.<hook dict>`` reads ``module.__dict__[<hook dict>]`` for
    all four hook dicts: the instance dict holds them and no class of its MRO
    but ``object`` (whose dict cannot change) defines one of :data:`_SHADOWING`."""
    own = getattr(module, "__dict__", None)
    return isinstance(own, dict) and all(name in own for name in MODULE_HOOK_DICTS) and not any(
        name in vars(cls) for cls in type(module).__mro__ if cls is not object for name in _SHADOWING)


#: class -> its ``__dict__`` proxy (a read makes a new proxy each time; one per class keeps the guard's constants few)
_CLASS_DICTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _class_dict(cls: type) -> Any:
    proxy = _CLASS_DICTS.get(cls)
    if proxy is None:
        proxy = _CLASS_DICTS[cls] = vars(cls)
    return proxy


@dataclasses.dataclass(frozen=True, eq=False)
class NoModuleHooks(Guard):
    """The module has no forward/backward (pre-)hooks of its own (registering
    one later recompiles; global hooks are a GlobalStateMatch).

    ``module_type``: the module's class when :func:`reads_instance_dict` held
    as the trace ran (the hook dicts are then read from ``__dict__``), else None.
    """

    module_type: type | None = None
    order: ClassVar[int] = 3

    def describe(self, words: Words) -> tuple[str, str]:
        return words.name(self.source), "has no forward/backward hooks of its own"

    def module_source(self) -> Source | None:
        return self.source

    def check(self, names: Names, value: str) -> str:
        return "not (" + " or ".join(f"{value}.{name}" for name in MODULE_HOOK_DICTS) + ")"

    def render(self, names: Names, own_dict: str, cls: str, first: str | None) -> str:
        """The check reading the instance dict ``own_dict`` of a module whose class is
        the expression ``cls``; ``first`` is the class expression of an earlier
        guard of the same ``module_type`` in this guard function (None for the first).

        The class check: the class's MRO is the very tuple the trace saw (a
        ``__bases__`` assignment makes a new one) and none of its classes but
        ``object`` has since defined one of :data:`_SHADOWING`; a later module of
        the class an earlier one passed this check with passes with one ``is``."""
        mro = self.module_type.__mro__
        class_check = " and ".join([f"{cls}.__mro__ is {names.const(mro)}"] + [
            f"{names.const(name)} not in {names.const(_class_dict(c))}"
            for c in mro if c is not object for name in _SHADOWING])
        if first is not None:
            class_check = f"{cls} is {first} or ({class_check})"
        hooks = " or ".join(f"{own_dict}[{names.const(name)}]" for name in MODULE_HOOK_DICTS)
        return f"({class_check}) and not ({hooks})"

    def explain(self, actual: Any) -> str:
        if self.module_type is not None and not any(getattr(actual, name, None) for name in MODULE_HOOK_DICTS):
            return f"the class of {describe_source(self.source)} now changes how its hook dicts are read"
        return f"{describe_source(self.source)} now has hooks"

