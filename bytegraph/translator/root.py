"""The root translator: the frame being compiled.

Its locals start as the frame's arguments, wrapped with :class:`LocalSource`
(guards installed); its free variables are read from the function's closure
cells (:class:`ClosureSource`). When it returns, the graph is compiled and the
transformed frame's instructions are generated: call the graph, rebuild the
return value, replay side effects, return.
"""
from __future__ import annotations

import types
from typing import Any

import torch

from bytegraph.breaks import Unsupported, unimplemented, user_error
from bytegraph.bytecode.assemble import max_depth
from bytegraph.bytecode.resume import RESUME_ORIGIN
from bytegraph.graph.backend_compile import Backend
from bytegraph.graph.codegen import PyCodegen
from bytegraph.graph.output_graph import OutputGraph
from bytegraph.graph.side_effects import SideEffects
from bytegraph.graph.state_setters import states_at_entry
from bytegraph.guards.guards import GlobalStateMatch
from bytegraph.guards.source import ClosureSource, LocalSource
from bytegraph.translator.base import InstructionTranslatorBase
from bytegraph.translator.graph_break import FrameRuntime, codegen_graph_break
from bytegraph.translator.inline import InliningTranslator, inline_call, inline_class_body
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.builder import wrap
from bytegraph.variables.callables.functions import CellVariable
from bytegraph.variables.exceptions import TracedException
from bytegraph.variables.stack_values import UnreadArgument
from bytegraph.variables.tensors.tensor import TensorVariable
from bytegraph.variables.torch_state.autocast import autocast_state

VT = VariableTracker


