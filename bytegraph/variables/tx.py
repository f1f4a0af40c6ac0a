"""What VariableTrackers use from above their layer, written down in one place.

The variables layer never imports the translator (``bytegraph.translator``),
at run time or for typing. A method that needs the translator takes it as
``tx`` (passed explicitly, never global) and uses only what :class:`Tx` lists;
``tx.output`` is the trace's graph, guards and side effects, of which VTs use
only what :class:`Output` lists. The translator implements both (a test can
pass a stub); ``tests/test_layers.py`` checks that these lists are exactly
what ``variables/`` uses.

Inside ``variables/`` imports point down: the core (``base``, ``constant``,
``exceptions``, ``operators``, ``stack_values``, this module) under the kinds
(``containers/``, ``callables/``, ``tensors/``, ``objects/``,
``torch_state/``), under ``builder``, which imports every kind. No module
imports a bytegraph module inside a function; two rules take the place of the
cycle-dodges that did:

- **A kind split across modules that call each other** (``sequences`` and
  ``iterators``; ``tensor``, ``tensor_methods``, ``graph_calls``,
  ``symbolic``, ``handles`` and ``scalar_args``; ``ndarray`` and
  ``numpy_calls``; ``subclass`` and ``subclass_dispatch``; ``user_classes``
  and ``user_objects``): each imports the others *as modules*
  (``from bytegraph.variables.tensors import graph_calls``) and reads its
  names inside functions only, so any of them may be imported first.
- **A call up the layers** (every kind wraps the values it reads with the
  builder; a tensor's ``.numpy()`` makes an ndarray; a tensor method with a
  subclass argument dispatches through ``__torch_function__``): the lower
  module calls a :class:`Provided` function declared below, which the module
  that owns the behaviour provides when it is imported (a late-bound
  registry, ``@wrap.provide``). ``builder`` imports every kind, and
  ``bytegraph`` imports the builder, so each is provided before the first
  trace; calling one that is not is an InternalError naming it.
"""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

from bytegraph.breaks import InternalError
from bytegraph.guards.source import AttrSource

if TYPE_CHECKING:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from bytegraph.breaks import BreakSite, UserFrame
    from bytegraph.graph.output_graph import DynamicPolicy, GraphInput
    from bytegraph.graph.side_effects import SideEffects
    from bytegraph.guards.guards import GuardSet
    from bytegraph.guards.source import Source
    from bytegraph.variables.base import VariableTracker as VT
    from bytegraph.variables.tensors.tensor import TensorVariable


class Output(Protocol):
    """The parts of the trace's OutputGraph (shared by every frame of one
    trace) that VariableTrackers read and write."""

    #: the fx graph being built
    graph: torch.fx.Graph
    #: the FakeTensorMode that propagates tensor metadata
    fake_mode: FakeTensorMode
    #: its ShapeEnv, or None in a static trace
    shape_env: ShapeEnv | None
    #: which inputs are symbolic
    policy: DynamicPolicy
    #: the guards the trace installs
    guards: GuardSet
    #: pending mutations of objects that existed before the call
    side_effects: SideEffects
    #: the graph's placeholders, in order
    inputs: list[GraphInput]
    #: sources of inputs used as dict keys (hashed by identity), in order
    identity_key_sources: dict[Any, None]
    #: (cache key, result VT) of the lru_cache calls traced so far: a repeat is eager's cache hit
    traced_cache_calls: list[tuple[tuple, Any]]
    #: tensor attributes whose read is a graph break (inside a torch.func transform's function)
    forbidden_tensor_attrs: frozenset[str]
    #: depth of ``DisableTorchFunctionSubclass`` blocks entered in the trace
    subclass_dispatch_disabled: int
    #: whether ``Tensor.item()`` becomes a data-dependent scalar in the graph
    capture_scalar_outputs: bool
    #: undo functions of process state (autocast, inference mode) entered at trace time
    open_states: list[Callable[[], Any]]
    #: grad-mode switches in the graph made outside a ``with`` block
    unscoped_grad_mode_changes: int
    #: flags of the ``error_on_graph_break`` regions the trace is inside, outermost first
    break_regions: list[bool]
    #: operation nodes in the graph so far (unchanged across a traced call that added none)
    operations: int

    def add_graph_input(self, source: Source, value: torch.Tensor, dynamic: dict[int, Any] | None = None,
                        static: bool = False) -> tuple[torch.fx.Node, torch.Tensor]:
        """The placeholder and FakeTensor of the tensor ``value`` read from ``source``."""

    def add_scalar_input(self, source: Source, value: int | float) -> tuple[torch.fx.Node, Any]:
        """A placeholder for a Python int/float made symbolic."""

    def input_for(self, node: torch.fx.Node) -> GraphInput:
        """The graph input of placeholder ``node``."""

    def inputs_sharing_storage(self, example: torch.Tensor) -> list[GraphInput]:
        """Tensor inputs whose FakeTensor shares ``example``'s storage."""

    def sym_size(self, node: torch.fx.Node, example: torch.Tensor, dim: int) -> tuple[torch.fx.Node, Any]:
        """A node for the symbolic size ``dim`` of tensor ``node``."""

    def run_fake(self, kind: str, target: Any, args: tuple, kwargs: dict) -> Any:
        """Run one operation on FakeTensor examples (failures are graph breaks)."""

    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict, example: Any) -> torch.fx.Node:
        """Add one operation node whose result is ``example``."""

    def remove_node(self, node: torch.fx.Node) -> None:
        """Remove an operation node nothing uses."""

    def written_inputs(self) -> tuple[int, ...] | None:
        """Positions of the graph inputs an operation so far may write (None: a write of unknown target)."""

    def trace_state(self) -> dict[str, Any]:
        """A copy of the bookkeeping of inputs and nodes, for a speculative trace to restore."""

    def restore_trace_state(self, state: dict[str, Any]) -> None:
        """Put back what :meth:`trace_state` copied."""


