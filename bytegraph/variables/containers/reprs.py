"""``repr()`` of builtin containers whose items are not all constants, or that
hold themselves: CPython's text, each item's repr as its kind answers it, and a
container met again while its own repr is being made written ``...`` as
``Py_ReprEnter`` has it (``[...]``, ``{...}``). :func:`cycle_safe` keeps a
container that holds itself from being taken for a constant (it would never end).
"""
from __future__ import annotations

import collections
import sys
import functools
from typing import TYPE_CHECKING, Any, Callable

from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.tx import wrap_const
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker
#: containers whose repr (or constant check) is in progress, by identity
_ACTIVE: list[VT] = []
_VISITING: set[int] = set()


def cycle_safe(is_python_constant: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """``is_python_constant`` answering False for a container met again inside itself."""
    @functools.wraps(is_python_constant)
    def checked(self: Any) -> bool:
        if id(self) in _VISITING:
            return False
        _VISITING.add(id(self))
        try:
            return is_python_constant(self)
        finally:
            _VISITING.discard(id(self))
    return checked


def item_repr(tx: Tx, vt: VT) -> str | None:
    """``repr(vt)`` as the traced program computes it, or None when not known now."""
    text = wrap_const(tx, repr).call_function(tx, [vt], {})
    return text.as_python_constant() if text.is_python_constant() else None


def container_repr(tx: Tx, vt: VT, recursive: str, texts: Callable[[], list[str | None]],
                   wrap: Callable[[str], str]) -> VT | None:
    """``recursive`` when ``vt`` is already being repr'd, else ``wrap`` of the
    ``texts`` of its items joined by ``", "``; None (a break) when an item's repr
    is not known at trace time."""
    if any(active is vt for active in _ACTIVE):
        return ConstantVariable(recursive)
    _ACTIVE.append(vt)
    try:
        parts = texts()
    finally:
        _ACTIVE.pop()
    if any(part is None for part in parts):
        return None
    return ConstantVariable(wrap(", ".join(parts)))  # type: ignore[arg-type]


def dict_repr(tx: Tx, vt: Any, owner: VT | None = None) -> VT | None:
    """``repr`` of a dict or a C OrderedDict (3.11's ``OrderedDict([(k, v)])``, 3.12's ``OrderedDict({k: v})``) of
    the builtin's ``__repr__``; None for other classes. ``owner``: the instance
    of a subclass whose builtin part ``vt`` is (its class names the text, and it
    is what its items hold when they hold themselves)."""
    owner = owner or vt
    cls = vt.dict_cls if owner is vt else owner.python_type()
    if cls.__repr__ is dict.__repr__:
        return container_repr(tx, owner, "{...}", lambda: [_pair_text(tx, k, v, "{}: {}") for k, v in vt.items.values()],
                              lambda text: "{" + text + "}")
    if cls.__repr__ is collections.OrderedDict.__repr__:
        if not vt.items:
            return ConstantVariable(f"{cls.__name__}()")
        form, shape = ("{}: {}", "{}({{{}}})") if sys.version_info >= (3, 12) else ("({}, {})", "{}([{}])")
        return container_repr(tx, owner, "...", lambda: [_pair_text(tx, k, v, form) for k, v in vt.items.values()],
                              lambda text: shape.format(cls.__name__, text))
    return None


def subclass_text(cls: type, base: type, text: str) -> str:
    """``text``, the repr of the builtin part of an instance of ``cls``, as the
    base's repr writes it for the subclass: the reprs of sets, frozensets,
    OrderedDicts, deques and defaultdicts name the instance's own type
    (``Objects/setobject.c``: ``set_repr``; ``_PyType_Name``)."""
    if base is set:
        return f"{cls.__name__}()" if text == "set()" else f"{cls.__name__}({text})"
    if base in (frozenset, collections.OrderedDict, collections.deque, collections.defaultdict):
        return cls.__name__ + text[len(base.__name__):]
    return text


def base_repr(tx: Tx, part: VT, owner: VT) -> VT | None:
    """``repr(owner)``, an instance of a subclass leaving ``__repr__`` to its builtin
    base (a dict, an OrderedDict, a list, a tuple) whose builtin part is ``part``."""
    if hasattr(part, "dict_cls"):
        return dict_repr(tx, part, owner)
    return sequence_repr(tx, part, owner) if isinstance(getattr(part, "items", None), list) else None


def _pair_text(tx: Tx, key: VT, value: VT, form: str) -> str | None:
    texts = (item_repr(tx, key), item_repr(tx, value))
    return None if None in texts else form.format(*texts)


def sequence_repr(tx: Tx, vt: Any, owner: VT | None = None) -> VT | None:
    """``repr`` of a list or tuple of the builtin's ``__repr__`` (``[...]``/``(...)``
    inside itself, a 1-tuple's trailing comma); None for other classes. ``owner``:
    as for :func:`dict_repr`."""
    owner = owner or vt
    cls = owner.python_type()
    if cls.__repr__ is list.__repr__:
        return container_repr(tx, owner, "[...]", lambda: [item_repr(tx, i) for i in vt.items], lambda t: f"[{t}]")
    if cls.__repr__ is tuple.__repr__:
        return container_repr(tx, owner, "(...)", lambda: [item_repr(tx, i) for i in vt.items],
                              lambda t: f"({t},)" if len(vt.items) == 1 else f"({t})")
    return None
