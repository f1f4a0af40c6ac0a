"""Graph breaks: the one exception type and the one function that raises it.

Every place where tracing cannot continue calls :func:`unimplemented` with a
stable ``gb_type`` (a short name, listed in ``docs/graph_breaks.md``), the
``context`` (what exactly was met, e.g. ``"call to print"``), an
``explanation`` and ``hints`` the user can act on. The translator attaches the
user's stack (file:line of user code, innermost last) before the exception
leaves it.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import linecache
import os
import sysconfig
import types
from typing import NoReturn, Sequence

#: bytegraph's own source directory: frames of its files are not user frames
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def is_user_file(filename: str) -> bool:
    """Whether code from ``filename`` is the user's (not bytegraph's own)."""
    return not filename.startswith(PACKAGE_DIR)


#: torch's and the standard library's code (not the user's), and the standard library's
#: site-packages, where the user's packages may be
_TORCH_DIR = os.path.dirname(importlib.util.find_spec("torch").origin) + os.sep
_STDLIB_DIR = sysconfig.get_paths()["stdlib"] + os.sep
_STDLIB_SITE = os.path.join(_STDLIB_DIR, "site-packages") + os.sep


def raised_in_user_code(exc: BaseException) -> bool:
    """Whether ``exc`` was raised in the user's code that bytegraph called (a
    ``__hash__`` or property run on a real object while tracing): below the
    last of bytegraph's frames in its traceback there is a frame of code that
    is neither bytegraph's, torch's nor the standard library's."""
    files = []
    tb = exc.__traceback__
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    own = [i for i, f in enumerate(files) if f.startswith(PACKAGE_DIR)]
    return any(_is_user_code(f) for f in files[own[-1] + 1 if own else 0:])


def _is_user_code(filename: str) -> bool:
    if filename.startswith((PACKAGE_DIR, _TORCH_DIR, "<frozen")):
        return False
    return not filename.startswith(_STDLIB_DIR) or filename.startswith(_STDLIB_SITE)


@dataclasses.dataclass(frozen=True)
class UserFrame:
    """One frame of user code: ``filename:lineno in name``, shown as a Python
    traceback shows it (with the source line when the file can be read).
    ``code`` is the code object running there (a resume function's own code
    for a frame resumed after a graph break); the compile report groups
    lines by it. It takes no part in equality."""

    filename: str
    lineno: int | None
    name: str
    code: types.CodeType | None = dataclasses.field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        where = f'File "{self.filename}", line {self.lineno}, in {self.name}'
        source = linecache.getline(self.filename, self.lineno).strip() if self.lineno else ""
        return f"{where}\n      {source}" if source else where


# Hints shared by many graph breaks.
HINT_REWRITE = "Move this code out of the compiled function, or rewrite it with torch operations."
HINT_FILE_ISSUE = "If you think bytegraph should trace this, file an issue with this message."
HINT_DATA_DEPENDENT = (
    "Turn bytegraph.config.capture_scalar_outputs on (the default) to trace tensor-to-Python scalar conversions, "
    "or keep the value as a tensor (e.g. torch.where instead of an if)."
)
HINT_DYNAMIC_OUTPUT_SHAPE = (
    "Turn bytegraph.config.capture_dynamic_output_shape_ops on (the default) to keep operators whose output size "
    "depends on tensor data (nonzero, masked_select, x[mask]) in the graph, or use a form whose output keeps "
    "the input's shape (torch.where, x[mask] = value)."
)
#: what the two hints above say when the setting they would turn on is on already
_CAPTURE_ON_HINTS = {
    HINT_DATA_DEPENDENT: (
        "Keep the value as a tensor (e.g. torch.where instead of an if, a tensor instead of a Python number), "
        "or move the code that needs it as a Python value out of the compiled function "
        "(capture_scalar_outputs is on: a captured value is unknown until the graph runs)."
    ),
    HINT_DYNAMIC_OUTPUT_SHAPE: (
        "Use a form whose output keeps the input's shape (torch.where, x[mask] = value), or move the code out of "
        "the compiled function (capture_dynamic_output_shape_ops is on)."
    ),
}


