"""Code objects for graph breaks: the transformed frame and resume functions.

At a graph break on instruction ``I`` of a frame, the transformed code is::

    <prologue>                       MAKE_CELL..., COPY_FREE_VARS, RESUME
    <prefix>                         call the graph, rebuild stack and locals, replay side effects
    JUMP_FORWARD L_I
    <the original body>              unchanged, with label L_I before I
        ... I ...                    runs natively, under the original exception table
        JUMP_FORWARD L_EPILOGUE      (only when continuing in a resume function)
    <epilogue>                       call the resume function with the stack and live locals

Running ``I`` inside a copy of the original body keeps its exception handlers
(``with`` cleanups, ``try`` blocks) in force. When resuming is unsafe (inside a
loop, or inside a ``try``), no epilogue is added and the rest of the frame runs
natively from the copied body.

A resume function (``resume_in_<fn>_at_<line>``, ``<fn>`` the function the
user wrote, however many breaks came before) is the original body again,
entered by a prologue that rebuilds the stack from its arguments and jumps to
the instruction after ``I``. Its parameters are the live locals and the stack
values; the original frame's cells and free variables become its closure, so
closures keep sharing cells. Resume code objects are cached per
(code, instruction, stack layout, live locals), and a break inside a resume
function is described by the original code's instruction (:func:`copied_from`),
so a loop that breaks on every iteration calls one resume function again.
"""
from __future__ import annotations

import dataclasses
import inspect
import linecache
import types
import weakref
from functools import lru_cache
from typing import Sequence

from bytecode import Bytecode, CellVar, FreeVar, Instr, Label, TryBegin

from bytegraph.bytecode.analysis import stack_producers
from bytegraph.bytecode.assemble import to_code
from bytegraph.bytecode.instructions import decode

_PROLOGUE_OPS = frozenset({"MAKE_CELL", "COPY_FREE_VARS", "RESUME"})


@dataclasses.dataclass
class Body:
    """A copy of a code object's instructions, with a label before chosen ones.

    Attributes:
        items: abstract instructions, labels and try markers, prologue removed.
        labels: decoded instruction index -> the Label placed before it.
    """

    items: list
    labels: dict[int, Label]


def copy_body(code: types.CodeType, label_at: Sequence[int], cells_as_free: bool = False) -> Body:
    """The body of ``code`` (no prologue), with a Label before the native
    instruction each decoded instruction index in ``label_at`` (the start of a
    group) begins at. ``cells_as_free`` turns cell variables into free
    variables (for resume functions, whose closure carries the original cells)."""
    decoded = decode(code)
    items = list(Bytecode.from_code(code))
    labels = {i: Label() for i in label_at}
    at_native = {decoded.instructions[i].native: label for i, label in labels.items()}
    out = []
    index = -1
    prologue_length = 0
    for item in items:
        if isinstance(item, TryBegin):
            # from_code leaves depths to be recomputed, which fails for a body entered
            # in the middle of a try region; take them from the original table instead
            item.stack_depth = decoded.native_depths[index + 1]
        if isinstance(item, Instr):
            index += 1
            if index in at_native:
                out.append(at_native[index])
            if item.name in _PROLOGUE_OPS and index == prologue_length:
                prologue_length += 1  # the frame's prologue; a MAKE_CELL later in the body (3.12's
                continue  # inlined comprehension re-making a cell) stays
            if cells_as_free and isinstance(item.arg, CellVar):
                item = Instr(item.name, FreeVar(item.arg.name), location=item.location)
        out.append(item)
    count = sum(1 for x in items if isinstance(x, Instr))
    if count != decoded.native_count:  # pragma: no cover - guards a bytecode/dis mismatch
        raise RuntimeError(f"bytecode and dis disagree on {code.co_name}: {count} instructions")
    return Body(out, labels)


def _position(body: Body, index: int) -> int:
    """Position in ``body.items`` of instruction ``index`` (which has a label)."""
    label = body.labels[index]
    position = next(p for p, item in enumerate(body.items) if item is label) + 1
    while not isinstance(body.items[position], Instr):
        position += 1
    return position


def instruction_at(body: Body, index: int) -> Instr:
    """The copied instruction ``index`` (which has a label in ``body``)."""
    return body.items[_position(body, index)]


def replace_instruction(body: Body, index: int, replacement: Sequence[Instr | Label]) -> None:
    """Replace instruction ``index`` (which has a label in ``body``) by ``replacement``."""
    position = _position(body, index)
    body.items[position : position + 1] = list(replacement)


