"""Graph breaks in the root frame: compile what was traced, run the
unsupported instruction natively, and continue.

Called by the root translator when it reaches an instruction it was told to
break at (see :func:`bytegraph.convert.convert_frame`, which restarts tracing
once it knows where the first unsupported instruction is). The generated code:

1. calls the graph compiled from everything traced so far;
2. rebuilds the stack and the live locals, replays side effects, and re-enters
   ``with`` contexts that were entered during the trace;
3. runs the instruction natively inside a copy of the original body (so the
   frame's exception handlers stay in force), and then either calls a resume
   function with the stack and live locals, or — when resuming is unsafe
   (inside a ``try`` block) — simply runs the rest of the frame natively.

When the break came from inside an inlined callee, the call instruction is
where the frame breaks, and the callee is routed through the runtime so its
own body is compiled as a frame of its own.
"""
from __future__ import annotations

import dataclasses
import types
from typing import TYPE_CHECKING, Any, Callable, Protocol

import torch
from bytecode import BinaryOp, CellVar, FreeVar, Instr, Label

from bytegraph.breaks import Unsupported
from bytegraph.bytecode.analysis import (
    cell_rebound,
    enclosing_handlers,
    live_locals,
    stack_inputs,
    stack_outputs,
)
from bytegraph.bytecode.assemble import max_depth
from bytegraph.bytecode.instructions import Instruction, TERMINATORS
from bytegraph.bytecode.lower import Op, landing, lower, without_null
from bytegraph.bytecode.resume import (
    ResumeSpec,
    STACK_PREFIX,
    copied_from,
    copy_body,
    instruction_at,
    replace_instruction,
    resume_code,
    stack_name,
)
from bytegraph.graph.codegen import PyCodegen
from bytegraph.graph.state_setters import states_at_entry
from bytegraph.guards.source import LocalSource
from bytegraph.translator.native_stretch import find_stretch
from bytegraph.variables.containers.iterator_tools import EnumerateVariable
from bytegraph.variables.stack_values import NullVariable
from bytegraph.variables.tensors.symbolic import FakeItemVariable
from bytegraph.variables.torch_state.base import StateContextVariable

if TYPE_CHECKING:
    from bytegraph.translator.root import InstructionTranslator


class FrameRuntime(Protocol):
    """What generated code calls at run time (provided by the runtime layer)."""

    def resume_function(self, code: types.CodeType, f_globals: dict, depth: int,
                        data_dependent: frozenset[str] = frozenset()) -> Callable[..., Any]:
        """A callable running resume ``code`` through its own cache; its last
        argument is the closure tuple (or None). ``depth``: see :meth:`resume_depth`.
        ``data_dependent`` names the parameters that carry values read from
        tensor data (likely to change every call): they are symbolic from the
        first compile."""

    def resume_depth(self, code: types.CodeType) -> int:
        """How many pieces of one eager frame run before ``code``: 0 for an
        original frame, 1 for the resume function of one, 2 for a resume
        function of that resume function..."""

    def route_callee(self, callee: Any) -> Callable[..., Any]:
        """``callee`` made to run through the runtime (its frame compiled on its own)."""

    def route_calls_of(self, disabled: Any) -> Callable[..., Any]:
        """The function a ``torch.compiler.disable(recursive=False)`` wrapper holds,
        made to run natively with the calls it makes routed (see :meth:`route_callee`)."""


_CALLS = frozenset({"CALL", "CALL_FUNCTION_EX"})
_FORWARD = {
    "POP_JUMP_BACKWARD_IF_TRUE": "POP_JUMP_FORWARD_IF_TRUE",
    "POP_JUMP_BACKWARD_IF_FALSE": "POP_JUMP_FORWARD_IF_FALSE",
    "POP_JUMP_BACKWARD_IF_NONE": "POP_JUMP_FORWARD_IF_NONE",
    "POP_JUMP_BACKWARD_IF_NOT_NONE": "POP_JUMP_FORWARD_IF_NOT_NONE",
}


