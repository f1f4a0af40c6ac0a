"""Resolving a kind's handlers: ``method_<name>`` (and ``attr_``, ``store_``,
``object_``) methods of a VariableTracker class, chosen by name and bound when
the call's arguments fit their signature; the builtin containers whose C
methods take no keyword arguments a handler's signature would accept."""
from __future__ import annotations

import collections
import functools
import inspect
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from bytegraph.variables.base import VariableTracker
    from bytegraph.variables.tx import Tx

#: builtin containers whose kinds model their C methods with ``method_<name>`` handlers
BUILTIN_CONTAINERS = frozenset({list, tuple, dict, set, frozenset, collections.deque, collections.OrderedDict})


@functools.lru_cache(maxsize=None)
def takes_keywords(cls: type, name: str, keywords: tuple[str, ...]) -> bool:
    """Whether the C method ``cls.name`` takes these keyword arguments (most
    take none: ``[].pop(index=0)`` is eager's TypeError). Without a signature,
    a call on an empty instance tells whether it refuses keywords at all."""
    try:
        params = inspect.signature(getattr(cls, name)).parameters
    except (AttributeError, TypeError, ValueError):
        try:
            getattr(cls(), name)(**dict.fromkeys(keywords))
        except TypeError as e:
            return "takes no keyword arguments" not in str(e)
        except Exception:
            return True
        return True
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return True
    named = {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return set(keywords) <= named


def handler_name(prefix: str, name: str) -> str:
    """The handler of a name inside a kind: ``method_append`` for ``append``,
    ``method_dunder_getitem`` for ``__getitem__``, ``attr__version`` for ``_version``."""
    if name.startswith("__") and name.endswith("__"):
        return f"{prefix}dunder_{name[2:-2]}"
    return prefix + name


def method_handler(vt: VariableTracker, tx: Tx, name: str, args: Sequence[VariableTracker],
                   kwargs: dict[str, VariableTracker], prefix: str = "method_") -> Callable[[], Any] | None:
    """``vt``'s ``method_<name>`` handler (the one way a kind looks up a method
    by name; ``prefix`` another family, as ``object_<name>`` for ``object.<name>(vt, ...)``)
    bound to ``tx`` and the arguments, ready to call; None when the
    kind has none, or the arguments do not fit its signature (eager raises,
    or another rule applies)."""
    fn = getattr(type(vt), handler_name(prefix, name), None)
    if fn is None or not fits(fn, len(args) + 2, tuple(kwargs)):  # (+2: the handler's vt and tx)
        return None
    return lambda: fn(vt, tx, *args, **kwargs)


@functools.lru_cache(maxsize=None)
def fits(fn: Callable, positional: int, keywords: tuple[str, ...]) -> bool:
    """Whether a handler's signature takes ``positional`` arguments and these
    keywords (a call it does not fit is left to the other rules: eager raises,
    or another kind answers). Binding looks only at how many arguments there
    are and at the keywords' names, so the answer is kept per handler and shape."""
    try:
        inspect.signature(fn).bind(*range(positional), **dict.fromkeys(keywords))
    except TypeError:
        return False
    return True


def call_method_handler(vt: VariableTracker, tx: Tx, name: str, args: Sequence[VariableTracker],
                        kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    """``vt.name(*args, **kwargs)`` by its ``method_<name>`` handler, the
    mutation recorded first for a name in ``vt.MUTATORS``; None when
    :func:`method_handler` finds none that fits, or when the builtin
    container's own method takes none of the keywords given."""
    if kwargs and (cls := vt.python_type()) in BUILTIN_CONTAINERS and not takes_keywords(cls, name, tuple(kwargs)):
        return None
    handler = method_handler(vt, tx, name, args, kwargs)
    if handler is None:
        return None
    if name in vt.MUTATORS:
        tx.output.side_effects.mutate(vt)
    return handler()