class Tx(Protocol):
    """The translator of one frame, as VariableTrackers see it."""

    #: the trace's graph, guards and side effects
    output: Output
    #: the code object this frame runs
    code: types.CodeType
    #: the frame's globals
    f_globals: dict[str, Any]
    #: whether the frame has finished (returned, or, for a generator, been closed)
    done: bool
    #: the frame's local variables (cell contents included), as VTs
    symbolic_locals: dict[str, VT]
    #: the frame's value stack, as VTs
    stack: list[VT]
    #: context managers entered in this frame and not yet exited (``with``)
    block_stack: list[VT]
    #: the frame this one returns or yields to, whose exception state it continues (a generator
    #: delegated to with ``yield from`` runs with the delegating generator's frame as its caller)
    caller: Tx | None
    #: the real cells that functions realized from the trace close over (a class
    #: statement's methods), each standing for a cell of the trace: id -> (cell, CellVariable)
    stand_in_cells: dict[int, tuple[Any, VT]]

    def root(self) -> Tx:
        """The translator of the frame being compiled (the outermost)."""

    def user_frames(self) -> list[Tx]:
        """This frame and its callers that are user code, innermost first."""

    def frame_summary(self) -> UserFrame:
        """Where this frame is: file, line, function."""

    def load_freevar(self, name: str) -> VT:
        """The value of this frame's free variable ``name``."""

    def read_local(self, name: str) -> VT | None:
        """The local ``name`` as the code reads it (None when unbound): an
        argument not read before is wrapped and guarded now (see
        :class:`~bytegraph.variables.stack_values.UnreadArgument`)."""

    def frame_cell_name(self, cell: object) -> str | None:
        """The free-variable name under which the compiled frame holds ``cell``, if it does."""

    def inline_call(self, fn: VT, args: list[VT], kwargs: dict[str, VT]) -> VT:
        """Trace a call of a Python function by running its bytecode in a child frame."""

    def inline_class_body(self, body: VT) -> tuple[dict[str, VT], VT]:
        """Run a class statement's body in a child frame: its namespace and what it returned."""

    def handled_exception(self) -> VT | None:
        """The exception being handled here (``sys.exception()``), None when the trace handles none."""

    def break_site(self, resume: bool = True) -> BreakSite:
        """Where the compiled frame would break to redo natively what this frame is doing now."""


class GeneratorFrame(Tx, Protocol):
    """The suspended frame of a generator created in the trace."""

    #: where the call that created the generator breaks, if the generator must be a real one
    birth: BreakSite | None
    #: whether the frame has run to its first ``yield``
    started: bool
    #: what the frame returned, once done
    return_value: VT | None

    def resume_generator(self, caller: Tx, throw: Any = None, sent: VT | None = None) -> VT | None:
        """Run to the next ``yield`` (its value) or to the end (None), with ``sent``
        as the suspended ``yield``'s value, or raising ``throw`` there first."""

    def yield_from_target(self) -> VT | None:
        """The iterator the frame delegates to while suspended in ``yield from``, else None."""

    def close_generator(self, caller: Tx) -> None:
        """``generator.close()``."""