def can_resume(code: types.CodeType, inst: Instruction) -> bool:
    """Whether the frame may continue in a resume function after ``inst``:
    not inside a ``try`` block. (A loop breaking on each iteration calls its
    resume function once more per iteration: the runtime caps that nesting,
    ``runtime/cache.py:LOOP_RESUME_DEPTH``.)"""
    if stack_inputs(code, inst) is None:
        return False
    return all(kind == "with" for _, kind in enclosing_handlers(code, inst.index))  # not inside try


def _callee_slot(tx: InstructionTranslator, inst: Instruction) -> int | None:
    """Stack index of the callable of a CALL/CALL_FUNCTION_EX (the slot of
    the two below the arguments that is not NULL; a bound method's function
    when neither is)."""
    stack = tx.stack
    first = len(stack) - inst.arg - 2 if inst.opname == "CALL" else len(stack) - 3 - (inst.arg & 1)
    return first + 1 if isinstance(stack[first], NullVariable) else first


def codegen_graph_break(
    tx: InstructionTranslator, inst: Instruction, reason: Unsupported, runtime: FrameRuntime
) -> tuple[list, int]:
    """The instructions (after the prologue) of a frame that breaks at ``inst``,
    and the stack depth they may add to the frame's own.

    Raises:
        Unsupported: when a live value cannot be rebuilt (the caller then runs
            the whole frame natively).
    """
    code = tx.code
    bound = {name for name, vt in tx.symbolic_locals.items() if vt is not None}
    resumable = reason.resume and can_resume(code, inst) and _super_resumable(code, bound)
    stack = list(tx.stack)
    consumed = stack_inputs(code, inst)
    below = len(stack) - (consumed if consumed is not None else len(stack))
    # a callee that broke inside is compiled as a frame of its own, unless it broke
    # because inlining recursed too deep (then it runs natively, recursion and all)
    routable = reason.frame_depth > 0 and reason.gb_type != "inline depth exceeded"
    # a function disabled with recursive=False runs natively, the calls it makes are routed
    shallow = reason.frame_depth == 0 and reason.gb_type == "function disabled for compilers, not its callees"
    route = _callee_slot(tx, inst) if inst.opname in _CALLS and (routable or shallow) else None
    router = runtime.route_calls_of if shallow else runtime.route_callee
    local_names = sorted(live_locals(code, inst.index) & bound) + [n for n in code.co_cellvars if n in bound]
    deleted = [name for name in tx.argument_names if name not in bound]  # by the traced code
    grad_at_break = torch.is_grad_enabled()
    graph_sets_grad = tx.output.sets_grad_mode()

    temps: list[str | None] = []

    def tail(cg: PyCodegen) -> None:
        """Rebuild the stack (into temporaries: which slots are pushed back
        depends on the native stretch, found after the graph is made) and the
        locals, and replay the side effects."""
        if graph_sets_grad:
            cg.set_grad_enabled(tx.initial_grad_mode)
        for state in states_at_entry(tx.output.open_states):  # the graph's plain setters, again
            state.codegen_now(cg)
        temps.clear()
        for i, vt in enumerate(stack):
            if isinstance(vt, NullVariable):
                temps.append(None)
            elif i == route:
                temps.append(cg.store_temp(lambda vt=vt: _routed(cg, vt, router)))
            else:
                temps.append(cg.store_temp(lambda vt=vt: cg.reconstruct(vt)))
        locals_ = [
            (name, cg.store_temp(lambda n=name: cg.reconstruct(tx.symbolic_locals[n])))
            for name in local_names
            if tx.symbolic_locals[name].source != LocalSource(name)
        ]
        tx.codegen_side_effects(cg)
        cg.set_grad_enabled(grad_at_break)  # re-entering contexts (and rebuilding them) switched it
        for name, temp in locals_:
            cg.load_local(temp)
            cg.store_local(name)
        for name in deleted:  # the frame still holds them: code run natively must not see them
            cg.delete_local(name)

    for ctx in reversed(tx.block_stack):  # the graph leaves autocast/inference mode as it found them
        if isinstance(ctx, StateContextVariable):
            ctx.close_for_graph_break(tx)
    codegen = tx.output.compile_subgraph(code, tx.f_globals, tail, tx.compiler, code.co_name)
    last, last_reason, kept = inst, reason, below
    stretch = find_stretch(tx, inst, below, lambda i: can_resume(code, i)) if resumable else None
    if stretch is not None:  # later untraceable instructions run natively in the same piece
        last, last_reason, kept = stretch.last, stretch.reasons[-1], stretch.below
        tx.symbolic_locals = stretch.symbolic_locals  # what the resume function after it receives
        reason.stretch = stretch.reasons
    # the stack the native run starts with; a NULL left to the resume function is pushed by it
    for i, temp in enumerate(temps):
        if temp is None and (i >= kept or not resumable):
            codegen.emit("PUSH_NULL")
        elif temp is not None:
            codegen.load_local(temp)
    codegen.delete_temps()
    entry = _entry_index(tx, inst)
    body = copy_body(code, sorted({entry, inst.index, last.index}))
    out = list(codegen.instructions)
    out += [Instr(name, lineno=inst.lineno) for name in inst.prelude]  # the stack as the native group wants it
    out.append(Instr("JUMP_FORWARD", body.labels[entry], lineno=inst.lineno))
    epilogues: list = []
    if resumable and tx.instructions[last.end - 1].opname not in TERMINATORS:  # the group's last instruction
        # what a break on t.item()/int(t) or x[mask]/nonzero hands to the resume function is read from tensor data
        data_output = last_reason.gb_type in ("data-dependent tensor method", "data-dependent operator") and (
            last_reason.frame_depth == 0
        )
        epilogues = _continue_in_resume_functions(tx, last, body, stack[:kept], runtime, data_output)
    extra = max(max_depth(out), len(stack) + max_depth(epilogues))
    return out + body.items + epilogues, extra