def true_hints(hints: Sequence[str], capture_scalars: bool, capture_dynamic_shapes: bool) -> tuple[str, ...]:
    """``hints`` as they hold for a trace with these capture settings: a hint
    to turn a setting on that is on says what is left to do instead."""
    on = {HINT_DATA_DEPENDENT: capture_scalars, HINT_DYNAMIC_OUTPUT_SHAPE: capture_dynamic_shapes}
    return tuple(_CAPTURE_ON_HINTS[h] if on.get(h) else h for h in hints)


HINT_DYNAMIC_CONTROL_FLOW = (
    "Use torch.where / torch.cond instead of a Python branch on a tensor value, "
    "or move the branch out of the compiled region."
)


class Unsupported(Exception):
    """A graph break: tracing met something it will not put in a graph.

    Attributes:
        gb_type: stable short name of the kind of break (see docs/graph_breaks.md).
        context: what exactly was met (e.g. ``"call to builtin print"``).
        explanation: why it cannot be traced.
        hints: actions the user can take.
        user_stack: user frames, outermost first; the last is where the break
            happened. Empty until the translator attaches it.
    """

    def __init__(self, gb_type: str, context: str, explanation: str, hints: Sequence[str]):
        super().__init__(gb_type)
        self.gb_type = gb_type
        self.context = context
        self.explanation = explanation
        self.hints = tuple(hints)
        self.user_stack: tuple[UserFrame, ...] = ()
        self.frame_depth = 0  # inlining depth of the frame that raised it (0: the compiled frame)
        self.root_index: int | None = None  # instruction of the compiled frame it happened under
        # False: after the break the rest of the frame runs natively in the same frame, never in a
        # resume function (whose arguments would keep the values made at the break alive longer)
        self.resume = True
        # the later untraceable instructions of the compiled frame run natively with this one
        # (one resume function after them all: translator/native_stretch.py)
        self.stretch: list[Unsupported] = []
        # the flag of the innermost error_on_graph_break region the break happened in (None: in none);
        # it decides, instead of fullgraph, whether the break raises (convert.py)
        self.region_raises: bool | None = None
        # guards of the entry that breaks here: the state that made the trace break (a cache miss that
        # runs natively), so that a later call finding it changed converts the frame again
        self.guards: tuple = ()

    @property
    def location(self) -> str:
        """``file:line`` of the innermost user frame, or ``"<unknown>"``."""
        if not self.user_stack:
            return "<unknown>"
        frame = self.user_stack[-1]
        return f"{frame.filename}:{frame.lineno}"

    @property
    def reason(self) -> str:
        """One line: gb_type, context and location."""
        return f"{self.gb_type}: {self.context} ({self.location})"

    def __str__(self) -> str:
        lines = [f"Graph break [{self.gb_type}]: {self.context}", f"  Explanation: {self.explanation}"]
        lines += [f"  Hint: {hint}" for hint in self.hints]
        if self.user_stack:
            lines.append("  User code (most recent call last):")
            lines += [f"    {frame}" for frame in self.user_stack]
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class BreakSite:
    """A place to move a graph break to: ``root_index``, an instruction of the
    compiled frame (None: unknown); ``frame_depth``, 0 when the value at stake
    is made by that instruction itself, else inside the callee it calls; the
    user stack there; and whether the frame may continue in a resume function
    after it (see :attr:`Unsupported.resume`)."""

    root_index: int | None
    frame_depth: int
    user_stack: tuple[UserFrame, ...]
    resume: bool = True

    def relocate(self, brk: Unsupported) -> None:
        """Make the graph break ``brk`` happen here."""
        brk.root_index, brk.frame_depth, brk.user_stack, brk.resume = (
            self.root_index, self.frame_depth, self.user_stack, self.resume)


