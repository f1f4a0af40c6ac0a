"""Calling a backend safely: a time limit on its compile, and checks of what
it returns (a callable that takes the graph's inputs and returns one value
per graph output).

The time limit (``config.backend_timeout``) is a ``SIGALRM`` timer whose
handler raises :class:`BackendTimeout` in the compiling thread: no thread is
started, so nothing is left running when the limit passes (a watchdog thread
could not stop the compile, only abandon it). The timer exists only in the
main thread of a platform with ``signal.setitimer``; elsewhere compiles have
no limit. A timer the user had set is put back afterwards with what was left
of it. ``BackendTimeout`` derives from ``BaseException`` so that a backend's
own ``except Exception`` does not swallow it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import inspect
import signal
import threading
import time
import warnings
from typing import Any, Callable, Iterator

import torch


def backend_name(compiler: Any) -> str:
    """How messages name a backend: its ``__name__``, or the object itself."""
    return str(getattr(compiler, "__name__", compiler))


class BackendTimeout(BaseException):
    """A backend's compile ran past ``config.backend_timeout``."""


@contextlib.contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Raise :class:`BackendTimeout` in this thread if the block runs more than
    ``seconds`` (0: no limit; outside the main thread: no limit)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise BackendTimeout(f"{what} ran past bytegraph.config.backend_timeout ({seconds} s)")

    previous = signal.signal(signal.SIGALRM, expire)
    user_left, user_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
        if user_left:  # the user's own timer goes on with what it had left (at once if it is past)
            signal.setitimer(signal.ITIMER_REAL, max(user_left - (time.monotonic() - start), 1e-6), user_interval)


def result_problem(compiled: Any, n_inputs: int) -> str | None:
    """What is wrong with ``compiled``, a backend's result for a graph of
    ``n_inputs`` inputs, before it is called: not callable, or a signature
    that cannot take that many positional arguments (None: nothing seen)."""
    if not callable(compiled):
        return f"{type(compiled).__name__}, not a callable"
    try:
        signature = inspect.signature(compiled, follow_wrapped=False)  # (wrappers may name their inner callable)
    except (TypeError, ValueError):  # a C callable without a signature: the call will tell
        return None
    try:
        signature.bind(*range(n_inputs))
    except TypeError as e:
        return f"a callable that cannot take the graph's {n_inputs} inputs ({e})"
    return None


class BackendResultError(Exception):
    """A backend's compiled graph returned something else than one value per graph output."""


@dataclasses.dataclass(frozen=True)
class SharedStorage:
    """Graph outputs that are views of one storage in the trace: their
    positions and, where all are static, each one's ``(size, stride,
    storage_offset)`` and the storage's length in elements (else, or for
    views of a graph input, None);
    ``twins``: the pairs ``(j, i)`` of an output ``j`` that is the very
    object of output ``i`` of the group (``t`` and ``t.contiguous()``)."""

    positions: tuple[int, ...]
    layouts: tuple[tuple[tuple[int, ...], tuple[int, ...], int], ...] | None
    numel: int | None
    twins: tuple[tuple[int, int], ...] = ()

    def faithful(self, result: list) -> bool:
        """Whether the backend returned them as eager would: views of one
        storage, each with the trace's layout (where it is known)."""
        tensors = [result[i] for i in self.positions]
        if not all(isinstance(t, torch.Tensor) for t in tensors):
            return True  # (not for this check to judge)
        storage = tensors[0].untyped_storage().data_ptr()
        if any(t.untyped_storage().data_ptr() != storage for t in tensors):
            return False
        return self.layouts is None or all(
            (tuple(t.shape), t.stride(), t.storage_offset()) == layout for t, layout in zip(tensors, self.layouts))

    def rebuildable(self, result: list) -> bool:
        """Whether :meth:`rebuild` can give eager's layout: known (it is not for
        views of a graph input, whose memory is the input's), plain tensors of
        one dtype and device, and no autograd history to keep."""
        tensors = [result[i] for i in self.positions]
        if self.layouts is None or not all(type(t) is torch.Tensor for t in tensors):
            return False
        return len({(t.dtype, t.device) for t in tensors}) == 1 and not any(t.requires_grad for t in tensors)

    def rebuild(self, result: list) -> None:
        """Copy the outputs into one new storage at the trace's layout (in place in ``result``)."""
        first = result[self.positions[0]]
        storage = torch.empty(self.numel, dtype=first.dtype, device=first.device)
        for i, (size, stride, offset) in zip(self.positions, self.layouts):
            view = storage.as_strided(size, stride, offset)
            view.copy_(result[i])
            result[i] = view
        for j, i in self.twins:
            result[j] = result[i]


