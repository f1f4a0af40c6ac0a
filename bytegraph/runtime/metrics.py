"""What happened while compiling: graphs, graph breaks, recompiles, trace time.

Events are recorded per frame (code object) in :data:`FRAMES`, which the
``bytegraph run`` report reads, and also delivered to every active
:class:`Recorder` (``bytegraph.explain`` opens one around a call).
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import inspect
import types
from typing import Any, Callable, Iterator

from bytegraph.breaks import Unsupported, UserFrame
from bytegraph.graph.backend_compile import CompiledGraph
from bytegraph.guards.guards import Guard


@dataclasses.dataclass
class BreakRecord:
    """One graph break: its kind, the reason in words, and the user stack;
    ``context``, ``explanation`` and ``hints`` as :class:`Unsupported` has them."""

    gb_type: str
    reason: str
    user_stack: tuple[UserFrame, ...]
    message: str
    in_callee: bool = False  # met inside an inlined callee (which may then compile as a frame of its own)
    context: str = ""
    explanation: str = ""
    hints: tuple[str, ...] = ()

    @staticmethod
    def of(exc: Unsupported) -> "BreakRecord":
        return BreakRecord(exc.gb_type, exc.reason, exc.user_stack, str(exc), exc.frame_depth > 0,
                           exc.context, exc.explanation, exc.hints)

    def key(self) -> tuple:
        """What identifies the break: its kind and the user line it happened at."""
        where = self.user_stack[-1] if self.user_stack else None
        return (self.gb_type, where)


def distinct_breaks(stats: list["FrameStats"]) -> list[tuple["FrameStats", BreakRecord]]:
    """Every graph break once: a break met inside an inlined callee is recorded
    by the calling frame and again by the callee when it compiles as a frame of
    its own; the caller's record is left out then."""
    kept = {id(b) for b in distinct([b for s in stats for b in s.breaks])}
    return [(s, b) for s in stats for b in s.breaks if id(b) in kept]


def distinct(breaks: list[BreakRecord]) -> list[BreakRecord]:
    """``breaks`` without the callers' records of breaks that their callees
    recorded again as frames of their own (see :func:`distinct_breaks`)."""
    own = {b.key() for b in breaks if not b.in_callee}
    return [b for b in breaks if not (b.in_callee and b.key() in own)]


@dataclasses.dataclass
class CompileRecord:
    """One conversion of a frame: one cache entry.

    Attributes:
        code_ref: a weak reference to the transformed code object (the
            original with graph calls in): it lives as long as its cache
            entry, whose code it is (see :attr:`code`).
        kept_code: the same code held strongly, while :func:`retaining` (the
            report of ``bytegraph run`` shows the code of every compile).
        graphs: the graphs compiled for it, in order.
        guards: its guards, in the order the guard function checks them.
        seconds: wall time of the conversion (tracing, guards, backend), in seconds.
        reason: the guard failure that caused this compile, in words
            (``tensor 'x' size mismatch at index 0: expected 3, got 4``);
            None for the first compile.
        guard_code: the generated guard function's source.
        import_seconds: the part of ``seconds`` spent importing modules on
            first use (see :mod:`bytegraph.imports`).
        guard_seconds: one call of the guard function on the arguments it was
            compiled for, in seconds (None when not timed).
    """

    code_ref: Callable[[], types.CodeType | None]
    graphs: list[CompiledGraph]
    guards: list[Guard]
    seconds: float
    reason: str | None = None
    guard_code: str = ""
    import_seconds: float = 0.0
    guard_seconds: float | None = None
    kept_code: types.CodeType | None = None

    def __post_init__(self) -> None:
        if _RETAIN:
            self.kept_code = self.code_ref()

    @property
    def code(self) -> types.CodeType | None:
        """The transformed code, or None once its cache entry was dropped (the
        record does not keep it, unless :func:`retaining`: its constants hold
        resume functions and their caches)."""
        return self.kept_code or self.code_ref()


@dataclasses.dataclass
class FrameStats:
    """Per code object: everything compiled for it so far.

    ``graphs``, ``trace_seconds``, ``import_seconds`` and ``frames_compiled``
    total over ``compiles``; ``recompile_reasons`` also holds the failures that
    met the recompile limit (the frame then ran natively and compiled nothing).
    ``trace_seconds`` includes backend compiles and first-use imports;
    ``import_seconds`` is that import part. ``wraps``: for a compiled
    module's entry frame (bytegraph's own code, named after the module), the
    module's ``forward`` function it calls.
    """

    name: str
    filename: str
    lineno: int
    code: types.CodeType
    graphs: list[CompiledGraph] = dataclasses.field(default_factory=list)
    breaks: list[BreakRecord] = dataclasses.field(default_factory=list)
    recompile_reasons: list[str] = dataclasses.field(default_factory=list)
    compiles: list[CompileRecord] = dataclasses.field(default_factory=list)
    trace_seconds: float = 0.0
    import_seconds: float = 0.0
    frames_compiled: int = 0
    ran_natively: bool = False
    graph_reruns: int = 0
    wraps: Callable[..., Any] | None = None


