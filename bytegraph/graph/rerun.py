"""Running a compiled graph so that an exception it raises leaves the frame to
run natively (eager's side effects and state up to the exception, then eager's
exception): see :func:`rerun_natively_on_error`."""
from __future__ import annotations

import operator
from typing import Any, Callable

import torch

from bytegraph.backends.checks import OutputCheck
from bytegraph.breaks import GraphRaised
from bytegraph.graph import numpy_random
from bytegraph.graph.sdp_flags import restore_sdp_flags, sdp_flags


def rerun_natively_on_error(compiled: Callable, check: OutputCheck, rng: bool, watched: tuple[int, ...],
                            scoped_grad: bool, saved: tuple[int, ...] = (), numpy_rng: bool = False,
                            autocast: tuple[str, ...] = (), sdp: bool = False) -> Callable:
    """``compiled`` that, when it raises an Exception, leaves the frame to run natively.

    Its result is checked by ``check`` until the check passes (a backend
    that returns the wrong number of values raises there: see
    :class:`~bytegraph.backends.checks.OutputCheck`).

    The graph call is the first thing a transformed frame does, and the side
    effects traced before the operation that raised are replayed only after the
    graph. So when the graph raises and has written none of its inputs (the
    ``_version`` of each tensor argument at a position in ``watched`` is
    unchanged), it puts grad mode and, when ``rng``, the default generator's
    state (and NumPy's global one, when ``numpy_rng``: the graph draws from it,
    see ``graph/numpy_random.py``) back as they were before the call and raises :class:`GraphRaised`: the
    frame's cache reruns the frame natively, which does what eager does up to
    the exception and raises it.

    A graph that writes inputs and has operations that may raise on the data
    copies the inputs it writes (positions ``saved``) before the call (into
    buffers kept from call to call: see :class:`Snapshots`); if it
    raises after writing one, the copies are written back first (the version
    counters then differ from eager's, the values do not; an inference tensor,
    which has no version counter, is restored the same way). Otherwise, if an
    input was written before the exception (possible with backends that run
    in-place operations in order), rerunning would write it twice: the
    exception propagates as is, after grad mode is restored when every switch of
    it in the graph came from a ``with`` block (``scoped_grad``; eager's
    ``__exit__`` restores it).

    A graph that enters ``torch.autocast`` for the device types ``autocast``
    (see :func:`autocast_devices`) and raises inside the block never runs its
    exit: the autocast state it found (enabled, dtype, cache, nesting) is put
    back in either case, as eager's ``__exit__`` would; so are the SDP backend
    flags of a graph that enters ``sdpa_kernel`` (``sdp``).

    An interrupt (a ``BaseException`` such as ``KeyboardInterrupt``) propagates
    as is, after grad mode (when ``scoped_grad``) and the autocast state are put
    back: the ``with`` blocks it fell in the middle of exit, as they do in eager.

    A graph that draws no random numbers (torch's or NumPy's), writes no input
    and enters no autocast block (the common case) gets a wrapper that only
    saves grad mode: this runs on every call.
    """
    if not (rng or numpy_rng or watched or saved or autocast or sdp):
        def run_pure_graph(*args: Any) -> Any:
            mode = torch.is_grad_enabled()
            try:
                if check.pending:
                    return check.first_call(compiled, args)
                return compiled(*args)
            except Exception as e:
                torch._C._set_grad_enabled(mode)
                raise GraphRaised() from e
            except BaseException:  # KeyboardInterrupt: the ``with`` blocks the graph was in exit, as in eager
                if scoped_grad:
                    torch._C._set_grad_enabled(mode)
                raise

        return run_pure_graph

    snapshots = Snapshots(saved) if saved else None

    def run_graph(*args: Any) -> Any:
        mode = torch.is_grad_enabled()
        autocast_state = _autocast_state(autocast) if autocast else None
        flags = sdp_flags() if sdp else None
        state = torch.default_generator.get_state() if rng else None
        np_state = numpy_random.saved_state() if numpy_rng else None
        versions = _versions(args, watched)
        taken = snapshots.take(args) if snapshots is not None else None
        try:
            if check.pending:
                return check.first_call(compiled, args)
            return compiled(*args)
        except Exception as e:
            if autocast_state is not None:
                _restore_autocast(autocast_state)
            if flags is not None:
                restore_sdp_flags(flags)
            if saved and versions is not None:
                for i, copy in zip(saved, taken[0]):
                    with torch.inference_mode() if args[i].is_inference() else torch.no_grad():
                        args[i].copy_(copy)  # an inference tensor is written only in inference mode
                versions = _versions(args, watched)
            if versions is None or _versions(args, watched) != versions:
                if scoped_grad:
                    torch._C._set_grad_enabled(mode)
                raise
            torch._C._set_grad_enabled(mode)
            if state is not None:
                torch.default_generator.set_state(state)
            if np_state is not None:
                numpy_random.restore_state(np_state)
            raise GraphRaised() from e
        except BaseException:  # KeyboardInterrupt: the ``with`` blocks the graph was in exit, as in eager
            if autocast_state is not None:
                _restore_autocast(autocast_state)
            if flags is not None:
                restore_sdp_flags(flags)
            if scoped_grad:
                torch._C._set_grad_enabled(mode)
            raise
        finally:
            if taken is not None:
                snapshots.give_back(taken)

    return run_graph


