"""Formatting of values not all known now, as CPython formats them: an f-string
field and ``format(value, spec)`` (``Python/ceval.c``: FORMAT_VALUE, the
conversion first, then ``PyObject_Format``), and ``str.format``
(``Objects/stringlib/unicode_format.h``: each field in order, numbered
automatically or by hand, looked up among the arguments, converted, then
formatted). A user class's Python ``__format__`` is inlined; object's own
formats ``str(value)`` and takes no spec."""
from __future__ import annotations

import _string
from typing import TYPE_CHECKING, Any, Callable, Sequence

from bytegraph.breaks import unimplemented
from bytegraph.variables import tx as protocol
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables.builtins import call_builtin
from bytegraph.variables.constant import ConstantVariable, errors_are_the_programs, raise_traced, raise_traced_from
from bytegraph.variables.objects import builtin_bases
from bytegraph.variables.objects.user_objects import UserDefinedObjectVariable
from bytegraph.variables.operators import tp_name
if TYPE_CHECKING:
    from bytegraph.variables.tx import Tx

VT = VariableTracker
#: a replacement field's conversion letter -> the builtin it applies
CONVERSIONS = {"s": str, "r": repr, "a": ascii}


@protocol.format_value.provide
def format_value(tx: Tx, value: VT, conversion: Callable[[Any], str] | None, spec: str) -> VT:
    if conversion is not None and not value.is_python_constant():
        value, conversion = call_builtin(tx, conversion, [value]), None
    if value.is_python_constant():
        raw = value.as_python_constant()
        with errors_are_the_programs():
            return ConstantVariable(format(conversion(raw) if conversion else raw, spec))
    cls = value.python_type()
    if isinstance(value, UserDefinedObjectVariable):
        method = value.python_method(tx, "__format__")
        if method is not None:
            result = method.call_function(tx, [ConstantVariable(spec)], {})
            if result.is_python_constant() and not isinstance(result.as_python_constant(), str):
                raise_traced(TypeError, f"__format__ must return a str, not {tp_name(type(result.as_python_constant()))}")
            return result
        if builtin_bases.leaves_to_base(value, tx, "__format__") and cls.__format__ is not object.__format__:
            if not spec:  # a number's or a text's format with no spec is str(value)
                return call_builtin(tx, str, [value])
            part = builtin_bases.storage(tx, value)  # ``format(IntSub(5), "03")``: the builtin part's format
            if part.is_python_constant():
                with errors_are_the_programs():
                    return ConstantVariable(format(part.as_python_constant(), spec))
        elif value.special_method(tx, "__format__") is object.__format__:
            return _object_format(tx, value, cls, spec)
    elif cls.__format__ is object.__format__:  # a list, a dict, a set holding objects
        return _object_format(tx, value, cls, spec)
    unimplemented(
        gb_type="str of traced value",
        context=f"format() of {value}",
        explanation="The string form of this value is not known at trace time.",
        hints=("Format only Python constants inside the compiled function.",),
    )


def _object_format(tx: Tx, value: VT, cls: type, spec: str) -> VT:
    """``object.__format__(value, spec)``: ``str(value)``, and a spec is eager's TypeError."""
    if spec:
        raise_traced(TypeError, f"unsupported format string passed to {tp_name(cls)}.__format__")
    return call_builtin(tx, str, [value])


@protocol.format_string.provide
def format_string(tx: Tx, template: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
    try:
        fields = list(_string.formatter_parser(template))
    except ValueError as e:
        raise_traced_from(e)
    if any(name is not None and (list(_string.formatter_field_name_split(name)[1]) or "{" in spec)
           for _, name, spec, _ in fields):
        return None  # ``{0.attr}``, ``{0[key]}``, a nested spec: not modelled here
    parts, automatic, manual = [], 0, False
    for literal, name, spec, letter in fields:
        parts.append(literal)
        if name is None:
            continue
        first = _string.formatter_field_name_split(name)[0]
        if first == "":
            if manual:
                raise_traced(ValueError, "cannot switch from manual field specification to automatic field numbering")
            first, automatic = automatic, automatic + 1
        elif isinstance(first, int):
            if automatic:
                raise_traced(ValueError, "cannot switch from automatic field numbering to manual field specification")
            manual = True
        if isinstance(first, int) and first >= len(args):
            raise_traced(IndexError, f"Replacement index {first} out of range for positional args tuple")
        if not isinstance(first, int) and first not in kwargs:
            raise_traced(KeyError, first)
        if letter is not None and letter not in CONVERSIONS:
            raise_traced(ValueError, f"Unknown conversion specifier {letter}")
        value = args[first] if isinstance(first, int) else kwargs[first]
        text = format_value(tx, value, CONVERSIONS.get(letter), spec)
        parts.append(text.as_python_constant())  # a text made after the graph: a break
    return ConstantVariable("".join(parts))