@dataclasses.dataclass
class Recorder:
    """Events collected while a recorder is active (see :func:`recording`)."""

    compiles: list[CompileRecord] = dataclasses.field(default_factory=list)
    breaks: list[BreakRecord] = dataclasses.field(default_factory=list)
    recompile_reasons: list[str] = dataclasses.field(default_factory=list)
    #: the frame each of ``compiles`` (and each of ``recompile_reasons``) is of
    compiled_frames: list[FrameStats] = dataclasses.field(default_factory=list)
    recompiled_frames: list[FrameStats] = dataclasses.field(default_factory=list)
    #: the frame (qualified name) of each call whose graph raised and that then ran natively
    graph_reruns: list[str] = dataclasses.field(default_factory=list)


#: id(code) -> stats; FrameStats keeps its code object alive, so ids are not reused
#: (records of frames whose caches were freed are bounded: see :func:`forget`).
FRAMES: dict[int, FrameStats] = {}
#: how many records of frames whose caches were freed stay in FRAMES (the latest): a report
#: written after the function that compiled a model returned still shows it, and a process that
#: compiles and drops functions keeps flat memory
KEEP_FREED = 256
#: what the records of freed frames no longer kept held: frames, graphs, breaks, recompiles
FREED: collections.Counter = collections.Counter()
_freed: collections.deque = collections.deque()  # FRAMES keys of the kept records of freed frames, oldest first
_RETAIN = False  # see retaining()
_ACTIVE: list[Recorder] = []


@contextlib.contextmanager
def recording() -> Iterator[Recorder]:
    """Collect compile events that happen inside the ``with`` block."""
    recorder = Recorder()
    _ACTIVE.append(recorder)
    try:
        yield recorder
    finally:
        _ACTIVE.remove(recorder)


def stats_for(code: types.CodeType) -> FrameStats:
    stats = FRAMES.get(id(code))
    if stats is None:
        stats = FrameStats(code.co_qualname, code.co_filename, code.co_firstlineno, code)
        FRAMES[id(code)] = stats
    return stats


def label(code: types.CodeType, name: str, wraps: Callable[..., Any]) -> None:
    """Report ``code``, a frame that calls ``wraps``, under ``name`` and the
    location of ``wraps`` (an OptimizedModule's entry frame, named
    ``Model.__call__``, at the module's ``forward``)."""
    stats = stats_for(code)
    try:
        target = inspect.unwrap(wraps)  # a decorated forward: where the decorated function is
    except ValueError:  # a cycle of __wrapped__
        target = wraps
    where = getattr(target, "__code__", None) or wraps.__code__
    stats.name, stats.filename, stats.lineno, stats.wraps = name, where.co_filename, where.co_firstlineno, wraps


def record_compile(code: types.CodeType, record: CompileRecord) -> None:
    """``code`` was converted into a new cache entry, described by ``record``."""
    stats = stats_for(code)
    stats.compiles.append(record)
    stats.graphs.extend(record.graphs)
    stats.trace_seconds += record.seconds
    stats.import_seconds += record.import_seconds
    stats.frames_compiled += 1
    for recorder in _ACTIVE:
        recorder.compiles.append(record)
        recorder.compiled_frames.append(stats)


def record_break(code: types.CodeType, exc: Unsupported) -> None:
    record = BreakRecord.of(exc)
    stats_for(code).breaks.append(record)
    for recorder in _ACTIVE:
        recorder.breaks.append(record)


def record_recompile(code: types.CodeType, reason: str) -> None:
    stats = stats_for(code)
    stats.recompile_reasons.append(reason)
    for recorder in _ACTIVE:
        recorder.recompile_reasons.append(reason)
        recorder.recompiled_frames.append(stats)


def record_native(code: types.CodeType) -> None:
    stats_for(code).ran_natively = True


def record_graph_rerun(code: types.CodeType) -> None:
    """A call of ``code``'s compiled frame had its graph raise and ran natively."""
    stats_for(code).graph_reruns += 1
    for recorder in _ACTIVE:
        recorder.graph_reruns.append(code.co_qualname)


@contextlib.contextmanager
def retaining() -> Iterator[None]:
    """Keep every record, and the transformed code of every compile, while the
    ``with`` block runs, even of frames whose caches are freed (``bytegraph run``
    reports the whole run, decompiled code included, however many frames it
    compiled)."""
    global _RETAIN
    old, _RETAIN = _RETAIN, True
    try:
        yield
    finally:
        _RETAIN = old


def forget(code_id: int) -> None:
    """The last cache of the code ``code_id`` was freed (its compiled function
    was dropped): its record stays, and beyond the latest :data:`KEEP_FREED`
    such records the oldest goes, counted in :data:`FREED` (not while
    :func:`retaining`). A kept record holds what its guards hold (their
    sources' globals, the objects they check) until it goes."""
    if _RETAIN or code_id not in FRAMES:
        return
    _freed.append(code_id)
    while len(_freed) > KEEP_FREED:
        stats = FRAMES.pop(_freed.popleft(), None)
        if stats is not None:
            FREED.update(frames=1, graphs=len(stats.graphs), breaks=len(stats.breaks),
                         recompiles=len(stats.recompile_reasons))


def revive(code_id: int) -> None:
    """A cache of the code ``code_id`` was made again: its record is no longer a freed frame's."""
    if code_id in _freed:
        _freed.remove(code_id)


def reset() -> None:
    FRAMES.clear()
    FREED.clear()
    _freed.clear()
