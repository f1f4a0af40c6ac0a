"""Typed settings of bytegraph.

``bytegraph.config`` is one :class:`Config` instance. Each setting is a typed
field; assigning a value of the wrong type or an unknown name raises, so a typo
never silently does nothing::

    bytegraph.config.recompile_limit = 4
    with bytegraph.config.patch(capture_scalar_outputs=False):
        ...

Names and defaults mirror torch.compile's frontend settings where the concept
exists, and a program that changes one of those in torch's frontend config
gets the same effect (:func:`bytegraph.compat.changed_settings`, applied while
a frame compiles).
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Iterator


@dataclasses.dataclass
class Config:
    """Settings read by the frontend at trace time and call time.

    Attributes:
        recompile_limit: cache entries one code object may hold before bytegraph
            stops compiling it and runs it natively, warning once with the guard
            that keeps failing (mirrors torch.compile's ``recompile_limit``, 8).
        capture_scalar_outputs: when True, ``Tensor.item()``, ``int(t)``,
            ``float(t)`` and ``tolist()`` become data-dependent (unbacked)
            symbolic scalars in the graph instead of graph breaks (mirrors
            torch.compile's setting of that name). A Python branch on such a
            value is still a graph break.
        capture_dynamic_output_shape_ops: when True, operators whose output
            size depends on tensor data (``nonzero``, ``masked_select``,
            ``unique``, ``x[mask]``) stay in the graph with unbacked symbolic
            sizes instead of breaking (mirrors torch.compile's setting).
            ``fullgraph=True`` turns both captures on for its frames, as
            torch.compile does: there a symbol is always better than a break.
            Both default to True, unlike torch.compile (off): every test and
            corpus model is correct with them on, with fewer graphs (issue 14).
            A backend that fails on a captured value gets the frame traced
            again with both off (a graph break instead).
        trace_numpy: trace NumPy calls on tensors through ``torch._numpy``.
        assume_static_by_default: when False, tensor dims and Python int/float
            arguments are symbolic from the first compile, as with
            ``dynamic=True`` (mirrors torch.compile's setting).
        specialize_int: when True, Python ``int`` arguments are always
            constants (guarded), never made symbolic by automatic dynamic or
            ``dynamic=True`` (mirrors torch.compile's setting; default False:
            constant until it changes).
        specialize_float: the same for Python ``float`` arguments.
        automatic_dynamic_shapes: after a recompile caused by a size change,
            mark the changed dimensions dynamic (mirrors torch.compile).
        fail_on_recompile_limit_hit: raise instead of running natively when a
            frame hits ``recompile_limit`` (mirrors torch.compile's setting).
        error_on_recompile: raise at any recompile (mirrors torch.compile's
            setting, and the stance ``"fail_on_recompile"``).
        max_trace_instructions: bytecode instructions one frame may execute
            symbolically (counting unrolled loop iterations and inlined calls)
            before tracing gives up with a graph break.
        max_inline_depth: nesting depth of inlined user calls; tracing also
            stops where Python's recursion limit would stop eager
            (``bytegraph/recursion.py``). Deeper calls are a graph
            break and run natively.
        optimize_ddp: compile a graph traced while DistributedDataParallel runs its
            module as one subgraph per gradient bucket, so bucket all-reduces
            overlap backward (``bytegraph/backends/ddp.py``; mirrors torch.compile's
            ``optimize_ddp``). Read when a graph is compiled.
        raise_on_internal_error: re-raise errors that are bugs in bytegraph
            itself instead of running the frame natively (tests turn this on).
        raise_on_backend_error: raise ``BackendCompilerFailed`` when the backend
            fails on a graph, instead of warning once and running the frame
            natively (tests turn this on).
        backend_timeout: seconds one backend compile of one graph may take;
            past it the compile is stopped and counted as a backend failure
            (the frame runs natively, see ``raise_on_backend_error``). 0: no
            limit. The limit is a ``SIGALRM`` timer, so it applies in the
            main thread only (``bytegraph/backends/checks.py``). The default,
            half an hour, is far above inductor's compile of a large model
            on a small machine.

    Assigning an unknown name raises AttributeError, a value of the wrong type
    TypeError (an int is taken for a float), a negative number (or a
    recompile_limit below 1) ValueError.
    """

    recompile_limit: int = 8
    capture_scalar_outputs: bool = True
    capture_dynamic_output_shape_ops: bool = True
    trace_numpy: bool = True
    assume_static_by_default: bool = True
    specialize_int: bool = False
    specialize_float: bool = False
    automatic_dynamic_shapes: bool = True
    fail_on_recompile_limit_hit: bool = False
    error_on_recompile: bool = False
    max_trace_instructions: int = 200_000
    max_inline_depth: int = 1000  # CPython's default recursion limit
    optimize_ddp: bool = True
    raise_on_internal_error: bool = False
    raise_on_backend_error: bool = False
    backend_timeout: float = 1800.0

    def __setattr__(self, name: str, value: Any) -> None:
        fields = {f.name: f for f in dataclasses.fields(self)}
        if name not in fields:
            raise AttributeError(f"bytegraph.config has no setting {name!r}")
        expected = type(getattr(type(self), name))
        if expected is float and type(value) is int:
            value = float(value)
        if not isinstance(value, expected) or (expected in (int, float) and isinstance(value, bool)):
            raise TypeError(
                f"bytegraph.config.{name} must be {expected.__name__}, got {type(value).__name__}"
            )
        minimum = 1 if name == "recompile_limit" else 0
        if expected in (int, float) and value < minimum:
            raise ValueError(f"bytegraph.config.{name} must be at least {minimum}, got {value}")
        object.__setattr__(self, name, value)

    @contextlib.contextmanager
    def patch(self, **changes: Any) -> Iterator[None]:
        """Temporarily set settings; restores the old values on exit.

        Raises:
            AttributeError / TypeError / ValueError: as for assignment.
        """
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise AttributeError(f"bytegraph.config has no setting {unknown[0]!r}")
        old = {name: getattr(self, name) for name in changes}
        try:
            for name, value in changes.items():
                setattr(self, name, value)
            yield
        finally:
            for name, value in old.items():
                setattr(self, name, value)


config = Config()
