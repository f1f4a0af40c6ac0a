"""Handlers for control flow: jumps, loops, ``with`` blocks, return and raise.

Loops over values known at trace time are unrolled: ``FOR_ITER`` asks the
iterator VT for its next item and ``JUMP_BACKWARD`` simply jumps. A jump whose
condition is only known when the graph runs (a tensor) cannot be followed; the
root translator turns it into a graph break (see :mod:`.root`).
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from bytegraph.breaks import unimplemented
from bytegraph.bytecode.instructions import Instruction, TERMINATORS
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.builder import wrap_const
from bytegraph.variables.callables.builtins import call_builtin
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.containers.iterators import GeneratorVariable, IteratorVariable
from bytegraph.variables.exceptions import ExceptionVariable, TracedException
from bytegraph.variables.stack_values import WithExitVariable
if TYPE_CHECKING:
    from bytegraph.translator.base import InstructionTranslatorBase

VT = VariableTracker

#: how far :meth:`ControlOps._only_raises` looks for the raise (building an error message is short)
RAISE_SCAN_LIMIT = 200


class ControlOps:
    # ---- jumps ------------------------------------------------------------------------
    def JUMP_FORWARD(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.jump(inst)

    JUMP_BACKWARD = JUMP_FORWARD
    JUMP_BACKWARD_NO_INTERRUPT = JUMP_FORWARD
    JUMP_ABSOLUTE = JUMP_FORWARD

    def _pop_jump_if(self: InstructionTranslatorBase, inst: Instruction, when: bool) -> None:
        value = self.peek()
        if not value.is_python_constant():
            # ``assert value`` / ``if not value: raise ...``: the branch that only raises is
            # checked when the graph runs; a failure reruns the frame natively (eager's exception)
            failing = "next" if self._only_raises(self.ip) else "target" if self._only_raises(inst.target) else None
            if failing is not None and value.assert_in_graph(self, when if failing == "next" else not when):
                self.pop()
                if failing == "next":
                    self.jump(inst)
                return
        truth = value.truthy(self)
        self.pop()
        if truth == when:
            self.jump(inst)

    def _only_raises(self: InstructionTranslatorBase, index: int) -> bool:
        """Whether the code from ``index`` runs straight (no jump, no return) into a raise."""
        for inst in self.instructions[index:index + RAISE_SCAN_LIMIT]:
            if inst.opname == "RAISE_VARARGS":
                return True
            if inst.target is not None or inst.opname in TERMINATORS:
                return False
        return False

    def POP_JUMP_FORWARD_IF_TRUE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self._pop_jump_if(inst, True)

    def POP_JUMP_FORWARD_IF_FALSE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self._pop_jump_if(inst, False)

    POP_JUMP_BACKWARD_IF_TRUE = POP_JUMP_FORWARD_IF_TRUE
    POP_JUMP_BACKWARD_IF_FALSE = POP_JUMP_FORWARD_IF_FALSE

    def _pop_jump_if_none(self: InstructionTranslatorBase, inst: Instruction, when: bool) -> None:
        value = self.pop()
        is_none = call_builtin(self, operator.is_, [value, ConstantVariable(None)]).as_python_constant()
        if is_none == when:
            self.jump(inst)

    def POP_JUMP_FORWARD_IF_NONE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self._pop_jump_if_none(inst, True)

    def POP_JUMP_FORWARD_IF_NOT_NONE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self._pop_jump_if_none(inst, False)

    POP_JUMP_BACKWARD_IF_NONE = POP_JUMP_FORWARD_IF_NONE
    POP_JUMP_BACKWARD_IF_NOT_NONE = POP_JUMP_FORWARD_IF_NOT_NONE

    def _jump_or_pop(self: InstructionTranslatorBase, inst: Instruction, when: bool) -> None:
        truth = self.peek().truthy(self)
        if truth == when:
            self.jump(inst)
        else:
            self.pop()

    def JUMP_IF_TRUE_OR_POP(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self._jump_or_pop(inst, True)

    def JUMP_IF_FALSE_OR_POP(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self._jump_or_pop(inst, False)

    # ---- loops ------------------------------------------------------------------------------
    def GET_ITER(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(self.pop().get_iter(self))

    def FOR_ITER(self: InstructionTranslatorBase, inst: Instruction) -> None:
        iterator = self.peek()
        if not isinstance(iterator, IteratorVariable):
            unimplemented(
                gb_type="unsupported iteration",
                context=f"for loop over {iterator}",
                explanation="bytegraph unrolls loops only over values whose items are known at trace time.",
            )
        item = iterator.next_item(self)
        if item is None:
            self.pop()
            self.jump(inst)
        else:
            self.push(item)

    # ---- generators -------------------------------------------------------------------------
    def RETURN_GENERATOR(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(ConstantVariable(None))  # popped by the POP_TOP that follows

    def YIELD_VALUE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.yield_value(self.pop())

    def GET_YIELD_FROM_ITER(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.push(self.pop().get_iter(self))

    def SEND(self: InstructionTranslatorBase, inst: Instruction) -> None:
        sent = self.pop()  # None for a consumed generator, else generator.send's value, delegated
        receiver = self.peek()
        if sent.is_python_constant() and sent.as_python_constant() is None:
            item = receiver.next_item(self) if isinstance(receiver, IteratorVariable) else None
        elif isinstance(receiver, GeneratorVariable):
            item = receiver.frame.resume_generator(self, sent=sent)
        else:
            unimplemented(
                gb_type="generator send",
                context=f"yield from {receiver} receiving a value",
                explanation="bytegraph delegates values sent into yield from only to generators of the trace.",
                hints=("Send the value to the inner generator directly.",),
            )
        if item is None:
            self.pop()
            returned = receiver.frame.return_value if isinstance(receiver, GeneratorVariable) else None
            self.push(returned or ConstantVariable(None))
            self.jump(inst)
        else:
            self.push(item)

    # ---- with blocks ---------------------------------------------------------------------------
    def BEFORE_WITH(self: InstructionTranslatorBase, inst: Instruction) -> None:
        ctx = self.pop()
        if not hasattr(ctx, "enter"):
            unimplemented(
                gb_type="unsupported context manager",
                context=f"with {ctx}",
                explanation="bytegraph traces torch's state context managers and ones whose __enter__/__exit__ "
                "are written in Python.",
                hints=("Move the with block out of the compiled function.",),
            )
        self.push(WithExitVariable(ctx))
        self.block_stack.append(ctx)
        self.push(ctx.enter(self))

    # ---- leaving the frame ---------------------------------------------------------------------
    def RETURN_VALUE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.do_return(self.pop())

    # ---- exceptions -------------------------------------------------------------------------
    def RAISE_VARARGS(self: InstructionTranslatorBase, inst: Instruction) -> None:
        """``raise`` (re-raise the exception being handled), ``raise exc`` and
        ``raise exc from cause``; a class is instantiated. The new exception's
        ``__context__`` is set when a translator catches the TracedException
        (:meth:`~.base.InstructionTranslatorBase.step`).

        Raises:
            TracedException: always, when tracing can go on.
            Unsupported: a bare raise with nothing being handled, or raising
                (or chaining from) something that is not an exception: eager
                raises a TypeError/RuntimeError, which the native run reproduces.
        """
        if inst.arg == 0:
            handled = self.handled_exception()
            if handled is None:
                unimplemented(
                    gb_type="raise",
                    context="bare raise with no active exception",
                    explanation="The traced code raises RuntimeError; it runs natively so the error is the eager one.",
                    hints=("Use a bare raise only inside an except block.",),
                )
            raise TracedException(handled, fresh=False)
        cause = self.pop() if inst.arg == 2 else None
        raised = self.as_exception(self.pop())
        if cause is not None:
            is_none = cause.is_python_constant() and cause.as_python_constant() is None
            raised.set_cause(None if is_none else self.as_exception(cause))
        raise TracedException(raised)

    def as_exception(self: InstructionTranslatorBase, value: VT) -> ExceptionVariable:
        """What ``raise value`` raises: ``value`` itself, or an instance of the class ``value``.

        Raises:
            Unsupported: when that is not an exception modelled in the trace.
        """
        if not isinstance(value, ExceptionVariable):
            value = value.call_function(self, [], {})  # ``raise SomeError`` instantiates the class
        if not isinstance(value, ExceptionVariable):
            unimplemented(
                gb_type="raise",
                context=f"raise {value}",
                explanation="bytegraph traces raising exception instances only.",
                hints=("Raise an exception instance or class.",),
            )
        return value

    def PUSH_EXC_INFO(self: InstructionTranslatorBase, inst: Instruction) -> None:
        exc = self.pop()
        self.push(self.exc_info[-1] if self.exc_info else ConstantVariable(None))
        self.push(exc)
        self.exc_info.append(exc)

    def POP_EXCEPT(self: InstructionTranslatorBase, inst: Instruction) -> None:
        self.pop()
        self.exc_info.pop()

    def CHECK_EXC_MATCH(self: InstructionTranslatorBase, inst: Instruction) -> None:
        match = self.pop().as_python_constant()
        self.push(ConstantVariable(issubclass(self.peek().python_type(), match)))

    def RERAISE(self: InstructionTranslatorBase, inst: Instruction) -> None:
        raise TracedException(self.pop(), fresh=False)

    def WITH_EXCEPT_START(self: InstructionTranslatorBase, inst: Instruction) -> None:
        exc = self.peek(1)
        exit_fn = self.peek(4)
        args = [wrap_const(self, exc.python_type()), exc, exc.var_getattr(self, "__traceback__")]
        self.push(exit_fn.call_function(self, args, {}))

    def LOAD_ASSERTION_ERROR(self: InstructionTranslatorBase, inst: Instruction) -> None:
        unimplemented(
            gb_type="assertion failure",
            context="assert statement whose condition is false at trace time",
            explanation="The assertion fails; the frame runs natively so AssertionError is raised as in eager.",
            hints=("Fix the assertion or the inputs.",),
        )
