"""Handlers for loads and stores: locals, globals, cells, attributes, imports."""
from __future__ import annotations

import builtins
import importlib
from typing import TYPE_CHECKING

from bytegraph.breaks import user_error
from bytegraph.bytecode.instructions import Instruction
from bytegraph.guards.guards import NotShadowed
from bytegraph.guards.source import ConstSource, GlobalSource
from bytegraph.variables.builder import wrap, wrap_const
from bytegraph.variables.callables.functions import CellVariable
from bytegraph.variables.containers.dicts import DictVariable
from bytegraph.variables.objects.class_statements import BuildClassVariable
from bytegraph.variables.objects.library_objects import PythonModuleVariable
from bytegraph.variables.stack_values import ClassNamespaceVariable, NullVariable, UnreadArgument
if TYPE_CHECKING:
    from bytegraph.translator.base import InstructionTranslatorBase
    from bytegraph.variables.base import VariableTracker


class LoadStoreOps:
    # ---- locals ------------------------------------------------------------------------
    def LOAD_FAST(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.read_local(inst.argval)
        if value is None:
            user_error(
                "UnboundLocalError",
                context=f"local variable {inst.argval!r} referenced before assignment",
                hint="Assign the variable on every path before reading it.",
            )
        self.push(value)

    LOAD_FAST_CHECK = LOAD_FAST

    def read_local(self: InstructionTranslatorBase, name: str) -> VariableTracker | None:
        value = self.symbolic_locals.get(name)
        if isinstance(value, UnreadArgument):
            value = self.symbolic_locals[name] = wrap(self, value.value, value.source)
        return value

    def STORE_FAST(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.pop()
        if isinstance(value, NullVariable):  # restoring a variable an inlined comprehension found unbound
            self.symbolic_locals.pop(inst.argval, None)
        else:
            self.symbolic_locals[inst.argval] = value

    def LOAD_FAST_AND_CLEAR(self: InstructionTranslatorBase, inst: Instruction) -> None:
        """Save a local an inlined comprehension (PEP 709) reuses: push its
        value, or NULL when unbound, and unbind it; ``STORE_FAST`` restores it."""
        value = self.read_local(inst.argval)
        self.symbolic_locals.pop(inst.argval, None)
        self.push(NullVariable() if value is None else value)

    def DELETE_FAST(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.LOAD_FAST(inst)
        self.pop()
        del self.symbolic_locals[inst.argval]

    def LOAD_CONST(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(wrap_const(self, inst.argval))

    # ---- globals --------------------------------------------------------------------------
    def LOAD_GLOBAL(self: InstructionTranslatorBase, inst: Instruction) -> None:
        if inst.arg is not None and inst.arg & 1:
            self.push(NullVariable())
        self.push(self.load_global(inst.argval))

    def load_global(self: InstructionTranslatorBase, name: str):
        pending = self.output.side_effects.pending_global(self.f_globals, name)
        if pending is not None:
            return pending
        if name in self.f_globals:
            return wrap(self, self.f_globals[name], GlobalSource(name, self.f_globals))
        if name in self.f_builtins:
            self.output.guards.add(NotShadowed(None, self.f_globals, name))
            return wrap_const(self, self.f_builtins[name])
        user_error(
            "NameError",
            context=f"name {name!r} is not defined",
            hint="Define the global before calling the function.",
        )

    def STORE_GLOBAL(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.output.side_effects.store_global(self.f_globals, inst.argval, self.pop())

    # ---- a class body's namespace (its locals: see inline.inline_class_body) ----------------
    def LOAD_BUILD_CLASS(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(BuildClassVariable())

    def LOAD_NAME(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.symbolic_locals.get(inst.argval)
        self.push(value if value is not None else self.load_global(inst.argval))

    def STORE_NAME(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.symbolic_locals[inst.argval] = self.pop()

    def DELETE_NAME(self: InstructionTranslatorBase, inst: Instruction) -> None:
        if self.symbolic_locals.pop(inst.argval, None) is None:
            user_error("NameError", context=f"name {inst.argval!r} is not defined", hint="Define it before deleting it.")

    def LOAD_CLASSDEREF(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.symbolic_locals.get(inst.argval)
        self.push(value if value is not None else self.load_freevar(inst.argval))

    def LOAD_LOCALS(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(ClassNamespaceVariable(self.symbolic_locals))

    def LOAD_FROM_DICT_OR_DEREF(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.pop().namespace.get(inst.argval)
        self.push(value if value is not None else self.load_freevar(inst.argval))

    def LOAD_FROM_DICT_OR_GLOBALS(self: InstructionTranslatorBase, inst: Instruction) -> None:
        value = self.pop().namespace.get(inst.argval)
        self.push(value if value is not None else self.load_global(inst.argval))

    def SETUP_ANNOTATIONS(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.symbolic_locals.setdefault("__annotations__", DictVariable({}))

    # ---- cells -------------------------------------------------------------------------------
    def MAKE_CELL(self: InstructionTranslatorBase, inst: Instruction) -> None:
        pass  # cell contents of this frame live in symbolic_locals

    def COPY_FREE_VARS(self: InstructionTranslatorBase, inst: Instruction) -> None:
        pass  # free variables are read through load_freevar

    def LOAD_DEREF(self: InstructionTranslatorBase, inst: Instruction) -> None:
        name = inst.argval
        if name in self.code.co_cellvars:
            self.LOAD_FAST(inst)
        else:
            self.push(self.load_freevar(name))

    def STORE_DEREF(self: InstructionTranslatorBase, inst: Instruction) -> None:
        name = inst.argval
        if name in self.code.co_cellvars:
            self.STORE_FAST(inst)
        else:
            self.store_freevar(name, self.pop())

    def LOAD_CLOSURE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        name = inst.argval
        if name in self.code.co_cellvars:
            self.push(CellVariable(self.symbolic_locals, name, self.code))
        else:
            self.push(self.freevar_cell(name))

    # ---- attributes -----------------------------------------------------------------------------
    def LOAD_ATTR(self: InstructionTranslatorBase, inst: Instruction) -> None:
        obj = self.pop()
        self.push(obj.var_getattr(self, inst.argval))

    def LOAD_METHOD(self: InstructionTranslatorBase, inst: Instruction) -> None:
        obj = self.pop()
        self.push(NullVariable())
        self.push(obj.var_getattr(self, inst.argval))

    def STORE_ATTR(self: InstructionTranslatorBase, inst: Instruction) -> None:
        obj = self.pop()
        value = self.pop()
        obj.store_attr(self, inst.argval, value)

    def DELETE_ATTR(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.pop().delete_attr(self, inst.argval)

    # ---- imports ----------------------------------------------------------------------------------
    def IMPORT_NAME(self: InstructionTranslatorBase, inst: Instruction) -> None:
        fromlist = self.pop().as_python_constant()
        level = self.pop().as_python_constant()
        module = builtins.__import__(inst.argval, self.f_globals, None, fromlist, level)
        self.push(PythonModuleVariable(module, ConstSource(module, module.__name__)))

    def IMPORT_FROM(self: InstructionTranslatorBase, inst: Instruction) -> None:
        module_vt = self.peek()
        module = module_vt.as_python_constant()
        if hasattr(module, inst.argval):
            self.push(module_vt.var_getattr(self, inst.argval))
        else:  # a submodule not yet bound as an attribute
            submodule = importlib.import_module(f"{module.__name__}.{inst.argval}")
            self.push(PythonModuleVariable(submodule, ConstSource(submodule, submodule.__name__)))