class OutputCheck:
    """The check of a compiled graph's first result: a list or tuple of one
    value per graph output. Until it passes, :attr:`pending` is True and the
    graph's caller runs the graph through :meth:`first_call` (one attribute
    test per call after that). A wrong result is reported once and raises
    :class:`BackendResultError` on that call and on every later one before
    the graph runs, so the frame runs natively (see ``graph/rerun.py``).

    ``shared`` lists the groups of outputs that the trace made as views of
    one storage (:class:`SharedStorage`). A backend may return them otherwise:
    one object for ``t`` and ``t.transpose(0, 1).transpose(0, 1)`` (inductor
    does for a view that changes nothing), or the pieces of
    ``torch.split(t, 2)`` as buffers of their own (inductor does for views of
    a tensor it does not return). Eager returns distinct views of one memory,
    and code that tests ``is``, writes through one view or reads strides sees
    the difference. On every call, a group the first result did not give as
    eager is rebuilt (its outputs copied into one new storage at the trace's
    layout) where :meth:`SharedStorage.rebuildable`, and any output that is
    the same object as an earlier one of its group becomes a view of it
    (:meth:`separate`); :attr:`pending` then stays True, so a graph whose
    backend returns what eager does pays nothing for it."""

    def __init__(self, n_outputs: int, describe: str, shared: tuple[SharedStorage, ...] = ()):
        self.pending = n_outputs > 0  # (with no output, the frame drops the result: nothing to check)
        self.n_outputs = n_outputs
        self.describe = describe
        self.problem: str | None = None
        self.shared = shared
        #: the groups rebuilt on every call, and the output pairs (i, j), i < j, separated on every call
        self.rebuilt: tuple[SharedStorage, ...] = ()
        self.merged: tuple[tuple[int, int], ...] = ()

    def first_call(self, compiled: Callable, args: tuple) -> Any:
        if self.problem is not None:
            raise BackendResultError(self.problem)
        result = compiled(*args)
        if self.rebuilt or self.merged:
            return self.separate(result)
        if isinstance(result, (list, tuple)) and len(result) == self.n_outputs:
            unfaithful = [group for group in self.shared if not group.faithful(result)]
            self.rebuilt = tuple(group for group in unfaithful if group.rebuildable(result))
            self.merged = tuple((i, j) for group in self.shared if group not in self.rebuilt
                                for n, j in enumerate(group.positions) for i in group.positions[:n]
                                if result[i] is result[j])
            self.pending = bool(self.rebuilt or self.merged)
            return self.separate(result) if self.pending else result
        got = f"{len(result)} values" if isinstance(result, (list, tuple)) else type(result).__name__
        self.problem = f"{self.describe} returned {got} for a graph of {self.n_outputs} outputs"
        warnings.warn(f"bytegraph: {self.problem}; running the frame natively from now on", stacklevel=2)
        raise BackendResultError(self.problem)

    def separate(self, result: list | tuple) -> list:
        """``result`` with the groups of :attr:`rebuilt` rebuilt and each merged
        later output replaced by a view of the earlier one (same shape, strides
        and storage, a new tensor object)."""
        result = list(result)
        for group in self.rebuilt:
            group.rebuild(result)
        for i, j in self.merged:
            if result[j] is result[i]:
                result[j] = result[i].view(result[i].shape)
        return result