class Provided:
    """A function that lower modules call and the module owning it provides at
    its import (see the module docstring). Made from a stub whose signature and
    docstring are the function's."""

    def __init__(self, stub: Callable[..., Any]):
        self.__name__ = stub.__name__
        self.__doc__ = stub.__doc__
        self.__wrapped__ = stub
        self._fn: Callable[..., Any] | None = None

    def provide(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Make ``fn`` the implementation (once); returns it, so it can decorate."""
        if self._fn is not None:
            raise InternalError(f"{self.__name__} is provided twice ({self._fn.__module__} and {fn.__module__})")
        self._fn = fn
        return fn

    @property
    def provided(self) -> bool:
        return self._fn is not None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = self._fn
        if fn is None:
            raise InternalError(f"{self.__name__} was called before its module provided it")
        return fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<provided {self.__name__}>"


@Provided
def wrap(tx: Tx, value: Any, source: Source) -> VT:
    """A VT for ``value`` read from ``source``, with the guards it needs (:mod:`.builder`)."""


@Provided
def wrap_const(tx: Tx, value: Any) -> VT:
    """A VT for a value with no source; no guards (:mod:`.builder`)."""


@Provided
def make_tuple(items: Sequence[VT]) -> VT:
    """A tuple of ``items`` (:mod:`.containers.sequences`)."""


@Provided
def list_iterator(items: list[VT], of: VT | None = None) -> VT:
    """An iterator over ``items``, known now, of the type iterating ``of`` gives (:mod:`.containers.iterators`)."""


@Provided
def frozenset_members(value: frozenset) -> VT:
    """A constant frozenset as a set of members, for its methods with arguments
    not known now (:mod:`.containers.sets`)."""


@Provided
def range_iterator(value: range) -> VT:
    """``iter(value)`` of a range (:mod:`.containers.iterators`)."""


@Provided
def construct_object(tx: Tx, cls: VT, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``cls(*args, **kwargs)`` for a user class (:mod:`.objects.construction`)."""


@Provided
def call_with_stand_ins(tx: Tx, fn: Callable[..., Any], args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
    """``fn(*args, **kwargs)`` of a C function with user objects among the arguments, read as
    numbers; None when it is not answered so (:mod:`.objects.number_stand_ins`)."""


@Provided
def as_index(tx: Tx, vt: VT) -> VT:
    """An index or count as ``PyNumber_Index`` reads it: a user object's ``__index__``
    inlined; any other value as it is (:mod:`.objects.number_stand_ins`)."""


@Provided
def tensor_to_numpy(tx: Tx, tensor: TensorVariable, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``tensor.numpy(*args, **kwargs)`` (:mod:`.tensors.ndarray`)."""


@Provided
def as_subclass(tx: Tx, tensor: TensorVariable, cls: VT) -> VT:
    """``tensor.as_subclass(cls)`` (:mod:`.tensors.subclass`)."""


@Provided
def make_tensor_subclass(tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``torch.Tensor._make_subclass(cls, data, require_grad=False)`` (:mod:`.tensors.subclass`)."""


@Provided
def dispatch_torch_function(tx: Tx, fn: VT, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """A torch function called with tensor-subclass arguments, through their
    ``__torch_function__`` (:mod:`.tensors.subclass_dispatch`)."""


@Provided
def dispatch_tensor_method(tx: Tx, obj: TensorVariable, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """``obj.name(*args, **kwargs)`` where ``obj`` or an argument is a dispatching
    tensor subclass (:mod:`.tensors.subclass_dispatch`)."""


@Provided
def format_value(tx: Tx, value: VT, conversion: Callable[[Any], str] | None, spec: str) -> VT:
    """``format(conversion(value), spec)`` as an f-string field makes it, ``conversion``
    None or ``str``/``repr``/``ascii`` (:mod:`.formatting`)."""


@Provided
def format_string(tx: Tx, template: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT | None:
    """``template.format(*args, **kwargs)`` field by field; None for fields with an
    attribute or index, or a nested spec (:mod:`.formatting`)."""


#: every function of this module that a higher module provides
PROVIDED = (wrap, wrap_const, make_tuple, list_iterator, frozenset_members, range_iterator, construct_object,
            call_with_stand_ins, as_index, format_value, format_string,
            tensor_to_numpy, as_subclass, make_tensor_subclass, dispatch_torch_function, dispatch_tensor_method)


def wrap_attr(tx: Tx, obj: VT, value: Any, name: str) -> VT:
    """A VT for ``obj.name`` whose real value is ``value``: read through
    ``obj``'s source (guarded) when it has one."""
    if obj.source is None:
        return wrap_const(tx, value)
    return wrap(tx, value, AttrSource(obj.source, name))
