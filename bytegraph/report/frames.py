"""Compiled frames, graph breaks and recompiles in the user's terms.

bytegraph compiles frames of its own making beside the user's: a compiled
module's entry frame (``Model.__call__``, bytegraph's code, which calls the
module with its hooks), resume functions (``resume_in_forward_at_82``) and
their resume functions. The HTML page, the terminal report and ``explain()``
show them as the user knows them:

- a resume function is named by the function it continues and the line it
  resumes at (``Block.forward, resumed at line 68``);
- a module's entry frame is named by the module's ``forward``, and when that
  ``forward`` compiled as a frame of its own (the entry frame broke on the
  call), the entry frame and its resume functions are folded into it;
- values are named as the user's code names them: a resume function's stack
  values by the expression that made them (``block(x) (line 82)``), the entry
  frame's ``module`` as ``self`` and its ``args[0]`` by the parameter of
  ``forward`` it binds to (:func:`value_names`), in guards and in recompile
  reasons alike (:func:`reword`);
- each graph break is shown once, with the number of compiles that met it
  (:func:`break_summaries`), and each recompile reason once with a count.
"""
from __future__ import annotations

import collections
import dataclasses
import inspect
import re
from typing import Any, Iterable

from bytegraph.breaks import is_user_file
from bytegraph.bytecode.resume import RESUME_ORIGIN, stack_value_names, user_label
from bytegraph.guards.source import GetItemSource, LocalSource, Source, user_name
from bytegraph.runtime.metrics import BreakRecord, FrameStats


@dataclasses.dataclass
class FrameGroup:
    """One compiled frame as the user knows it.

    Attributes:
        label: ``Block.forward`` or ``Block.forward, resumed at line 68``.
        filename / lineno: where the user's function starts.
        main: the frame's statistics.
        folded: generated frames folded into it (a module's entry frame and
            its resume functions), whose compiles precede ``main``'s.
        resume: whether ``main`` is a resume function.
    """

    label: str
    filename: str
    lineno: int
    main: FrameStats
    folded: list[FrameStats]
    resume: bool

    @property
    def members(self) -> list[FrameStats]:
        return [*self.folded, self.main]

    @property
    def ran_natively(self) -> bool:
        return self.main.ran_natively

    def recompile_reasons(self) -> list[tuple[str, int]]:
        """Each reason the frame (or the module entry frame folded into it)
        recompiled for, in words, with how many times it did; a reason the
        entry frame and ``forward`` both recompiled for on the same call
        counts once. The entry frame's resume functions' reasons are left out:
        they recompile with ``forward``, for values it returns."""
        counts: collections.Counter = collections.Counter()
        for stats in self.members:
            if stats is self.main or stats.wraps is not None:
                counts |= collections.Counter(reword(r, value_names(stats)) for r in stats.recompile_reasons)
        return list(counts.items())


def frame_groups(stats: Iterable[FrameStats]) -> list[FrameGroup]:
    """The frames of ``stats`` in the user's terms, in compile order."""
    stats = list(stats)
    by_code = {id(s.code): s for s in stats}
    groups: dict[int, FrameGroup] = {}
    order: list[FrameGroup] = []
    pending: list[tuple[FrameStats, FrameStats]] = []  # (generated frame, its entry frame)
    for s in stats:
        origin = RESUME_ORIGIN.get(s.code, s.code)
        if is_user_file(origin.co_filename):
            group = FrameGroup(_label(s), s.filename, s.lineno, s, [], s.code in RESUME_ORIGIN)
            groups[id(s.code)] = group
            order.append(group)
        else:
            pending.append((s, by_code.get(id(origin), s)))
    for s, entry in pending:
        target = _wrapped_frame(entry, by_code)
        key = id(target.code) if target is not None else id(entry.code)
        group = groups.get(key)
        if group is None:  # the entry frame is the frame: nothing of forward compiled apart
            group = FrameGroup(_label(entry), entry.filename, entry.lineno, entry, [], False)
            groups[key] = group
            order.append(group)
        if s is not group.main:
            group.folded.append(s)
    seen: collections.Counter = collections.Counter()
    for group in order:
        group.folded.sort(key=lambda s: s.code in RESUME_ORIGIN)  # the entry frame before its resume functions
        seen[group.label] += 1
        if seen[group.label] > 1:  # another resume function at the same line (a loop's later iteration)
            group.label = f"{group.label} (#{seen[group.label]})"
    return order


def _wrapped_frame(entry: FrameStats, by_code: dict[int, FrameStats]) -> FrameStats | None:
    """The frame of the ``forward`` a module's entry frame calls, if it compiled."""
    code = getattr(entry.wraps, "__code__", None)
    return by_code.get(id(code)) if code is not None else None


