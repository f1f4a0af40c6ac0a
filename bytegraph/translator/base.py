"""The symbolic stack machine.

:class:`InstructionTranslatorBase` walks a code object's instructions one at a
time, in the style of a bytecode interpreter (byterun): the frame state is a
plain ``stack`` and ``symbolic_locals`` of VariableTrackers, and each opcode has
one small handler method named after it. Handlers live in mixins grouped by
family (:mod:`.loads`, :mod:`.calls`, :mod:`.stack_ops`, :mod:`.control`).
Python semantics of values (``iter()``, identity, ``isinstance``, object
construction) are methods of the VT kinds that own the values.

Subclasses: :class:`~bytegraph.translator.root.InstructionTranslator` for the
frame being compiled and :class:`~bytegraph.translator.inline.InliningTranslator`
for inlined calls.
"""
from __future__ import annotations

import builtins
import types
from typing import Any

import torch

from bytegraph.config import config
from bytegraph.breaks import (
    BreakSite, Unsupported, UserFrame, is_user_file, raised_in_user_code, true_hints, unimplemented,
)
from bytegraph.bytecode.analysis import catching_indices, enclosing_handlers, except_clauses
from bytegraph.bytecode.instructions import Instruction, decode
from bytegraph.graph.output_graph import OutputGraph
from bytegraph.translator.calls import CallOps
from bytegraph.translator.control import ControlOps
from bytegraph.translator.loads import LoadStoreOps
from bytegraph.translator.match import MatchOps
from bytegraph.translator.stack_ops import StackOps
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.exceptions import TracedException

VT = VariableTracker

#: what a torch operation raises when a graph runs into bad data (an ``except``
#: clause that catches one of these cannot protect graph operations)
GRAPH_ERRORS: tuple[type, ...] = (
    RuntimeError, IndexError, ValueError, TypeError, NotImplementedError, ZeroDivisionError, OverflowError,
    MemoryError, torch.OutOfMemoryError, torch.AcceleratorError, torch.linalg.LinAlgError,
)


