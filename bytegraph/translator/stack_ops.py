"""Handlers for stack manipulation, operators, subscripts and container building."""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from bytegraph.breaks import unimplemented, user_error
from bytegraph.bytecode.instructions import Instruction
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables.builtins import call_builtin
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.containers.dict_entries import USABLE, EntryTable
from bytegraph.variables.containers.dicts import DictVariable, as_dict
from bytegraph.variables.containers.sequences import ListVariable, SliceVariable, TupleVariable
from bytegraph.variables.containers.sets import SetVariable
from bytegraph.variables.tx import format_value
if TYPE_CHECKING:
    from bytegraph.translator.base import InstructionTranslatorBase

VT = VariableTracker

#: BINARY_OP oparg -> operator function (the order of CPython's NB_* constants).
BINARY_OPS = (
    operator.add, operator.and_, operator.floordiv, operator.lshift, operator.matmul,
    operator.mul, operator.mod, operator.or_, operator.pow, operator.rshift, operator.sub,
    operator.truediv, operator.xor,
    operator.iadd, operator.iand, operator.ifloordiv, operator.ilshift, operator.imatmul,
    operator.imul, operator.imod, operator.ior, operator.ipow, operator.irshift, operator.isub,
    operator.itruediv, operator.ixor,
)

COMPARE_OPS = {
    "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
    ">": operator.gt, ">=": operator.ge,
}