class InstructionTranslator(InstructionTranslatorBase):
    """Translator of the frame being compiled.

    Args:
        code: the frame's code object.
        f_globals: the function's globals.
        f_locals: the bound arguments, by parameter name.
        closure: the function's closure cells (None without free variables).
        output: the OutputGraph to fill.
        compiler: the backend, ``compiler(gm, example_inputs) -> callable``.
        break_points: instruction indices where the frame must break (known
            from an earlier attempt), with the reason.
        runtime: what the generated code calls at run time (resume functions...).
    """

    def __init__(
        self,
        code: types.CodeType,
        f_globals: dict,
        f_locals: dict[str, Any],
        closure: tuple | None,
        output: OutputGraph,
        compiler: Backend,
        break_points: dict[int, Unsupported],
        runtime: FrameRuntime,
    ):
        super().__init__(code, f_globals, {}, output, None)
        self.closure = closure
        self.cell_names = {id(cell): name for cell, name in zip(closure or (), code.co_freevars)}
        self.compiler = compiler
        self.break_points = break_points
        self.runtime = runtime
        self.loaded_freevars: dict[str, VT] = {}  # what each free variable's cell held when first read
        self.initial_grad_mode = torch.is_grad_enabled()
        self.instructions_out: list | None = None
        self.extra_stack = 0  # stack depth the generated code adds to the frame's own
        self.generators: list[InliningTranslator] = []  # frames of the generators created in this trace
        output.guards.add(GlobalStateMatch(None, torch.is_grad_enabled, self.initial_grad_mode, "grad mode"))
        output.guards.add(
            GlobalStateMatch(None, torch.get_default_dtype, torch.get_default_dtype(), "default dtype")
        )
        output.guards.add(
            GlobalStateMatch(None, torch._C._len_torch_function_stack, torch._C._len_torch_function_stack(),
                             "torch function mode stack depth")
        )
        output.guards.add(GlobalStateMatch(None, autocast_state, autocast_state(), "autocast state"))
        output.guards.add(GlobalStateMatch(None, torch._C._functorch.peek_interpreter_stack, None,
                                           "torch.func transform (vmap, grad...) active"))
        self.argument_names = tuple(f_locals)  # the locals the frame starts with
        for name, value in f_locals.items():
            if type(value) in UnreadArgument.KINDS and name not in code.co_cellvars:
                self.symbolic_locals[name] = UnreadArgument(value, LocalSource(name))
            else:
                self.symbolic_locals[name] = wrap(self, value, LocalSource(name))

    # ---- the loop ----------------------------------------------------------------------------
    def step(self) -> None:
        reason = self.break_points.get(self.ip)
        if reason is None:
            try:
                super().step()
            except TracedException as e:  # nobody in the trace catches it: let eager raise it
                try:
                    unimplemented(
                        gb_type="uncaught exception",
                        context=f"{e.exc.describe()} raised and not caught in the compiled region",
                        explanation="The traced code raises an exception it does not catch; the instruction "
                        "runs natively so the exception is the eager one.",
                        hints=("If this is an error path, it is expected.",),
                    )
                except Unsupported as brk:  # reported where it was raised, not where it left the frame
                    site = e.exc.raise_site
                    brk.user_stack = site.user_stack if site.user_stack else e.user_stack or tuple(self.user_stack())
                    brk.root_index = site.root_index  # raise it natively where it was raised
                    raise brk from None
            return
        inst = self.instructions[self.ip]
        self.current_instruction = inst
        for guard in reason.guards:
            self.output.guards.add(guard)
        self.check_suspended_generators()
        try:
            self.instructions_out, self.extra_stack = codegen_graph_break(self, inst, reason, self.runtime)
        except Unsupported as e:
            e.user_stack = e.user_stack or tuple(self.user_stack())
            raise
        self.done = True

    # ---- free variables ------------------------------------------------------------------
    def load_freevar(self, name: str) -> VT:
        if name in self.symbolic_locals:
            return self.symbolic_locals[name]
        cell = self.closure[self.code.co_freevars.index(name)]
        try:
            contents = cell.cell_contents
        except ValueError:
            user_error(
                "NameError",
                context=f"free variable {name!r} referenced before assignment",
                hint="Assign the variable before calling the function.",
            )
        value = wrap(self, contents, ClosureSource(name))
        self.symbolic_locals[name] = value
        self.loaded_freevars[name] = value
        return value

    def store_freevar(self, name: str, value: VT) -> None:
        self.symbolic_locals[name] = value

    def written_freevars(self) -> list[str]:
        """The free variables whose cells the trace wrote: by ``STORE_DEREF`` in
        this frame, or by ``nonlocal`` in a function made in the trace, which
        holds the cell as a :class:`CellVariable` over ``symbolic_locals``."""
        return [n for n in self.code.co_freevars
                if n in self.symbolic_locals and self.symbolic_locals[n] is not self.loaded_freevars.get(n)]

    def freevar_cell(self, name: str) -> VT:
        self.load_freevar(name)
        return CellVariable(self.symbolic_locals, name, self.code)

    inline_call = inline_call  # the module function itself: one Python frame less per nested call
    inline_class_body = inline_class_body

    def yield_value(self, value: VT) -> None:
        unimplemented(
            gb_type="generator frame",
            context=f"compiling generator function {self.code.co_qualname}",
            explanation="A generator function cannot be compiled as a frame of its own.",
            hints=("Compile the function that consumes the generator instead.",),
        )

    # ---- output ------------------------------------------------------------------------------
    def check_suspended_generators(self) -> None:
        """Called where the graph ends (return or graph break).

        A generator of the trace that is still suspended where closing it runs
        code (inside its ``try``/``with``) is either dropped, and eager closes
        it when it is collected, at a moment the trace cannot know (it does not
        track references), or still referenced, and a traced generator cannot
        be rebuilt after the graph. Either way the trace would be wrong, so:

        Raises:
            Unsupported: "suspended generator", breaking the graph at the
                instruction that created the generator (or called the function
                that did), so that it is a real Python generator at run time
                (see :func:`~.inline.generator_birth`).
        """
        for frame in self.generators:
            if frame.has_pending_cleanup():
                try:
                    unimplemented(
                        gb_type="suspended generator",
                        context=f"generator {frame.code.co_qualname} left suspended inside try/with",
                        explanation="Closing it would run its finally/with cleanup when it is collected, which "
                        "the trace cannot time; the generator is created natively instead.",
                        hints=("Exhaust or close() the generator inside the compiled function.",),
                    )
                except Unsupported as e:
                    frame.birth.relocate(e)
                    raise

    def do_return(self, value: VT) -> None:
        self.check_suspended_generators()
        final_grad_mode = torch.is_grad_enabled()
        graph_sets_grad = self.output.sets_grad_mode()

        # a lone input tensor returned goes through the graph even when the graph computes nothing, so a
        # compiled function returning a tensor hands the backend one graph (torch.compile's convention);
        # resume functions return theirs directly
        through_graph = type(value) is TensorVariable and value.node.op == "placeholder" and (
            self.code not in RESUME_ORIGIN and type(self.output.input_for(value.node).value) in (torch.Tensor,
                                                                                                 torch.nn.Parameter))

        def tail(codegen: PyCodegen) -> None:
            ret = codegen.store_temp(lambda: codegen.load_graph_output(value.node) if through_graph
                                     else codegen.reconstruct(value), "ret")
            self.codegen_side_effects(codegen)
            if graph_sets_grad or final_grad_mode != self.initial_grad_mode:
                codegen.set_grad_enabled(final_grad_mode)
            for state in states_at_entry(self.output.open_states):
                state.codegen_now(codegen)
            codegen.load_local(ret)
            codegen.emit("RETURN_VALUE")

        codegen = self.output.compile_subgraph(self.code, self.f_globals, tail, self.compiler, self.code.co_name)
        self.instructions_out = codegen.instructions
        self.extra_stack = max_depth(codegen.instructions)
        self.done = True

    def codegen_side_effects(self, codegen: PyCodegen) -> None:
        """Replay mutations and closure writes after the graph."""
        cells = [
            (name, codegen.store_temp(lambda n=name: codegen.reconstruct(self.symbolic_locals[n])))
            for name in self.written_freevars()
        ]
        plan = self.output.side_effects.codegen_values(codegen)
        SideEffects.codegen_apply(codegen, plan)
        for name, temp in cells:
            codegen.load_local(temp)
            codegen.store_local(name)
        # the frame's own cells put in closures that outlive the graph get their traced contents
        # (until no new cell is closed over: a cell's contents may be a closure over another)
        written: set[str] = set()
        while pending := [n for n in codegen.closed_over if n in self.code.co_cellvars and n not in written]:
            for name in pending:
                written.add(name)
                if self.symbolic_locals.get(name) is not None:
                    codegen.reconstruct(self.symbolic_locals[name])
                    codegen.store_local(name)