class InstructionTranslatorBase(LoadStoreOps, CallOps, StackOps, ControlOps, MatchOps):
    """Symbolic execution of one frame.

    Attributes:
        code: the code object being traced.
        f_globals: its globals.
        symbolic_locals: local variables (including cell contents of this frame).
        stack: the value stack.
        output: the OutputGraph shared by all frames of this trace.
        parent: the calling translator for inlined frames, else None.
        ip: index of the next instruction.
        block_stack: context managers entered and not yet exited (``with``).
    """

    def __init__(
        self,
        code: types.CodeType,
        f_globals: dict,
        symbolic_locals: dict[str, VT],
        output: OutputGraph,
        parent: InstructionTranslatorBase | None,
    ):
        self.code = code
        self.f_globals = f_globals
        builtins_ = f_globals.get("__builtins__", __builtins__)
        self.f_builtins: dict = builtins_ if isinstance(builtins_, dict) else vars(builtins_)
        decoded = decode(code)
        self.decoded = decoded
        self.instructions: tuple[Instruction, ...] = decoded.instructions
        self.catching = catching_indices(code)
        self.symbolic_locals = symbolic_locals
        self.stack: list[VT] = []
        self.output = output
        self.parent = parent
        self.ip = 0
        self.current_instruction: Instruction | None = None
        self.kw_names: tuple[str, ...] = ()
        self.block_stack: list[VT] = []
        self.exc_info: list[VT] = []  # exceptions being handled (PUSH_EXC_INFO / POP_EXCEPT)
        self.caller = parent  # the frame this one returns (or yields) to; a generator's changes
        self.raised_at: dict[int, int] = {}  # id(exception VT) -> index of the instruction that raised it here
        self.done = False
        self.depth = 0 if parent is None else parent.depth + 1
        #: one dict per trace (see ``Tx.stand_in_cells``)
        self.stand_in_cells: dict[int, tuple[Any, VT]] = {} if parent is None else parent.stand_in_cells

    # ---- the loop --------------------------------------------------------------------
    def run(self) -> None:
        """Execute instructions until the frame returns (or a graph break escapes)."""
        while not self.done:
            self.step()

    def step(self) -> None:
        inst = self.instructions[self.ip]
        self.current_instruction = inst
        self.ip += 1
        output = self.output
        output.tick()
        if output.break_regions and not self.depth:  # a break moved back here is judged by this region
            output.region_at[inst.index] = output.break_regions[-1]
        handler = getattr(self, inst.opname, None)
        caller, output.current_tx = output.current_tx, self  # graph nodes made now come from this line
        try:
            if handler is None:
                unimplemented(
                    gb_type="unsupported bytecode",
                    context=f"opcode {inst.opname}",
                    explanation=f"bytegraph does not model the {inst.opname} instruction.",
                )
            self.dispatch(handler, inst)
        except TracedException as e:
            if e.fresh:  # implicit chaining happens where it is raised, once
                e.exc.chain_context(self.handled_exception())
                e.fresh = False
            self.handle_exception(inst, e)
        except Unsupported as e:
            if not e.user_stack:
                e.user_stack = tuple(self.user_stack())
                e.frame_depth = self.depth
                e.hints = true_hints(e.hints, output.capture_scalar_outputs or config.capture_scalar_outputs,
                                     output.capture_dynamic_output_shape_ops or config.capture_dynamic_output_shape_ops)
            raise
        finally:
            output.current_tx = caller

    def dispatch(self, handler, inst: Instruction) -> None:
        """Run ``handler`` on ``inst``. An exception that user code raised while
        the handler ran it on a real object (a key's ``__hash__``, an
        ``__eq__``, a property's getter) is a graph break at this instruction:
        it runs natively and raises as eager does, instead of failing the trace
        as a bug of bytegraph's."""
        try:
            if inst.index in self.catching:
                self.step_in_try_block(handler, inst)
            else:
                handler(inst)
        except (TracedException, Unsupported, RecursionError):  # (a recursion too deep: the frame's own break)
            raise
        except Exception as e:
            if not raised_in_user_code(e):
                raise
            unimplemented(
                gb_type="user code raised while tracing",
                context=f"{type(e).__name__}: {e}",
                explanation="User code that tracing ran on a real object (a __hash__, __eq__, property or "
                "other special method) raised; the instruction runs natively, so the exception is eager's.",
                hints=("If the code raises on purpose, this is expected.",),
            )

    def step_in_try_block(self, handler, inst: Instruction) -> None:
        """Run an instruction an ``except`` clause of this frame protects.

        Tracing follows the path on which nothing raises; an operation put in
        the graph could still raise when the graph runs (data-dependent errors,
        a custom operator's own checks). Such an operation stays in the graph:
        a graph that raises makes the frame rerun natively from its start
        (``graph/rerun.py``), and there the user's ``except`` clause runs as in
        eager. What the rerun needs from the trace is that inputs the graph
        writes can be put back first, so an operation an enclosing ``except``
        clause could catch (one of :data:`GRAPH_ERRORS`; clauses like ``except
        KeyError`` or a library's own error class cannot) marks the graph
        (``OutputGraph.raises_into_handler``): it then copies the inputs it writes
        before it runs. (``finally`` clauses and ``with`` cleanups do not
        catch: the rerun runs them too.)
        """
        before = self.output.operations
        handler(inst)
        added = self.output.operations - before
        if added and not self.output.raises_into_handler and self._may_catch_graph_errors(inst.index) \
                and self.output.last_operations_may_raise(added):
            self.output.raises_into_handler = True

    def _may_catch_graph_errors(self, index: int) -> bool:
        """Whether an ``except`` clause protecting ``index`` could catch an error
        raised by a torch operation (one of :data:`GRAPH_ERRORS`); clauses whose
        classes cannot be read statically count as catching."""
        for handler, kind in enclosing_handlers(self.code, index):
            if kind != "except":
                continue
            clauses = except_clauses(self.code, handler)
            if clauses is None:
                return True
            for expression in clauses:
                caught = self._static_value(expression)
                caught = caught if isinstance(caught, tuple) else (caught,)
                if not all(isinstance(c, type) for c in caught) or any(
                        issubclass(error, c) for c in caught for error in GRAPH_ERRORS):
                    return True
        return False

    def _static_value(self, expression: tuple[Instruction, ...]) -> Any:
        """The value of a short expression of globals, attributes and tuples,
        or None when it reads anything else."""
        stack: list[Any] = []
        for inst in expression:
            if inst.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                name = inst.argval
                if name in self.f_globals:
                    stack.append(self.f_globals[name])
                elif hasattr(builtins, name):
                    stack.append(getattr(builtins, name))
                else:
                    return None
            elif inst.opname == "LOAD_ATTR" and stack:
                stack.append(getattr(stack.pop(), inst.argval, None))
            elif inst.opname == "BUILD_TUPLE" and len(stack) >= inst.arg:
                items = tuple(stack[len(stack) - inst.arg:])
                del stack[len(stack) - inst.arg:]
                stack.append(items)
            else:
                return None
        return stack[-1] if len(stack) == 1 else None

    def break_index(self) -> int | None:
        """The instruction this frame breaks at when tracing cannot go on now:
        the current one, or, while handling an exception this frame raised, the
        instruction that raised it, so the exception is raised natively and the
        handler runs under the real exception state (``sys.exc_info()``, bare
        ``raise``), which generated code cannot recreate mid-handler."""
        if self.exc_info and id(self.exc_info[0]) in self.raised_at:
            index = self.raised_at[id(self.exc_info[0])]
        elif self.current_instruction is not None:
            index = self.current_instruction.index
        else:
            return None
        return self.instructions[index].start  # a group of instructions runs natively as a whole

    def handled_exception(self) -> VT | None:
        """The exception being handled here (``sys.exception()``): the innermost
        one of this frame, else of its callers, as CPython's exception-state
        chain (a generator's frame links to whoever resumed it)."""
        tx: InstructionTranslatorBase | None = self
        while tx is not None:
            if tx.exc_info:
                return tx.exc_info[-1]
            tx = tx.caller
        return None

    def break_site(self, resume: bool = True) -> BreakSite:
        """Where the compiled frame would break to redo natively what this
        frame is doing now (see :meth:`break_index`)."""
        return BreakSite(self.root().break_index(), self.depth, tuple(self.user_stack()), resume)

    # ---- stack helpers -------------------------------------------------------------
    def push(self, value: VT) -> None:
        self.stack.append(value)

    def pop(self) -> VT:
        return self.stack.pop()

    def popn(self, n: int) -> list[VT]:
        if n == 0:
            return []
        values = self.stack[-n:]
        del self.stack[-n:]
        return values

    def peek(self, depth: int = 1) -> VT:
        return self.stack[-depth]

    def jump(self, inst: Instruction) -> None:
        self.ip = inst.target  # type: ignore[assignment]

    def handle_exception(self, inst: Instruction, exc: TracedException) -> None:
        """Jump to this frame's handler for an exception raised at ``inst``, as
        CPython's exception table says; re-raise to the caller frame when none."""
        if exc.exc.raise_site is None:
            exc.exc.raise_site = self.break_site()
        exc.exc.raised()
        entry = self.decoded.handler_for(inst.index)
        if entry is None:
            exc.user_stack = exc.user_stack or tuple(self.user_stack())
            raise exc
        self.raised_at.setdefault(id(exc.exc), inst.index)
        del self.stack[entry.depth:]
        if entry.lasti:
            self.push(ConstantVariable(inst.offset))
        self.push(exc.exc)
        self.ip = entry.target

    # ---- diagnostics ------------------------------------------------------------------
    def frame_summary(self) -> UserFrame:
        lineno = self.current_instruction.lineno if self.current_instruction else self.code.co_firstlineno
        return UserFrame(self.code.co_filename, lineno, self.code.co_name, self.code)

    def user_frames(self) -> list[InstructionTranslatorBase]:
        """Translators of user frames from this one out to the root (bytegraph's
        own frames, such as an OptimizedModule's entry frame, are left out)."""
        frames = []
        tx: InstructionTranslatorBase | None = self
        while tx is not None:
            if is_user_file(tx.code.co_filename):
                frames.append(tx)
            tx = tx.parent
        return frames

    def user_stack(self) -> list[UserFrame]:
        """User frames from the root frame to this one."""
        return [tx.frame_summary() for tx in reversed(self.user_frames())]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.code.co_name} ip={self.ip}>"

    def root(self) -> InstructionTranslatorBase:
        tx = self
        while tx.parent is not None:
            tx = tx.parent
        return tx

    def frame_cell_name(self, cell: object) -> str | None:
        """The free-variable name under which the compiled frame holds ``cell``, if it does."""
        return self.root().cell_names.get(id(cell))

    # ---- frame-kind specific (root frame vs inlined frame) -----------------------------------
    def load_freevar(self, name: str) -> VT:
        raise NotImplementedError(type(self).__name__)

    def store_freevar(self, name: str, value: VT) -> None:
        raise NotImplementedError(type(self).__name__)

    def do_return(self, value: VT) -> None:
        raise NotImplementedError(type(self).__name__)

    def yield_value(self, value: VT) -> None:
        raise NotImplementedError(type(self).__name__)

    def inline_call(self, fn: VT, args: list[VT], kwargs: dict[str, VT]) -> VT:
        """Trace a call of a Python function by running its bytecode in a child frame."""
        raise NotImplementedError(type(self).__name__)

    def inline_class_body(self, body: VT) -> tuple[dict[str, VT], VT]:
        """Run a class statement's body in a child frame: its namespace and what it returned."""
        raise NotImplementedError(type(self).__name__)
