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
from bytegraph.graph.state_setters import context_states, read_states, restore_states


def rerun_natively_on_error(compiled: Callable, check: OutputCheck, rng: bool, watched: tuple[int, ...],
                            scoped_grad: bool, saved: tuple[int, ...] = (), numpy_rng: bool = False,
                            autocast: tuple[str, ...] = (), saved_static: bool = False,
                            sdp: bool = False, states: tuple = ()) -> Callable:
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
    buffers kept from call to call: see :class:`Snapshots`; ``saved_static``: the
    guards fix their shapes and dtypes); if it
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
    flags of a graph that enters ``sdpa_kernel`` (``sdp``), and the states a context's
    entry among ``states`` switched (``disable_saved_tensors_hooks``). The states a graph
    switches by plain setters (``states``: see ``graph/state_setters.py``) are put back
    before the rerun only: a plain setter is undone by nothing in eager.

    An interrupt (a ``BaseException`` such as ``KeyboardInterrupt``) propagates
    as is, after grad mode (when ``scoped_grad``) and the autocast state are put
    back: the ``with`` blocks it fell in the middle of exit, as they do in eager.

    A graph that draws no random numbers (torch's or NumPy's), writes no input
    and enters no autocast block (the common case) gets a wrapper that only
    saves grad mode: this runs on every call.
    """
    if not (rng or numpy_rng or watched or saved or autocast or sdp or states):
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

    snapshots = Snapshots(saved, saved_static) if saved else None
    scoped = context_states(states)  # put back on every way out, as the contexts' exits would

    def run_graph(*args: Any) -> Any:
        mode = torch.is_grad_enabled()
        autocast_state = _autocast_state(autocast) if autocast else None
        flags = sdp_flags() if sdp else None
        set_states = read_states(states) if states else None
        scoped_states = read_states(scoped) if scoped else None
        state = torch.default_generator.get_state() if rng else None
        np_state = numpy_random.saved_state() if numpy_rng else None
        # with copies to put back, only whether each watched input has a version counter matters (an
        # inference tensor has none; a call cannot change that): asked after an exception, not before each call
        versions = _versions(args, watched) if snapshots is None else None
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
            if taken is not None:
                written = _versions(args, watched) is None  # (the writes cannot be told: none is undone)
                if not written:
                    for i, copy in zip(saved, taken.copies):
                        with torch.inference_mode() if args[i].is_inference() else torch.no_grad():
                            args[i].copy_(copy)  # an inference tensor is written only in inference mode
            else:
                written = versions is None or _versions(args, watched) != versions
            if written:
                if scoped_grad:
                    torch._C._set_grad_enabled(mode)
                if scoped_states is not None:
                    restore_states(scoped, scoped_states)
                raise
            torch._C._set_grad_enabled(mode)
            if set_states is not None:
                restore_states(states, set_states)
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
            if scoped_states is not None:
                restore_states(scoped, scoped_states)
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
    a small training step's frontend: the copies (:class:`Copies`) are made
    once and, while the inputs keep the shapes and dtypes they were made for,
    written again (a mismatch, as under dynamic shapes, makes new ones). A set
    of copies in use is taken out of the pool, so a graph running in two
    threads at once (or within its own call) gets two sets.

    ``static``: every saved input's shape and dtype is fixed by the guards of
    the graph's cache entry (a ``TensorMatch`` with no symbolic size), so the
    layouts are not compared on each call.
    """

    def __init__(self, saved: tuple[int, ...], static: bool = False):
        self.pick = _picker(list(saved))
        self.static = static
        #: sets of copies not in use
        self.pool: list[Copies] = []

    def take(self, args: tuple) -> "Copies":
        """Copies of the saved inputs of this call (``give_back`` them after it)."""
        tensors = self.pick(args)
        try:
            copies = self.pool.pop()  # (one step: another thread may take the last set)
        except IndexError:
            copies = None
        mode = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)
        try:
            if copies is not None and (self.static or copies.layouts == list(map(_LAYOUT, tensors))):
                copies.write(tensors)
                return copies
            return Copies(tensors)
        finally:
            torch._C._set_grad_enabled(mode)

    def give_back(self, copies: "Copies") -> None:
        self.pool.append(copies)


class Copies:
    """Copies of ``tensors`` (``copies[i]`` of ``tensors[i]``) that can be written
    again from tensors of the same shapes and dtypes.

    On CPU ``torch._foreach_copy_`` copies tensor by tensor (a ResNet's 94
    BatchNorm running statistics and counters: about 35 µs). The copies are
    therefore views of a few buffers, one per dtype, device and sizes past the
    first: the tensors with at least one dimension are concatenated along it
    (one ``torch.cat``), the 0-d ones stacked (one ``torch.stack``), each
    written by one kernel (about half the time). The tensors are graph inputs:
    strided (the builder refuses other layouts as inputs) and never quantized
    (FakeTensor refuses them), which ``torch.cat`` would requantize to one scale.
    A tensor subclass's instance (a DTensor: other subclasses reach graphs as
    plain aliases), whose ``cat`` has its own meaning, gets a copy of its own,
    written by ``_foreach_copy_``.
    """

    def __init__(self, tensors: tuple[torch.Tensor, ...]):
        #: the (shape, dtype) of each tensor the copies were made from
        self.layouts = list(map(_LAYOUT, tensors))
        groups: dict[tuple, list[int]] = {}
        own = []
        for i, t in enumerate(tensors):
            if type(t) in _PLAIN:
                groups.setdefault((t.dtype, t.device, tuple(t.shape[1:]) if t.dim() else None), []).append(i)
            else:
                own.append(i)
        self.copies: list[Any] = [None] * len(tensors)
        #: (pick the group's tensors, its buffer, whether its tensors are 0-d)
        self.groups: list[tuple[Callable, torch.Tensor, bool]] = []
        for (_, _, rest), members in groups.items():
            parts = [tensors[i] for i in members]
            buffer = torch.stack(parts) if rest is None else torch.cat(parts)
            views = buffer.unbind() if rest is None else buffer.split([t.shape[0] for t in parts])
            for i, view in zip(members, views):
                self.copies[i] = view
            self.groups.append((_picker(members), buffer, rest is None))
        for i in own:
            self.copies[i] = tensors[i].clone()
        #: (pick the tensors with copies of their own, those copies)
        self.own = (_picker(own), [self.copies[i] for i in own]) if own else None

    def write(self, tensors: tuple[torch.Tensor, ...]) -> None:
        """Write the copies again from ``tensors`` (of the same shapes and dtypes)."""
        for pick, buffer, scalars in self.groups:
            (torch.stack if scalars else torch.cat)(pick(tensors), out=buffer)
        if self.own is not None:
            torch._foreach_copy_(self.own[1], self.own[0](tensors))


def _picker(indices: list[int]) -> Callable[[tuple], tuple]:
    """``itemgetter(*indices)`` that gives a tuple for one index too."""
    return operator.itemgetter(*indices) if len(indices) > 1 else lambda items: (items[indices[0]],)


#: the tensor types whose copies share buffers (:class:`Copies`)
_PLAIN = (torch.Tensor, torch.nn.Parameter)

#: what a copy must share with its tensor for a write to copy every value exactly
#: (``copy_`` broadcasts a smaller source and converts another dtype; ``torch.cat`` resizes its output)
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