@dataclasses.dataclass(frozen=True)
class ResumeSpec:
    """What a resume function receives.

    Attributes:
        code: the code object being resumed (the original or a resume function).
        target: index of the first instruction to run.
        stack: the logical stack at ``target``, bottom first; True marks a NULL
            (rebuilt by the prologue), False a value passed as an argument.
        live: live plain locals at ``target``, passed before the stack values.
        super_cell: the frame's first argument when it is a cell (a method whose
            ``self`` a closure captures): its contents are passed first, as
            ``SUPER_ARG``, because zero-argument ``super()`` reads the first
            argument of the frame, and the cell is a free variable in the resume
            function.
        fresh: indices of stack values the code at the break builds for the call
            alone (an ``enumerate`` the trace made, held by no local): nothing
            else can observe them, so the resume function may model them freely
            (see :data:`RESUME_FRESH`). A different set is a different resume
            function, so no call passes a user's object where one is expected.
        regions: the flags of the ``error_on_graph_break`` regions open at the
            break, outermost first: the resume function's trace starts inside them.
    """

    code: types.CodeType
    target: int
    stack: tuple[bool, ...]
    live: tuple[str, ...]
    super_cell: str | None = None
    fresh: tuple[int, ...] = ()
    regions: tuple[bool, ...] = ()

    @property
    def params(self) -> list[str]:
        """Parameters before the stack values."""
        return ([SUPER_ARG] if self.super_cell else []) + list(self.live)

    @property
    def closure_names(self) -> tuple[str, ...]:
        """The resume function's free variables: the frame's cells, then its free variables."""
        return tuple(self.code.co_cellvars) + tuple(self.code.co_freevars)

    @property
    def arg_count(self) -> int:
        return self.stack.count(False) + len(self.params)


#: the prefix of the parameters of a resume function that hold stack values
STACK_PREFIX = "___stack"


def stack_name(index: int) -> str:
    """The parameter of a resume function holding logical stack item ``index``."""
    return f"{STACK_PREFIX}{index}"


#: the parameter of a resume function that stands for a first argument held in a cell
SUPER_ARG = "___super_arg"

#: code objects of resume functions -> the code of the eager frame they continue
RESUME_ORIGIN: "weakref.WeakKeyDictionary[types.CodeType, types.CodeType]" = weakref.WeakKeyDictionary()

#: code objects of resume functions -> the parameters holding their ``ResumeSpec.fresh`` stack values
RESUME_FRESH: "weakref.WeakKeyDictionary[types.CodeType, frozenset[str]]" = weakref.WeakKeyDictionary()

#: code objects of resume functions -> what they were made from
RESUME_SPEC: "weakref.WeakKeyDictionary[types.CodeType, ResumeSpec]" = weakref.WeakKeyDictionary()

#: code objects of resume functions -> (index of the first instruction of the body they copy from
#: ``ResumeSpec.code``, how far that body's instructions moved) (see :func:`copied_from`)
_BODY_AT: "weakref.WeakKeyDictionary[types.CodeType, tuple[int, int]]" = weakref.WeakKeyDictionary()


def copied_from(code: types.CodeType, index: int) -> tuple[types.CodeType, int]:
    """Where decoded instruction ``index`` of ``code`` comes from: the
    original code and the instruction's index there, following a resume
    function to the code its body copies (``(code, index)`` for other code).
    A break at the same instruction of the original, however many resume
    functions deep, so makes the same :class:`ResumeSpec` and reuses its
    resume function (a loop breaking on each iteration calls one resume
    function again, not a new nested one)."""
    while code in _BODY_AT and index >= _BODY_AT[code][0]:
        code, index = RESUME_SPEC[code].code, index - _BODY_AT[code][1]
    return code, index


def _body_at(resumed: types.CodeType, code: types.CodeType) -> tuple[int, int] | None:
    """Where in ``resumed`` the copy of ``code``'s body (its prologue dropped)
    begins, and how far its instructions moved, when both decode alike from
    there; else None."""
    ours, theirs = decode(resumed).instructions, decode(code).instructions
    kept = next((i for i, inst in enumerate(theirs) if inst.opname not in _PROLOGUE_OPS), len(theirs))
    shift = len(ours) - len(theirs)
    start = shift + kept
    if start <= 0 or [i.opname for i in ours[start:]] != [i.opname for i in theirs[kept:]]:
        return None
    return start, shift


