"""Convert one frame: trace it and build its cache entry.

:func:`convert_frame` runs the root translator over a function's bytecode with
the call's real arguments, assembles the transformed code object, and generates
the guard function. When tracing meets a graph break, the attempt ends and
tracing starts again, this time stopping at that instruction of the frame to
compile around it (:mod:`bytegraph.translator.graph_break`). With
``fullgraph`` the :class:`~bytegraph.breaks.Unsupported` is raised to the user
instead.
"""
from __future__ import annotations

import dataclasses
import time
import types
from typing import Any, Callable

import torch

from bytegraph import logs
from bytegraph.breaks import BackendCompilerFailed, InternalError, Unsupported, UserFrame, unimplemented
from bytegraph.bytecode.assemble import assemble
from bytegraph.config import config
from bytegraph.graph.output_graph import Backend, CompiledGraph, OutputGraph
from bytegraph.guards.guard_code import GuardFunction, build_guard_function
from bytegraph.guards.guards import Guard, IdMatch, NoAliasing, TensorMatch
from bytegraph.translator.graph_break import FrameRuntime
from bytegraph.translator.root import InstructionTranslator


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """What one ``bytegraph.compile(...)`` call asked for.

    Attributes:
        backend: the compiler function (already looked up).
        fullgraph: raise on the first graph break instead of running natively
            (mirrors torch.compile's ``fullgraph``).
        dynamic: None (automatic), True or False (mirrors torch.compile's ``dynamic``).
    """

    backend: Backend
    fullgraph: bool = False
    dynamic: bool | None = None


@dataclasses.dataclass
class Converted:
    """A traced frame (possibly split by graph breaks).

    Attributes:
        code: the transformed code object.
        guard: its guard function.
        graphs: graphs compiled for this frame (resume functions compile their own).
        breaks: the graph break this frame split at (empty or one).
        id_guards: identity guards, whose objects' deaths invalidate the entry.
        seconds: wall time of the conversion, backend compile included.
    """

    code: types.CodeType
    guard: GuardFunction
    graphs: list[CompiledGraph]
    breaks: list[Unsupported]
    id_guards: list[IdMatch]
    seconds: float


@dataclasses.dataclass
class RunNatively:
    """A frame that will run natively, and why."""

    reason: Unsupported


def convert_frame(
    code: types.CodeType,
    f_globals: dict,
    closure: tuple | None,
    f_locals: dict[str, Any],
    signature_fn: Callable | None,
    options: CompileOptions,
    runtime: FrameRuntime,
) -> Converted | RunNatively:
    """Trace ``code`` with the given arguments.

    Args:
        code: the code object of the frame.
        f_globals / closure: the function's globals and closure cells.
        f_locals: bound arguments by parameter name.
        signature_fn: a function with ``code``'s signature (for the guard's
            parameters and defaults), or None for positional-only frames.
        options: backend and policies.
        runtime: what generated code calls at run time (resume functions...).

    Returns:
        :class:`Converted` (split at the first graph break, if any), or
        :class:`RunNatively` when even the break cannot be compiled around.

    Raises:
        Unsupported: on a graph break when ``options.fullgraph`` is set.
        BackendCompilerFailed: when the backend fails.
        InternalError: on a bytegraph bug when ``config.raise_on_internal_error``.
    """
    start = time.perf_counter()
    break_points: dict[int, Unsupported] = {}
    while True:
        attempt = _trace(code, f_globals, closure, f_locals, options, break_points, runtime)
        if not isinstance(attempt, Unsupported):
            new_code, output = attempt
            break
        exc = attempt
        if logs.enabled("graph_breaks"):
            logs.get("graph_breaks").info("%s", exc)
        if options.fullgraph:
            raise exc
        index = exc.root_index
        if index is None or index in break_points:
            return RunNatively(exc)
        break_points[index] = exc  # trace again, breaking the graph at that instruction

    guards: list[Guard] = list(output.guards)
    tensor_inputs = tuple(g.source for g in guards if isinstance(g, TensorMatch))
    if len(tensor_inputs) > 1 and output.mutates_inputs():
        guards.append(NoAliasing(None, tensor_inputs))
    guard = build_guard_function(code, signature_fn, guards)
    if logs.enabled("guards"):
        logs.get("guards").info("guards of %s:\n%s", code.co_qualname, guard.text)
    return Converted(
        new_code, guard, output.compiled_graphs, list(break_points.values()),
        [g for g in guards if isinstance(g, IdMatch)], time.perf_counter() - start,
    )


def _trace(
    code: types.CodeType,
    f_globals: dict,
    closure: tuple | None,
    f_locals: dict[str, Any],
    options: CompileOptions,
    break_points: dict[int, Unsupported],
    runtime: FrameRuntime,
) -> tuple[types.CodeType, OutputGraph] | Unsupported:
    """One tracing attempt: the transformed code, or the graph break that ended
    it (with ``root_index``: the frame's instruction it happened under)."""
    grad_mode = torch.is_grad_enabled()
    output = OutputGraph(config.max_trace_instructions)
    tracer = None
    try:
        tracer = InstructionTranslator(
            code, f_globals, f_locals, closure, output, options.backend, break_points, runtime
        )
        tracer.run()
        return assemble(code, tracer.instructions_out, tracer.extra_stack), output
    except Unsupported as exc:
        current = tracer.current_instruction if tracer is not None else None
        exc.root_index = current.index if current is not None else None
        return exc
    except BackendCompilerFailed:
        raise
    except Exception as exc:
        if config.raise_on_internal_error:
            raise InternalError(f"bytegraph failed tracing {code.co_qualname}: {type(exc).__name__}: {exc}") from exc
        logs.get("graph_breaks").warning(
            "bytegraph internal error while tracing %s (%s: %s); running it natively",
            code.co_qualname, type(exc).__name__, exc,
        )
        report = _internal_break(code, exc)
        report.root_index = None
        return report
    finally:
        torch._C._set_grad_enabled(grad_mode)


def _internal_break(code: types.CodeType, exc: Exception) -> Unsupported:
    try:
        unimplemented(
            gb_type="internal error",
            context=f"{type(exc).__name__}: {exc}",
            explanation="bytegraph hit a bug while tracing this frame; it runs natively instead.",
            hints=("Please report this with the code that triggers it.",),
        )
    except Unsupported as report:
        report.user_stack = (UserFrame(code.co_filename, code.co_firstlineno, code.co_name),)
        return report
