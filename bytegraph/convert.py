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
import inspect
import time
import types
import warnings
from typing import Any, Callable

import torch
from torch.fx.experimental.symbolic_shapes import ConstraintViolationError
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from bytegraph import collector, imports, logs
from bytegraph.backends.ddp import ddp_aware
from bytegraph.breaks import BackendCompilerFailed, InternalError, Unsupported, UserFrame, unimplemented
from bytegraph.bytecode.assemble import assemble
from bytegraph.bytecode.resume import RESUME_SPEC
from bytegraph.config import config
from bytegraph.graph.backend_compile import Backend, CompiledGraph
from bytegraph.graph.output_graph import DynamicPolicy, NeedsShapeEnv, OutputGraph
from bytegraph.guards.describe import describe_guards
from bytegraph.guards.guard_code import GuardFunction, build_guard_function
from bytegraph.guards.guards import Guard, IdMatch, NoAliasing
from bytegraph.guards.shape_guards import settle_tensor_guards, shape_env_guards
from bytegraph.guards.source import ConvertSource
from bytegraph.guards.tensor_guards import TensorMatch
from bytegraph.recursion import tracing_stack
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
        recompile_limit: this call's own limit of cache entries per frame (None:
            ``config.recompile_limit``; mirrors torch.compile's ``recompile_limit``).
    """

    backend: Backend
    fullgraph: bool = False
    dynamic: bool | None = None
    recompile_limit: int | None = None


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
        import_seconds: the part of it spent importing modules on first use
            (see :mod:`bytegraph.imports`).
    """

    code: types.CodeType
    guard: GuardFunction
    graphs: list[CompiledGraph]
    breaks: list[Unsupported]
    id_guards: list[IdMatch]
    seconds: float
    import_seconds: float


@dataclasses.dataclass
class RunNatively:
    """A frame that will run natively, and why."""

    reason: Unsupported


