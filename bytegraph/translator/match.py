"""Handlers for structural pattern matching (``match``/``case``, PEP 634).

CPython 3.11 compiles a ``case`` into these instructions (``Python/ceval.c``):

- ``MATCH_SEQUENCE`` / ``MATCH_MAPPING``: push whether the subject's type has
  the ``Py_TPFLAGS_SEQUENCE`` / ``Py_TPFLAGS_MAPPING`` flag (``list``, ``tuple``,
  ``range``, ``deque`` and classes registered as ``collections.abc.Sequence``;
  ``dict`` and registered mappings; ``str``/``bytes`` are not sequences here);
- ``GET_LEN``: push ``len(subject)``, keeping the subject;
- ``MATCH_KEYS``: with the subject and a tuple of keys on the stack, push the
  tuple of the subject's values for those keys, or None when one is missing;
- ``MATCH_CLASS(count)``: pop the subject, the class and the tuple of keyword
  names; push the tuple of attributes a class pattern binds (``count``
  positional ones named by ``__match_args__``, or the subject itself for one
  positional sub-pattern of ``bool``, ``int``, ``str``...), or None when the
  subject is no instance of the class or lacks one of them.

Each decision is made at trace time from the subject's type and attributes
(guarded like any ``isinstance``/``hasattr``), so the chosen ``case`` is the
one eager takes.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from bytegraph.breaks import unimplemented
from bytegraph.bytecode.instructions import Instruction
from bytegraph.variables.callables.builtins import call_builtin
from bytegraph.variables.constant import ConstantVariable, raise_traced
from bytegraph.variables.containers.dicts import DictVariable, LazyDictVariable
from bytegraph.variables.containers.sequences import TupleVariable
if TYPE_CHECKING:
    from bytegraph.translator.base import InstructionTranslatorBase

_TPFLAGS_SEQUENCE = 1 << 5
_TPFLAGS_MAPPING = 1 << 6

#: classes whose single positional sub-pattern matches the subject itself (``case int(n)``)
_SELF_MATCHING = (bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple)


class MatchOps:
    """Pattern-matching opcodes (mixed into the translator)."""

    def MATCH_SEQUENCE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(ConstantVariable(bool(self.stack[-1].python_type().__flags__ & _TPFLAGS_SEQUENCE)))

    def MATCH_MAPPING(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(ConstantVariable(bool(self.stack[-1].python_type().__flags__ & _TPFLAGS_MAPPING)))

    def GET_LEN(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(call_builtin(self, len, [self.stack[-1]]))

    def MATCH_KEYS(self: InstructionTranslatorBase, inst: Instruction) -> None:
        subject, keys = self.stack[-2], self.stack[-1]
        if not isinstance(subject, (DictVariable, LazyDictVariable)):
            unimplemented(
                gb_type="unsupported mapping pattern",
                context=f"mapping pattern on {subject}",
                explanation="A mapping pattern reads the subject through its get(), which bytegraph models for "
                "dicts only.",
                hints=("Match a dict, or convert the subject with dict() first.",),
            )
        values = []
        for key in keys.unpack_var_sequence(self):
            if not call_builtin(self, operator.contains, [subject, key]).as_python_constant():
                self.push(ConstantVariable(None))
                return
            values.append(call_builtin(self, operator.getitem, [subject, key]))
        self.push(TupleVariable(values))

    def MATCH_CLASS(self: InstructionTranslatorBase, inst: Instruction) -> None:
        subject, cls_vt, names_vt = self.popn(3)
        cls = cls_vt.as_python_constant()
        if not isinstance(cls, type):
            raise_traced(TypeError, "called match pattern must be a class")
        if not subject.isinstance_of(self, cls):
            self.push(ConstantVariable(None))
            return
        count = inst.arg
        keywords = list(names_vt.as_python_constant())
        if count and cls in _SELF_MATCHING and count == 1:
            values = [subject]
            names = keywords
        else:
            match_args = getattr(cls, "__match_args__", ())
            if count > len(match_args):
                raise_traced(TypeError, f"{cls.__name__}() accepts {len(match_args)} positional sub-pattern"
                                        f"{'' if len(match_args) == 1 else 's'} ({count} given)")
            values = []
            names = list(match_args[:count]) + keywords
        for name in names:
            if not subject.has_attr(self, name):
                self.push(ConstantVariable(None))
                return
            values.append(subject.var_getattr(self, name))
        self.push(TupleVariable(values))