@lru_cache(maxsize=1024)
def resume_code(spec: ResumeSpec) -> types.CodeType:
    """The code object of the resume function described by ``spec`` (cached)."""
    code = spec.code
    lineno = decode(code).instructions[spec.target].lineno or code.co_firstlineno
    body = copy_body(code, [spec.target], cells_as_free=True)
    stack_names = [stack_name(i) for i, is_null in enumerate(spec.stack) if not is_null]
    prologue: list = []
    if spec.closure_names:
        prologue.append(Instr("COPY_FREE_VARS", len(spec.closure_names), lineno=lineno))
    prologue.append(Instr("RESUME", 0, lineno=lineno))
    names = iter(stack_names)
    for is_null in spec.stack:
        prologue.append(Instr("PUSH_NULL", lineno=lineno) if is_null else Instr("LOAD_FAST", next(names), lineno=lineno))
    prologue.append(Instr("JUMP_FORWARD", body.labels[spec.target], lineno=lineno))

    bc = Bytecode(prologue + body.items)
    name = f"resume_in_{RESUME_ORIGIN.get(code, code).co_name}_at_{lineno}"
    bc.name = name
    bc.qualname = name
    bc.filename = code.co_filename
    bc.first_lineno = code.co_firstlineno
    bc.argnames = spec.params + stack_names
    bc.argcount = len(bc.argnames)
    bc.posonlyargcount = 0
    bc.kwonlyargcount = 0
    bc.cellvars = []
    bc.freevars = list(spec.closure_names)
    bc.flags = (code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)) | inspect.CO_NEWLOCALS
    resumed = to_code(bc, code.co_stacksize + len(spec.stack))
    RESUME_ORIGIN[resumed] = RESUME_ORIGIN.get(code, code)
    RESUME_FRESH[resumed] = frozenset(stack_name(i) for i in spec.fresh)
    RESUME_SPEC[resumed] = spec
    body_at = _body_at(resumed, code)
    if body_at is not None:
        _BODY_AT[resumed] = body_at
    return resumed


def user_label(code: types.CodeType) -> str:
    """How the user knows ``code``: its qualified name (``Gate.__call__``); a
    resume function by the function it continues and the line it resumes at
    (``Gate.__call__, resumed at line 53``)."""
    spec = RESUME_SPEC.get(code)
    if spec is None:
        return code.co_qualname
    origin = RESUME_ORIGIN.get(code, code)
    return f"{origin.co_qualname}, resumed at line {_line(spec.code, spec.target)}"


def stack_value_names(code: types.CodeType) -> dict[str, str]:
    """For a resume function, each parameter holding a stack value -> the
    expression of the user's code that made the value and its line
    (``block(x) (line 82)``, ``iter(self.blocks) (line 81)``); empty for other code."""
    spec = RESUME_SPEC.get(code)
    if spec is None:
        return {}
    before = stack_value_names(spec.code)  # the values spec.code itself received
    producers = stack_producers(spec.code, spec.target, frozenset(before))
    if producers is not None and len(producers) != len(spec.stack):
        producers = None
    names = {}
    for i, is_null in enumerate(spec.stack):
        if is_null:
            continue
        made_by = producers[i] if producers is not None else None
        if isinstance(made_by, str):
            names[stack_name(i)] = before[made_by]
            continue
        expr = _expression(spec.code, made_by, before) if made_by is not None else None
        line = _line(spec.code, made_by if made_by is not None else spec.target)
        names[stack_name(i)] = f"{expr} (line {line})" if expr else f"stack value {i} at line {line}"
    return names


def _line(code: types.CodeType, index: int) -> int:
    return decode(code).instructions[index].lineno or code.co_firstlineno


def _expression(code: types.CodeType, index: int, before: dict[str, str]) -> str | None:
    """The source text of what instruction ``index`` of ``code`` pushes: a
    name, a call or another one-line expression; ``iter(...)`` for a loop's iterator."""
    inst = decode(code).instructions[index]
    if inst.opname in ("LOAD_FAST", "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_NAME") and isinstance(inst.argval, str):
        return inst.argval
    if inst.opname == "GET_ITER":
        below = stack_producers(code, index, frozenset(before))
        made_by = below[-1] if below else None
        if isinstance(made_by, str):
            return None
        iterable = _expression(code, made_by, before) if made_by is not None else None
        return f"iter({iterable})" if iterable else None
    first, last, start, end = list(code.co_positions())[inst.offset // 2]
    if first is None or first != last or start is None or end is None:
        return None
    text = linecache.getline(code.co_filename, first).encode()[start:end].decode(errors="replace")
    return text if text and len(text) <= 60 else None