class StackOps:
    # ---- plain stack ---------------------------------------------------------------------
    def NOP(self: InstructionTranslatorBase, inst: Instruction) -> None:
        pass

    RESUME = NOP
    EXTENDED_ARG = NOP

    def POP_TOP(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.pop()

    def COPY(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(self.peek(inst.arg))

    def SWAP(self: InstructionTranslatorBase, inst: Instruction) -> None:
        i = inst.arg
        self.stack[-1], self.stack[-i] = self.stack[-i], self.stack[-1]

    # ---- operators ------------------------------------------------------------------------
    def BINARY_OP(self: InstructionTranslatorBase, inst: Instruction) -> None:
        right = self.pop()
        left = self.pop()
        self.push(call_builtin(self, BINARY_OPS[inst.arg], [left, right]))

    def _unary(self: InstructionTranslatorBase, fn) -> None:
        self.push(call_builtin(self, fn, [self.pop()]))

    def UNARY_NEGATIVE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self._unary(operator.neg)

    def UNARY_POSITIVE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self._unary(operator.pos)

    def UNARY_INVERT(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self._unary(operator.invert)

    def UNARY_NOT(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(ConstantVariable(not self.pop().truthy(self)))

    def COMPARE_OP(self: InstructionTranslatorBase, inst: Instruction) -> None:
        right = self.pop()
        left = self.pop()
        self.push(call_builtin(self, COMPARE_OPS[inst.argval], [left, right]))

    def IS_OP(self: InstructionTranslatorBase, inst: Instruction) -> None:
        right = self.pop()
        left = self.pop()
        self.push(call_builtin(self, operator.is_not if inst.arg else operator.is_, [left, right]))

    def CONTAINS_OP(self: InstructionTranslatorBase, inst: Instruction) -> None:
        container = self.pop()
        item = self.pop()
        result = call_builtin(self, operator.contains, [container, item])
        if inst.arg:
            result = ConstantVariable(not result.truthy(self))
        self.push(result)

    # ---- subscripts -------------------------------------------------------------------------
    def BINARY_SUBSCR(self: InstructionTranslatorBase, inst: Instruction) -> None:
        index = self.pop()
        container = self.pop()
        self.push(call_builtin(self, operator.getitem, [container, index]))

    def STORE_SUBSCR(self: InstructionTranslatorBase, inst: Instruction) -> None:
        index = self.pop()
        container = self.pop()
        value = self.pop()
        container.call_method(self, "__setitem__", [index, value], {})

    def DELETE_SUBSCR(self: InstructionTranslatorBase, inst: Instruction) -> None:
        index = self.pop()
        container = self.pop()
        container.call_method(self, "__delitem__", [index], {})

    def BUILD_SLICE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        parts = self.popn(inst.arg)
        if len(parts) == 2:
            parts.append(ConstantVariable(None))
        self.push(SliceVariable(*parts))

    # ---- building containers --------------------------------------------------------------------
    def BUILD_TUPLE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(TupleVariable(self.popn(inst.arg)))

    def BUILD_LIST(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(ListVariable(self.popn(inst.arg)))

    def BUILD_SET(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(SetVariable(self.popn(inst.arg), tx=self))

    def BUILD_MAP(self: InstructionTranslatorBase, inst: Instruction) -> None:
        flat = self.popn(2 * inst.arg)
        self.push(self._new_dict(flat[::2], flat[1::2]))

    def BUILD_CONST_KEY_MAP(self: InstructionTranslatorBase, inst: Instruction) -> None:
        keys = self.pop().as_python_constant()
        values = self.popn(inst.arg)
        self.push(self._new_dict([ConstantVariable(k) for k in keys], values))

    def _new_dict(self: InstructionTranslatorBase, keys: list, values: list) -> DictVariable:
        """A dict display: later equal keys replace the value, not the first key object."""
        result = DictVariable({})
        # CPython fills the empty dict's table, or one presized for the keys: its entries are known
        result.entries = EntryTable(known=True, presized=len(keys) > USABLE)
        for key, value in zip(keys, values):
            result.store(self, key, value)
        return result

    def BUILD_STRING(self: InstructionTranslatorBase, inst: Instruction) -> None:
        parts = self.popn(inst.arg)
        self.push(ConstantVariable("".join(p.as_python_constant() for p in parts)))

    def FORMAT_VALUE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        flags = inst.arg
        spec = self.pop().as_python_constant() if flags & 0x04 else ""
        value = self.pop()
        conversion = {0x01: str, 0x02: repr, 0x03: ascii}.get(flags & 0x03)
        text = format_value(self, value, conversion, spec)
        if not text.is_python_constant():
            unimplemented(
                gb_type="str of traced value",
                context=f"f-string formatting of {value}",
                explanation="The string form of this value is not known at trace time.",
                hints=("Format only Python constants inside the compiled function.",),
            )
        self.push(text)

    def LIST_APPEND(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.pop()
        self.peek(inst.arg).call_method(self, "append", [value], {})

    def SET_ADD(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.pop()
        self.peek(inst.arg).call_method(self, "add", [value], {})

    def MAP_ADD(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.pop()
        key = self.pop()
        self.peek(inst.arg).call_method(self, "__setitem__", [key, value], {})

    def LIST_EXTEND(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.pop()
        self.peek(inst.arg).call_method(self, "extend", [value], {})

    def SET_UPDATE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.pop()
        self.peek(inst.arg).call_method(self, "update", [value], {})

    def DICT_UPDATE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.pop()
        self.peek(inst.arg).call_method(self, "update", [value], {})

    def DICT_MERGE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.pop()
        target = self.peek(inst.arg)
        incoming = as_dict(self, value) or call_builtin(self, dict, [value])
        for key in incoming.items:
            if key in target.items:
                user_error(
                    "TypeError",
                    context=f"duplicate keyword argument {key!r}",
                    hint="Pass each keyword argument once.",
                )
        target.call_method(self, "update", [incoming], {})

    def LIST_TO_TUPLE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(TupleVariable(self.pop().unpack_var_sequence(self)))

    # ---- unpacking ---------------------------------------------------------------------------------
    def UNPACK_SEQUENCE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        items = self.pop().unpack_var_sequence(self)
        if len(items) != inst.arg:
            user_error(
                "ValueError",
                context=f"unpacking {len(items)} values into {inst.arg} names",
                hint="Match the number of names to the number of values.",
            )
        for item in reversed(items):
            self.push(item)

    def UNPACK_EX(self: InstructionTranslatorBase, inst: Instruction) -> None:
        before = inst.arg & 0xFF
        after = inst.arg >> 8
        items = self.pop().unpack_var_sequence(self)
        if len(items) < before + after:
            user_error(
                "ValueError",
                context=f"not enough values to unpack (expected at least {before + after})",
                hint="Match the number of names to the number of values.",
            )
        middle = ListVariable(items[before : len(items) - after])
        values = items[:before] + [middle] + items[len(items) - after :]
        for item in reversed(values):
            self.push(item)