def _label(s: FrameStats) -> str:
    if s.wraps is not None:
        return getattr(_unwrapped(s.wraps), "__qualname__", s.name)
    if s.code in RESUME_ORIGIN:
        return user_label(s.code)
    return s.name


def value_names(stats: FrameStats) -> dict[Source, str]:
    """Sources of ``stats``' guards named as the user's code names them: a
    resume function's stack values by the expression that made them; in a
    module's entry frame (``entry(module, *args, **kwargs)``), the module as
    ``self``, ``args[i]`` and ``kwargs[k]`` by the parameters of ``forward``
    they bind to."""
    names: dict[Source, str] = {LocalSource(p): words for p, words in stack_value_names(stats.code).items()}
    if stats.wraps is None:
        return names
    entry = stats.code
    module, args, kwargs = entry.co_varnames[0], entry.co_varnames[1], entry.co_varnames[2]
    forward = getattr(_unwrapped(stats.wraps), "__code__", None)
    params = forward.co_varnames[1:forward.co_argcount] if forward is not None else ()
    names.update({LocalSource(module): "self", LocalSource(args): "*args", LocalSource(kwargs): "**kwargs"})
    names.update({GetItemSource(LocalSource(args), i): param for i, param in enumerate(params)})
    for compile_ in stats.compiles:
        for guard in compile_.guards:
            for source in _path(guard.source):
                if isinstance(source, GetItemSource) and source.base_source == LocalSource(kwargs) and isinstance(
                        source.key, str) and source.key.isidentifier():
                    names[source] = source.key
    return names


def _unwrapped(fn: Any) -> Any:
    """``fn`` without its decorators (``functools.wraps``'s ``__wrapped__`` chain)."""
    try:
        return inspect.unwrap(fn)
    except ValueError:  # a cycle of __wrapped__
        return fn


def _path(source: Source | None) -> list[Source]:
    path = []
    while source is not None:
        path.append(source)
        source = source.base
    return path


_QUOTED = re.compile(r"""(['"])(.*?)\1""")


def reword(text: str, names: dict[Source, str]) -> str:
    """``text`` (a guard failure reason) with the values it quotes named by
    ``names``: ``tensor 'args[0]' size mismatch`` becomes ``tensor 'tokens' size mismatch``."""
    if not names:
        return text
    raw = sorted(((user_name(source), shown) for source, shown in names.items()), key=lambda p: -len(p[0]))

    def rename(m: re.Match) -> str:
        quote, inside = m.group(1), m.group(2)
        for before, after in raw:
            if inside == before or inside.startswith((before + ".", before + "[")):
                return f"{quote}{after}{inside[len(before):]}{quote}"
        for before, after in raw:  # bytegraph's own ``<stack value N>`` inside a longer expression
            if before.startswith("<") and before in inside:
                inside = inside.replace(before, after)
        return f"{quote}{inside}{quote}"

    return _QUOTED.sub(rename, text)


@dataclasses.dataclass
class BreakSummary:
    """One graph break of the user's code, however many compiles met it.

    Attributes:
        record: the first record of it.
        count: compiles that met it (a frame's recompiles, and callers that
            met it inlined before the callee compiled as a frame of its own).
        frames: labels of the frames whose compiles met it.
    """

    record: BreakRecord
    count: int
    frames: list[str]

    @property
    def where(self) -> tuple[str, int | None] | None:
        frame = self.record.user_stack[-1] if self.record.user_stack else None
        return (frame.filename, frame.lineno) if frame is not None else None


def break_key(record: BreakRecord) -> tuple:
    """What makes two records one graph break: its kind and the user's line."""
    frame = record.user_stack[-1] if record.user_stack else None
    return (record.gb_type, frame.filename if frame else None, frame.lineno if frame else None)


def break_summaries(groups: list[FrameGroup]) -> list[BreakSummary]:
    """Every graph break once, in the order first met."""
    out: dict[tuple, BreakSummary] = {}
    for group in groups:
        for stats in group.members:
            for record in stats.breaks:
                summary = out.setdefault(break_key(record), BreakSummary(record, 0, []))
                summary.count += 1
                if group.label not in summary.frames:
                    summary.frames.append(group.label)
    return list(out.values())


def user_frame_label(frame: object) -> str:
    """A frame of a break's user stack (:class:`~bytegraph.breaks.UserFrame`)
    by the function the user wrote."""
    code = getattr(frame, "code", None)
    if code is None:
        return getattr(frame, "name", "?")
    return RESUME_ORIGIN.get(code, code).co_qualname