@collector.paused()  # (see bytegraph/collector.py)
def convert_frame(
    code: types.CodeType,
    f_globals: dict,
    closure: tuple | None,
    f_locals: dict[str, Any],
    signature_fn: Callable | None,
    options: CompileOptions,
    runtime: FrameRuntime,
    policy: DynamicPolicy = DynamicPolicy(),
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
        policy: which inputs to trace symbolically (dynamic shapes).

    Returns:
        :class:`Converted` (split at the first graph break, if any), or
        :class:`RunNatively` when even the break cannot be compiled around.

    Raises:
        Unsupported: on a graph break when ``options.fullgraph`` is set.
        BackendCompilerFailed: when the backend fails and ``config.raise_on_backend_error``
            or ``options.fullgraph`` is set (else the frame runs natively, with a warning).
        InternalError: on a bytegraph bug when ``config.raise_on_internal_error``.
        ConstraintViolationError: when a dim marked with ``mark_dynamic`` was
            specialised by the trace, or an input's size is outside the
            ``min``/``max`` it was marked with (as torch.compile raises).
    """
    if code.co_flags & _SUSPENDING_FLAGS:
        return RunNatively(_frame_break(code, lambda: unimplemented(
            gb_type="generator or coroutine frame",
            context=f"{code.co_qualname} is a generator, coroutine or async generator function",
            explanation="Calling it creates a suspended frame; it runs natively (as torch.compile skips such frames). "
            "Generators called from a compiled function are traced where they are consumed.",
            hints=("Compile the function that consumes the generator.",),
        )))
    start, imports_before = time.perf_counter(), imports.total()
    break_points: dict[int, Unsupported] = {}
    capture = True
    while True:
        try:
            with logs.tracing():
                attempt = _trace(code, f_globals, closure, f_locals, options, break_points, runtime, policy, capture)
        except BackendCompilerFailed as e:
            # (imported here: the module loads much of torch; the backend that raised has loaded it)
            from torch.fx.passes._tensorify_python_scalars import TensorifyScalarRestartAnalysis

            if not policy.static_floats and isinstance(e.__cause__, TensorifyScalarRestartAnalysis):
                # AOTAutograd cannot take a SymFloat input here: trace again with floats specialised
                policy = dataclasses.replace(policy, static_floats=True)
                continue
            if e.data_dependent and capture and not options.fullgraph:
                capture = False  # the backend cannot take a captured value here: a graph break instead
                continue
            return _backend_failed(code, e, options.fullgraph)
        if attempt is None:  # an input must be symbolic: trace again with a ShapeEnv
            policy = dataclasses.replace(policy, shape_env=True)
            continue
        if not isinstance(attempt, Unsupported):
            new_code, output = attempt
            break
        exc = attempt
        if logs.enabled("graph_breaks"):
            logs.get("graph_breaks").info("%s", exc)
        if options.fullgraph if exc.region_raises is None else exc.region_raises:
            raise exc  # fullgraph, or an error_on_graph_break(True) region
        index = exc.root_index
        if index is None or index in break_points:
            return RunNatively(exc)
        break_points[index] = exc  # trace again, breaking the graph at that instruction

    try:
        guards = _frame_guards(output)
        guard = build_guard_function(code, signature_fn, guards)
    except ConstraintViolationError:
        raise
    except Exception as exc:
        return RunNatively(_internal_error(code, exc, "building the guards of"))
    if logs.enabled("guards"):
        logs.get("guards").info("guards of %s:\n%s", code.co_qualname,
                                "\n".join("  " + line for line in describe_guards(guard.guards)))
    return Converted(
        new_code, guard, output.compiled_graphs, list(break_points.values()),
        [g for g in guards if isinstance(g, IdMatch)], time.perf_counter() - start, imports.total() - imports_before,
    )


def _trace(
    code: types.CodeType,
    f_globals: dict,
    closure: tuple | None,
    f_locals: dict[str, Any],
    options: CompileOptions,
    break_points: dict[int, Unsupported],
    runtime: FrameRuntime,
    policy: DynamicPolicy,
    capture: bool = True,
) -> tuple[types.CodeType, OutputGraph] | Unsupported | None:
    """One tracing attempt: the transformed code, the graph break that ended
    it (with ``root_index``: the frame's instruction it happened under), or None
    when a static trace met an input that must be symbolic. ``capture``: the
    capture settings apply (off after a backend failed on a captured value)."""
    grad_mode = torch.is_grad_enabled()
    output = tracer = None
    try:
        # fullgraph captures data-dependent values whatever the settings (as torch.compile): a break would fail
        output = OutputGraph(config.max_trace_instructions, policy,
                             capture and config.capture_scalar_outputs or options.fullgraph,
                             capture and config.capture_dynamic_output_shape_ops or options.fullgraph)
        if code in RESUME_SPEC:  # a resume function starts inside the regions open at its break
            output.break_regions = list(RESUME_SPEC[code].regions)
        tracer = InstructionTranslator(
            code, f_globals, f_locals, closure, output, ddp_aware(options.backend), break_points, runtime
        )
        with tracing_stack() as output.max_inline_depth:
            tracer.run()
        return assemble(code, tracer.instructions_out, tracer.extra_stack), output
    except Unsupported as exc:
        if exc.root_index is None:  # else the break chose where the frame must break
            exc.root_index = tracer.break_index() if tracer is not None else None
        if output is not None and exc.region_raises is None:  # the region it was raised in, else the one of
            # the instruction it moved to (a class statement found escaping at the return)
            exc.region_raises = output.break_regions[-1] if output.break_regions else output.region_at.get(
                exc.root_index)
        return exc
    except NeedsShapeEnv:
        return None
    except (BackendCompilerFailed, ConstraintViolationError):
        raise
    except RecursionError:
        return _frame_break(code, lambda: unimplemented(
            gb_type="recursion limit",
            context="tracing exceeded Python's recursion limit",
            explanation="Deeply recursive user code cannot be traced within Python's stack; the frame runs natively.",
            hints=("Compile a function that does not recurse this deeply.",),
        ))
    except Exception as exc:
        return _internal_error(code, exc, "tracing")
    finally:
        if output is not None:
            output.close_open_states()
        torch._C._set_grad_enabled(grad_mode)


def _frame_guards(output: OutputGraph) -> list[Guard]:
    """The guards of a finished trace: those the trace installed (tensor sizes
    it specialised put back), the ShapeEnv's over every input the trace made,
    including inputs the graph does not read (a dynamic int used only as
    ``L[n]`` was specialised with a guard), and no-aliasing when the graph
    mutates an input tensor, when the trace mutates a Python object it read
    (lists, dicts, objects) and among inputs used as dict keys.

    Raises:
        ConstraintViolationError: when a ``mark_dynamic`` dim was specialised.
    """
    inputs = output.inputs + output.dropped_inputs
    examples = {i.source: i.example for i in inputs}
    guards = settle_tensor_guards(output.shape_env, list(output.guards), examples)
    # wrapper-subclass inputs (DTensor) are traced with static sizes, guarded exactly by TensorMatch
    shaped = [i for i in inputs if not is_traceable_wrapper_subclass(i.example)]
    guards += shape_env_guards(output.shape_env, [i.example for i in shaped], [i.source for i in shaped],
                               [i.symbolic_context for i in shaped])
    # an input converted for the graph (torch.from_numpy(a)) is a new object per call: compare the originals
    tensor_inputs = tuple(g.source.base if isinstance(g.source, ConvertSource) else g.source
                          for g in guards if isinstance(g, TensorMatch))
    if len(tensor_inputs) > 1 and output.mutates_inputs():
        guards.append(NoAliasing(None, tensor_inputs))
    for distinct in (output.side_effects.aliasing_sources(), list(output.identity_key_sources)):
        if len(distinct) > 1:
            guards.append(NoAliasing(None, tuple(distinct)))
    return guards


def _internal_error(code: types.CodeType, exc: Exception, doing: str) -> Unsupported:
    """The whole-frame break for a bytegraph bug ``exc`` met while ``doing``
    the frame (the frame runs natively).

    Raises:
        InternalError: instead, when ``config.raise_on_internal_error`` is set.
    """
    if config.raise_on_internal_error:
        raise InternalError(f"bytegraph failed {doing} {code.co_qualname}: {type(exc).__name__}: {exc}") from exc
    logs.get("graph_breaks").warning(
        "bytegraph internal error while %s %s (%s: %s); running it natively",
        doing, code.co_qualname, type(exc).__name__, exc,
    )
    what = f"{type(exc).__name__}: {exc}"
    return _frame_break(code, lambda: unimplemented(
        gb_type="internal error",
        context=what,
        explanation="bytegraph hit a bug while tracing this frame; it runs natively instead.",
        hints=("Please report this with the code that triggers it.",),
    ))


_SUSPENDING_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | (
    inspect.CO_ITERABLE_COROUTINE)


def _backend_failed(code: types.CodeType, failure: BackendCompilerFailed, fullgraph: bool) -> RunNatively:
    """The frame runs natively because the backend failed on one of its graphs.

    A backend failing on a graph of code eager runs (AOTAutograd refusing a
    graph whose saved tensor is written in place, for one) is not the user's
    error: the frame runs natively, so its results and mutations are eager's,
    and one warning (the frame is not compiled again) gives the reason and the
    graph.

    Raises:
        BackendCompilerFailed: instead, when ``config.raise_on_backend_error``
            or ``fullgraph`` is set.
    """
    if config.raise_on_backend_error or fullgraph:
        raise failure
    warnings.warn(f"bytegraph: {failure}; running {code.co_qualname} natively. The graph:\n{failure.graph}",
                  stacklevel=2)
    return RunNatively(_frame_break(code, lambda: unimplemented(
        gb_type="backend compiler failed",
        context=str(failure),
        explanation="The backend raised while compiling a graph of this frame; the frame runs natively "
        "(set bytegraph.config.raise_on_backend_error to raise instead).",
        hints=("Try another backend, or report the failure to the backend with the graph in the warning.",),
    )))


def _frame_break(code: types.CodeType, raise_break: Callable[[], None]) -> Unsupported:
    """The graph break ``raise_break`` raises, for the whole frame (it will run natively)."""
    try:
        raise_break()
    except Unsupported as report:
        report.user_stack = (UserFrame(code.co_filename, code.co_firstlineno, code.co_name, code),)
        report.root_index = None
        return report
    raise AssertionError("raise_break did not raise")
