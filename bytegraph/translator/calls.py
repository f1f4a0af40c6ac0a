"""Handlers for calls and function creation. A call finds ``[NULL, callable,
*args]`` or ``[method, self, *args]`` below its arguments, or, as CPython 3.13
decodes, ``[callable, NULL, *args]``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from bytegraph.bytecode.instructions import Instruction
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables.builtins import call_builtin
from bytegraph.variables.callables.functions import NestedUserFunctionVariable
from bytegraph.variables.containers.dicts import DictVariable, as_dict
from bytegraph.variables.containers.sequences import TupleVariable
from bytegraph.variables.stack_values import NullVariable
if TYPE_CHECKING:
    from bytegraph.translator.base import InstructionTranslatorBase

VT = VariableTracker


class CallOps:
    def PUSH_NULL(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(NullVariable())

    def PRECALL(self: InstructionTranslatorBase, inst: Instruction) -> None:
        pass

    def KW_NAMES(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.kw_names = inst.argval

    def CALL(self: InstructionTranslatorBase, inst: Instruction) -> None:
        args = self.popn(inst.arg)
        second = self.pop()
        first = self.pop()
        if isinstance(first, NullVariable):
            fn = second
        elif isinstance(second, NullVariable):  # ``[callable, NULL]``: the order of CPython 3.13 on
            fn = first
        else:
            fn = first
            args = [second, *args]
        kwargs: dict[str, VT] = {}
        if self.kw_names:
            names = self.kw_names
            kwargs = dict(zip(names, args[len(args) - len(names):]))
            args = args[: len(args) - len(names)]
            self.kw_names = ()
        self.push(fn.call_function(self, list(args), kwargs))

    def CALL_FUNCTION_EX(self: InstructionTranslatorBase, inst: Instruction) -> None:
        kwargs_vt = self.pop() if inst.arg & 1 else None
        args_vt = self.pop()
        fn = self.pop()
        null = self.pop()
        if isinstance(fn, NullVariable):  # ``[callable, NULL, args]``: the order of CPython 3.13 on
            fn, null = null, fn
        args = args_vt.unpack_var_sequence(self)
        kwargs: dict[str, VT] = {}
        if kwargs_vt is not None:
            kwargs_vt = as_dict(self, kwargs_vt) or call_builtin(self, dict, [kwargs_vt])
            for key, value in kwargs_vt.items.values():
                kwargs[key.as_python_constant()] = value
        if not isinstance(null, NullVariable):
            fn, args = null, [fn, *args]
        self.push(fn.call_function(self, list(args), kwargs))

    def MAKE_FUNCTION(self: InstructionTranslatorBase, inst: Instruction) -> None:
        flags = inst.arg
        code = self.pop().as_python_constant()
        closure = tuple(self.pop().unpack_var_sequence(self)) if flags & 0x08 else None
        annotations = self.pop().unpack_var_sequence(self) if flags & 0x04 else None  # name, value, name, value...
        kwdefaults = self.pop() if flags & 0x02 else None
        defaults = self.pop() if flags & 0x01 else None
        if defaults is not None and not isinstance(defaults, TupleVariable):
            defaults = TupleVariable(defaults.unpack_var_sequence(self))
        fn = NestedUserFunctionVariable(code, self.f_globals, code.co_qualname, defaults, kwdefaults, closure)
        if annotations is not None:
            pairs = zip(annotations[::2], annotations[1::2])
            fn.slots["__annotations__"] = DictVariable({k.as_python_constant(): (k, v) for k, v in pairs})
        self.push(fn)