def _entry_index(tx: InstructionTranslator, inst: Instruction) -> int:
    """Where native execution starts: ``inst``, or the ``KW_NAMES``/``PRECALL``
    run just before a ``CALL`` (they set up the call and touch no stack slot)."""
    index = inst.index
    while index > 0 and tx.instructions[index - 1].opname in ("KW_NAMES", "PRECALL"):
        index -= 1
    return index


def _continue_in_resume_functions(
    tx: InstructionTranslator, inst: Instruction, body: Any, below: list, runtime: FrameRuntime, data_output: bool
) -> list:
    """Rewrite ``inst`` in ``body`` so that each path after it jumps to an
    epilogue calling the matching resume function; return the epilogues.
    ``data_output``: what ``inst`` pushes is read from tensor data."""
    code = tx.code
    original = instruction_at(body, inst.index)
    lineno = inst.lineno
    below_nulls = [isinstance(v, NullVariable) for v in below]
    stripped = without_null(original)  # a NULL cannot be passed: the resume function pushes it
    replacement = [original] if stripped is None else [stripped[0]]
    paths: list[tuple[int, bool]] = [(inst.end, False)]
    if inst.target is not None:
        paths.append((inst.target, True))
    labels = [Label() for _ in paths]
    if inst.target is not None:
        name = _FORWARD.get(original.name, original.name)
        replacement = [Instr(name, labels[1], location=original.location)]
    replacement.append(Instr("JUMP_FORWARD", labels[0], lineno=lineno))
    replace_instruction(body, inst.index, replacement)

    bound = {name for name, vt in tx.symbolic_locals.items() if vt is not None}
    fresh = _fresh_stack_values(tx, below)
    out: list = []
    for label, (target, jump) in zip(labels, paths):
        outputs = stack_outputs(code, inst, jump)
        logical = below_nulls + (list(stripped[1]) if stripped is not None else [False] * outputs)
        spec = dataclasses.replace(_resume_spec(*copied_from(code, target), tuple(logical), bound), fresh=fresh,
                                   regions=tuple(tx.output.break_regions))
        data = {name for name in spec.live if isinstance(tx.symbolic_locals[name], FakeItemVariable)}
        data |= {stack_name(i) for i, vt in enumerate(below) if isinstance(vt, FakeItemVariable)}
        if data_output:
            data |= {stack_name(i) for i in range(len(below), len(logical)) if not logical[i]}
        fn = runtime.resume_function(resume_code(spec), tx.f_globals, runtime.resume_depth(code) + 1,
                                     frozenset(data))
        out.append(label)
        if jump:
            out += landing(original.name, lineno)
        out += _call_resume(fn, spec, code, logical.count(False), lineno)
    return out