class Snapshots:
    """Copies of the inputs at positions ``saved``, taken before each call of a
    graph that may raise after writing them.

    Allocating a copy of each tensor on every call costs more than the rest of
    a small training step's frontend: the copies are made once and, while the
    inputs keep the shapes and dtypes they were made for, written again with one
    ``torch._foreach_copy_`` (a mismatch, as under dynamic shapes, allocates new
    ones). A set of copies in use is taken out of the pool, so a graph running
    in two threads at once (or within its own call) gets two sets.
    """

    def __init__(self, saved: tuple[int, ...]):
        self.pick = operator.itemgetter(*saved) if len(saved) > 1 else lambda args: (args[saved[0]],)
        #: sets of copies not in use, each with the (shape, dtype) of the tensors it was written from
        self.pool: list[tuple[list[torch.Tensor], list]] = []

    def take(self, args: tuple) -> tuple[list[torch.Tensor], list]:
        """Copies of the saved inputs of this call, with their layouts (``give_back`` them after it)."""
        tensors = self.pick(args)
        layouts = list(map(_LAYOUT, tensors))
        try:
            copies, made_for = self.pool.pop()  # (one step: another thread may take the last set)
        except IndexError:
            copies = made_for = None
        mode = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)
        try:
            if made_for == layouts:
                try:
                    torch._foreach_copy_(copies, tensors)
                    return copies, layouts
                except RuntimeError:  # a layout copy_ cannot write into (sparse...): copies of their own
                    pass
            return [t.clone() for t in tensors], layouts
        finally:
            torch._C._set_grad_enabled(mode)

    def give_back(self, taken: tuple[list[torch.Tensor], list]) -> None:
        self.pool.append(taken)


#: what a copy must share with its tensor for ``copy_`` to copy every value exactly
#: (``copy_`` broadcasts a smaller source and converts another dtype)
_LAYOUT = operator.attrgetter("shape", "dtype")


def _versions(args: tuple, watched: tuple[int, ...]) -> list[int] | None:
    """The version counters of ``args`` at ``watched``; None if one has none
    (an inference tensor)."""
    try:
        return [args[i]._version for i in watched]
    except RuntimeError:
        return None


def autocast_devices(gm: torch.fx.GraphModule) -> tuple[str, ...]:
    """The device types of the ``torch.autocast`` blocks graph ``gm`` enters."""
    enter = torch.amp.autocast_mode._enter_autocast
    return tuple(sorted({n.args[0] for n in gm.graph.nodes if n.op == "call_function" and n.target is enter}))


def _autocast_state(devices: tuple[str, ...]) -> tuple:
    """(nesting level, cache enabled, (device, enabled, dtype) for each of ``devices``)."""
    nesting = torch.autocast_increment_nesting() - 1  # read without a getter: up and back down
    torch.autocast_decrement_nesting()
    return nesting, torch.is_autocast_cache_enabled(), tuple(
        (d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in devices)


def _restore_autocast(state: tuple) -> None:
    """Undo the ``torch.autocast`` blocks a failed graph entered and never left."""
    nesting, cache_enabled, devices = state
    for device, was_enabled, dtype in devices:
        torch.set_autocast_enabled(device, was_enabled)
        torch.set_autocast_dtype(device, dtype)
    torch.set_autocast_cache_enabled(cache_enabled)
    level = torch.autocast_increment_nesting() - 1
    torch.autocast_decrement_nesting()
    for _ in range(level - nesting):
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()  # as the outermost autocast's __exit__ does