def unimplemented(
    *, gb_type: str, context: str, explanation: str, hints: Sequence[str] = (HINT_FILE_ISSUE,)
) -> NoReturn:
    """Raise :class:`Unsupported`: the single way a graph break starts.

    Args:
        gb_type: stable name of the break kind; must be a string literal at the
            call site so ``docs/graph_breaks.md`` can be generated from the code.
        context: what was met, with concrete names/values.
        explanation: why it cannot be traced.
        hints: what the user can do about it.

    Raises:
        Unsupported: always.
    """
    raise Unsupported(gb_type, context, explanation, hints)



def user_error(raises: str, *, context: str, hint: str) -> NoReturn:
    """A graph break (gb_type ``"user error"``) for code whose eager run raises:
    the frame runs natively, so the user gets eager's own exception.

    Args:
        raises: the exception eager raises, by name (``"TypeError"``).
        context: what was met, with concrete names/values.
        hint: what the user can do about it.

    Raises:
        Unsupported: always.
    """
    unimplemented(
        gb_type="user error",
        context=context,
        explanation=f"The traced code raises {raises}; it runs natively so the error is the eager one.",
        hints=(hint,),
    )


class InternalError(Exception):
    """A bug in bytegraph itself (not a limitation). Frames that hit it run natively
    unless ``config.raise_on_internal_error`` is set."""


class BackendCompilerFailed(RuntimeError):
    """The backend raised while compiling a captured graph (mirrors
    torch.compile's ``BackendCompilerFailed``); the original error is chained.
    Raised to the user only with ``config.raise_on_backend_error``; otherwise the
    frame runs natively with a warning.

    Attributes:
        graph: the graph the backend was given, as a table (``format_graph``).
        data_dependent: the graph held captured data-dependent values or sizes
            (unbacked symbols); the frame is then traced again without
            capturing them (a graph break) rather than run natively.
    """

    def __init__(self, message: str, graph: str = "", data_dependent: bool = False):
        super().__init__(message)
        self.graph = graph
        self.data_dependent = data_dependent


class GraphRaised(BaseException):
    """A compiled graph raised at run time; ``__cause__`` is its exception.

    Raised by the graph call of a frame whose graph writes no input (see
    :func:`bytegraph.graph.rerun.rerun_natively_on_error`) after it put
    grad mode and the RNG back as they were before the call; the frame's cache
    then runs the frame natively, which does what eager does before the
    exception (side effects, state changes) and raises eager's exception.
    A BaseException so that no ``except Exception`` on the way swallows it."""


class GraphBreakRegion:
    """What :func:`error_on_graph_break` returns: a ``with`` block of it in
    compiled code decides for the code inside whether a graph break raises
    :class:`Unsupported` (``True``) or splits the graph (``False``), in place
    of ``fullgraph`` (torch.compile's ``error_on_graph_break``). Run natively,
    entering and leaving it do nothing: the trace reads the region, and the
    code generated after a graph break inside it hands this object to the
    resume function, whose trace starts inside the region."""

    __slots__ = ("raises",)

    def __init__(self, raises: bool):
        self.raises = raises

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None

    def __repr__(self) -> str:
        return f"error_on_graph_break({self.raises})"


def error_on_graph_break(error_on_graph_break: bool) -> GraphBreakRegion:
    """A region of compiled code where graph breaks raise (``True``) or are
    allowed (``False``) whatever ``fullgraph`` says: ``with
    bytegraph.error_on_graph_break(False): ...`` inside a ``fullgraph=True``
    function lets the code in the block break the graph (the frame splits
    there), and ``True`` inside a function compiled without ``fullgraph``
    makes a break in the block raise. The innermost region decides.
    torch's own ``error_on_graph_break`` (recognised by ``compat.py``) met in
    compiled code is traced as this.

    Raises:
        TypeError: when the flag is not a bool.
    """
    if not isinstance(error_on_graph_break, bool):
        raise TypeError(f"error_on_graph_break() takes a bool, got {type(error_on_graph_break).__name__}")
    return GraphBreakRegion(error_on_graph_break)