def _fresh_stack_values(tx: InstructionTranslator, below: list) -> tuple[int, ...]:
    """Indices of the stack values in ``below`` that the code at the break
    builds anew and nothing else holds: ``enumerate`` objects the trace made
    (no source) that no other stack slot or local refers to (the parameters
    that handed a resume function its stack values do not count: only the
    generated prologue reads them)."""
    user_locals = [vt for name, vt in tx.symbolic_locals.items() if not name.startswith(STACK_PREFIX)]
    held = [id(vt) for vt in [*below, *user_locals] if vt is not None]
    return tuple(i for i, vt in enumerate(below) if isinstance(vt, EnumerateVariable)
                 and vt.source is None and held.count(id(vt)) == 1)


def _uses_super(code: types.CodeType) -> bool:
    """Whether zero-argument ``super()`` may run in ``code`` (it reads the
    ``__class__`` cell and the frame's first argument)."""
    return "__class__" in code.co_freevars


def _super_resumable(code: types.CodeType, bound: set[str]) -> bool:
    """Whether a resume function can give zero-argument ``super()`` what the
    frame would: a first argument bound at the break which, when it is a cell,
    is never reassigned (the resume function receives its contents)."""
    if not _uses_super(code):
        return True
    if code.co_argcount == 0 or code.co_varnames[0] not in bound:
        return False  # super() raises (no arguments, arg[0] deleted): only the frame itself raises that
    first = code.co_varnames[0]
    return first not in code.co_cellvars or not cell_rebound(code, first)


def _resume_spec(code: types.CodeType, target: int, stack: tuple[bool, ...], bound: set[str]) -> ResumeSpec:
    """The resume function continuing ``code`` at ``target``. Live locals are
    its parameters; a method using zero-argument ``super()`` keeps its first
    argument first, as ``super()`` reads the frame's first local."""
    live = sorted(live_locals(code, target) & bound)
    if not _uses_super(code):
        return ResumeSpec(code, target, stack, tuple(live))
    first = code.co_varnames[0]
    if first in code.co_cellvars:
        return ResumeSpec(code, target, stack, tuple(live), super_cell=first)
    return ResumeSpec(code, target, stack, (first, *(n for n in live if n != first)))


def _call_resume(fn: Any, spec: ResumeSpec, code: types.CodeType, n_stack: int, lineno: int | None) -> list:
    """Epilogue in ``code`` (the original or one of its resume functions,
    where the original's cells are free variables): ``return fn(*params,
    *stack, closure)``."""
    def at(name: str, *arg: Any) -> Op:
        return Op(name, *arg, lineno=lineno)

    def cell(name: str) -> CellVar | FreeVar:
        return CellVar(name) if name in code.co_cellvars else FreeVar(name)

    ins = [at("BUILD_TUPLE", n_stack), at("LOAD_CONST", fn), at("SWAP", 2), at("PUSH_NULL"), at("SWAP", 3),
           at("SWAP", 2)]
    if spec.super_cell:
        ins.append(at("LOAD_DEREF", cell(spec.super_cell)))
    ins += [at("LOAD_FAST", name) for name in spec.live]
    ins += [at("BUILD_TUPLE", len(spec.params)), at("SWAP", 2), at("BINARY_OP", BinaryOp.ADD)]
    if spec.closure_names:
        for name in spec.closure_names:
            ins.append(at("LOAD_CLOSURE", cell(name)))
        ins.append(at("BUILD_TUPLE", len(spec.closure_names)))
    else:
        ins.append(at("LOAD_CONST", None))
    ins += [at("BUILD_TUPLE", 1), at("BINARY_OP", BinaryOp.ADD), at("CALL_FUNCTION_EX", 0), at("RETURN_VALUE")]
    return lower(ins)


def _routed(cg: PyCodegen, vt: Any, router: Callable[[Any], Any]) -> None:
    cg.load_callable(router)
    cg.reconstruct(vt)
    cg.call(1)
