"""What a guard needs to say itself in words, and the groups a summary sorts guards into.

Each guard kind renders its own fact (:meth:`~bytegraph.guards.guards.Guard.describe`)
through a :class:`Words`: the renderer of one cache entry that names sources as
the user's code does and numbers dynamic sizes ``s0, s1, ...``
(:class:`bytegraph.guards.describe.GuardWords`).
"""
from __future__ import annotations

from typing import Any, Protocol

from bytegraph.guards.source import Source

#: summary groups (:mod:`bytegraph.guards.summary`), in the order a summary lists them
INPUTS = "inputs"
PARAMETERS = "parameters and buffers"
STRUCTURE = "module structure"
GLOBALS = "globals and builtins"
STATE = "global torch state"
GROUPS = (INPUTS, PARAMETERS, STRUCTURE, GLOBALS, STATE)

_LONG = 60


class Words(Protocol):
    """What a guard's description asks of the renderer of its cache entry."""

    def name(self, source: Source | None) -> str:
        """How the user's code names ``source``."""
        ...

    def symbol(self, source: Source, dim: int) -> str | None:
        """The symbol (``s0``...) of a dynamic size of the tensor at ``source``, if it has one."""
        ...


def modules_phrase(names: list[str]) -> str:
    """``module m`` or ``modules m, n`` for the module names ``names``."""
    unique = list(dict.fromkeys(names))
    return f"module {unique[0]}" if len(unique) == 1 else "modules " + ", ".join(unique)


def type_name(cls: type) -> str:
    """A class as a user names it: ``int``, ``MyModel``, ``torch.nn.modules.linear.Linear``."""
    module = getattr(cls, "__module__", "builtins")
    return cls.__qualname__ if module in ("builtins", "__main__") else f"{module}.{cls.__qualname__}"


def short(value: Any) -> str:
    """``repr(value)``, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= _LONG else text[: _LONG - 3] + "..."
