"""How far a graph break runs natively: the untraceable stretch.

A graph break runs one instruction natively and continues in a resume
function. When the next untraceable call follows with no graph work in
between (``log.info("%s", json.dumps(cfg))``, a ``print`` after a ``log``
call), that resume function would break at once again, costing a resume
function and a compile per call. So once the graph is compiled, the
translator looks ahead from the break: it steps the instructions after it,
with what the native instruction pushed as :class:`NativeResultVariable`
(readable by nothing), and extends the stretch over each later instruction
of the compiled frame that is itself untraceable: a break raised at depth 0
that may resume, and that does not read a native result unless it is a call
that never puts work in a graph (:data:`CALLEE_BREAKS`: ``print``,
``logging``, a function of a skipped module), so running it natively loses
no graph work. It stops at graph work,
control flow, an inlined call that breaks inside (that callee is compiled as
a frame of its own when the graph breaks at it), or any other break.
The stretch then runs natively as one piece, and one resume function
continues after it.

Looking ahead changes nothing the generated code depends on: the graph and
the code rebuilding the frame's state are made before it, and the stack,
locals and guards are put back after it (side effects the look-ahead traced
are those of instructions that run natively, or are traced again by the
resume function).
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from bytegraph.breaks import Unsupported
from bytegraph.bytecode.analysis import stack_inputs, stack_outputs
from bytegraph.bytecode.instructions import Instruction, TERMINATORS
from bytegraph.translator.base import InstructionTranslatorBase
from bytegraph.variables.stack_values import NativeResultVariable

if TYPE_CHECKING:
    from bytegraph.translator.root import InstructionTranslator

#: instructions the look-ahead steps; anything else (jumps, returns, with/try set-up...) ends it
STEPPED = frozenset({
    "NOP", "LOAD_FAST", "LOAD_CONST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_ATTR", "LOAD_METHOD", "STORE_FAST",
    "STORE_DEREF", "PUSH_NULL", "PRECALL", "KW_NAMES", "CALL", "POP_TOP", "COPY", "SWAP", "BUILD_TUPLE",
    "BUILD_LIST", "BUILD_MAP", "BUILD_CONST_KEY_MAP", "BUILD_STRING", "FORMAT_VALUE", "BINARY_OP",
    "BINARY_SUBSCR", "COMPARE_OP", "UNARY_NOT", "UNARY_NEGATIVE",
})

#: breaks of calls that never put work in a graph whatever their arguments (print, logging,
#: functions of skipped modules): running one natively in the stretch loses no graph work even
#: when its arguments are native results
CALLEE_BREAKS = frozenset({"call to skipped function", "print", "function disabled for compilers",
                           "logging or warning with traced values"})

#: the most instructions one look-ahead steps
LIMIT = 200


@dataclasses.dataclass
class Stretch:
    """The last instruction of the native stretch, the stack slots below what
    it consumes (a prefix of the stack at the break), the frame's locals just
    before it runs, and the breaks it took in after the first one."""

    last: Instruction
    below: int
    symbolic_locals: dict[str, Any]
    reasons: list[Unsupported]


def find_stretch(tx: InstructionTranslator, inst: Instruction, below: int, resumable: Any) -> Stretch | None:
    """The stretch of untraceable instructions starting with ``inst`` (whose
    stack slots below its inputs are the first ``below``), extended as far as
    it can be (see the module docstring); None when it is ``inst`` alone.
    ``resumable(inst)``: whether the frame may continue after ``inst``."""
    if tx.block_stack or stack_inputs(tx.code, inst) is None or stack_outputs(tx.code, inst, False) is None:
        return None
    saved = list(tx.stack), dict(tx.symbolic_locals), tx.ip, tx.kw_names
    found: Stretch | None = None
    with tx.output.look_ahead():
        try:
            found = _extend(tx, inst, below, resumable)
        except Exception:  # noqa: BLE001 - the look-ahead only shortens the stretch; the resume function traces it
            found = None
        finally:
            tx.stack, tx.symbolic_locals, tx.ip, tx.kw_names = saved[0], saved[1], saved[2], saved[3]
    return found


def _extend(tx: InstructionTranslator, inst: Instruction, below: int, resumable: Any) -> Stretch | None:
    original = list(tx.stack)
    operations = tx.output.operations
    found: Stretch | None = None
    _run_natively(tx, inst, len(tx.stack) - stack_inputs(tx.code, inst))
    for _ in range(LIMIT):
        current = tx.instructions[tx.ip]
        if current.opname not in STEPPED or current.target is not None or current.opname in TERMINATORS:
            break
        stack_before, locals_before = list(tx.stack), dict(tx.symbolic_locals)
        try:
            InstructionTranslatorBase.step(tx)
        except Unsupported as e:
            consumed = stack_inputs(tx.code, current)
            if e.frame_depth > 0 or not e.resume or consumed is None or stack_outputs(
                    tx.code, current, False) is None or not resumable(current):
                break
            kept = len(stack_before) - consumed
            if e.gb_type not in CALLEE_BREAKS and any(_holds_native(v) for v in stack_before[kept:]):
                break  # it may have broken only for want of a value the native run makes
            if kept > below or any(a is not b for a, b in zip(stack_before[:kept], original)):
                break  # the stretch would hand on values the trace made inside it
            found = Stretch(current, kept, locals_before, [*(found.reasons if found else []), e])
            tx.stack, tx.symbolic_locals = stack_before, locals_before
            _run_natively(tx, current, kept)
            continue
        if tx.output.operations != operations:
            break  # graph work: the resume function traces it
    return found


def _holds_native(vt: Any) -> bool:
    """Whether ``vt`` is a native result or a container holding one."""
    if isinstance(vt, NativeResultVariable):
        return True
    items = getattr(vt, "items", None)
    if isinstance(items, dict):
        items = [v for pair in items.values() for v in pair]
    return isinstance(items, list) and any(_holds_native(v) for v in items)


def _run_natively(tx: InstructionTranslator, inst: Instruction, kept: int) -> None:
    """Step over ``inst`` (its stack effect known) as the native run does: its
    inputs replaced by what it pushes, values the trace cannot read."""
    del tx.stack[kept:]
    tx.kw_names = ()  # a CALL run natively took its KW_NAMES
    tx.stack.extend(NativeResultVariable() for _ in range(stack_outputs(tx.code, inst, False)))
    tx.ip = inst.end
