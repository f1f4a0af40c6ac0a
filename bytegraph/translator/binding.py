"""Binding a call's arguments to an inlined function's parameters, as CPython does.

A call that does not fit the signature raises CPython's own ``TypeError``
in the traced program (same message, checked in CPython's order: keyword
arguments, then the count of positional ones, then missing positional, then
missing keyword-only ones), so ``try``/``except TypeError`` and
``assertRaises(TypeError, ...)`` around a bad call behave as in eager. An
error no frame catches is the ``uncaught exception`` break, and the native
run raises eager's exception.

Example: ``f(a, b=1)`` called as ``f(1, 2, 3)`` raises ``TypeError("f() takes
from 1 to 2 positional arguments but 3 were given")``.
"""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, NoReturn, Sequence

from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable, raise_traced
from bytegraph.variables.containers.dicts import DictVariable
from bytegraph.variables.containers.sequences import TupleVariable
if TYPE_CHECKING:
    from bytegraph.translator.base import InstructionTranslatorBase

VT = VariableTracker


def bind_arguments(tx: InstructionTranslatorBase, fn: VT, args: Sequence[VT], kwargs: dict[str, VT]) -> dict[str, VT]:
    """The callee's locals after binding ``args``/``kwargs`` to ``fn``'s parameters."""
    code = fn.get_code()
    nargs, nposonly, nkwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    names = code.co_varnames
    positional = names[:nargs]
    kwonly = names[nargs : nargs + nkwonly]
    index = nargs + nkwonly
    varargs = names[index] if code.co_flags & inspect.CO_VARARGS else None
    index += 1 if varargs else 0
    varkw = names[index] if code.co_flags & inspect.CO_VARKEYWORDS else None

    bound: dict[str, VT] = dict(zip(positional, args))
    if varargs is not None:
        bound[varargs] = TupleVariable(list(args[nargs:]))
    extra_kw: dict[str, VT] = {}
    for key, value in kwargs.items():
        if key in positional[nposonly:] or key in kwonly:
            if key in bound:
                _raise(fn, f"got multiple values for argument {key!r}")
            bound[key] = value
        elif varkw is not None:
            extra_kw[key] = value
        else:
            posonly = [name for name in kwargs if name in positional[:nposonly]]
            if posonly:
                _raise(fn, f"got some positional-only arguments passed as keyword arguments: '{', '.join(posonly)}'")
            _raise(fn, f"got an unexpected keyword argument {key!r}")
    if varkw is not None:
        bound[varkw] = DictVariable({k: (ConstantVariable(k), v) for k, v in extra_kw.items()})
    if len(args) > nargs and varargs is None:
        _too_many_positional(tx, fn, len(args), sum(name in bound for name in kwonly))

    missing_pos = [n for n in positional if n not in bound]
    missing_kw = [n for n in kwonly if n not in bound]
    if missing_pos or missing_kw:
        defaults, kwdefaults = fn.get_defaults(tx)
        first_default = nargs - len(defaults)
        required = [name for name in missing_pos if positional.index(name) < first_default]
        if required:
            _missing(fn, "positional", required)
        for name in missing_pos:
            bound[name] = defaults[positional.index(name) - first_default]
        required = [name for name in missing_kw if name not in kwdefaults]
        if required:
            _missing(fn, "keyword-only", required)
        for name in missing_kw:
            bound[name] = kwdefaults[name]
    return bound


def _too_many_positional(tx: InstructionTranslatorBase, fn: VT, given: int, kwonly_given: int) -> NoReturn:
    nargs = fn.get_code().co_argcount
    ndefaults = len(fn.get_defaults(tx)[0])
    takes = f"from {nargs - ndefaults} to {nargs}" if ndefaults else f"{nargs}"
    plural = "s" if ndefaults or nargs != 1 else ""
    also = ""
    if kwonly_given:
        also = (f" positional argument{'s' if given != 1 else ''} (and {kwonly_given} keyword-only "
                f"argument{'s' if kwonly_given != 1 else ''})")
    verb = "was" if given == 1 and not kwonly_given else "were"
    _raise(fn, f"takes {takes} positional argument{plural} but {given}{also} {verb} given")


def _missing(fn: VT, kind: str, names: list[str]) -> NoReturn:
    quoted = [repr(name) for name in names]
    if len(quoted) == 1:
        listed = quoted[0]
    elif len(quoted) == 2:
        listed = f"{quoted[0]} and {quoted[1]}"
    else:
        listed = ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    plural = "s" if len(names) != 1 else ""
    _raise(fn, f"missing {len(names)} required {kind} argument{plural}: {listed}")


def _raise(fn: VT, message: str) -> NoReturn:
    raise_traced(TypeError, f"{fn.get_name()}() {message}")
