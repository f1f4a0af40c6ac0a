"""OutputGraph: the fx graph one trace builds, with its inputs and FakeTensors.

Graph inputs (placeholders) are keyed by the real object they stand for: the
same tensor reached through two sources is one placeholder. Every node carries
``meta["example_value"]``, the FakeTensor (or constant) its operation produced
when run under :attr:`OutputGraph.fake_mode`.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import re
import time
import types
from typing import Any, Callable, NoReturn

import torch
import torch._guards
import torch.fx
from torch._dispatch.python import enable_python_dispatcher
from torch.fx.experimental.symbolic_shapes import (
    DimDynamic,
    GuardOnDataDependentSymNode,
    ShapeEnv,
    StatelessSymbolicContext,
    compute_unbacked_bindings,
    free_unbacked_symbols,
)
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
    UnsupportedOperatorException,
)

from bytegraph import imports
from bytegraph.breaks import (
    HINT_DATA_DEPENDENT, HINT_DYNAMIC_OUTPUT_SHAPE, BackendCompilerFailed, unimplemented,
)
from bytegraph.graph import numpy_random, writes
from bytegraph.graph.codegen import PyCodegen
from bytegraph.graph.rerun import autocast_devices, rerun_natively_on_error
from bytegraph.graph.side_effects import SideEffects
from bytegraph.logs import enabled, get
from bytegraph.guards.guards import GuardSet
from bytegraph.guards.shape_guards import ShapeSource
from bytegraph.guards.source import Source, is_plain_name


Backend = Callable[[torch.fx.GraphModule, list], Callable]


@dataclasses.dataclass
class GraphInput:
    """One placeholder: where its value is loaded from, and the example
    (a FakeTensor, or a SymInt/SymFloat for a dynamic Python scalar)."""

    source: Source
    value: Any
    node: torch.fx.Node
    example: Any
    symbolic_context: Any = None  # the ShapeEnv context it was made symbolic with, if any
    fake_version: int = 0  # the FakeTensor's version counter when it was made (see Tensor._version)


@dataclasses.dataclass(frozen=True)
class DynamicPolicy:
    """Which inputs a trace treats as symbolic (mirrors torch.compile's ``dynamic``).

    Attributes:
        all_dims: every dimension of every tensor input is dynamic, except
            parameters and buffers, and so is every int/float argument of the
            frame (``dynamic=True``).
        dims: dynamic dimensions per source (automatic dynamic: the dims that
            changed between calls).
        scalars: Python int/float inputs that are symbolic (they changed
            between calls).
        shape_env: use a ShapeEnv even with nothing dynamic yet (an input is
            marked dynamic, or a data-dependent value is captured).
        static: ``dynamic=False``: scalars are never made symbolic.
        static_floats: floats are never made symbolic (the backend refused a
            SymFloat input: AOTAutograd asks for a restart in that case).
        data_dependent: inputs read from tensor data (what a resume function
            gets after a break on ``int(t)`` or ``x[mask]``): an int is symbolic
            from the first compile, and a tensor's dim 0 is dynamic. A float is
            not (inductor cannot compile a SymFloat input yet): it changes to
            symbolic only by automatic dynamic.
    """

    all_dims: bool = False
    dims: dict = dataclasses.field(default_factory=dict)
    scalars: frozenset = frozenset()
    shape_env: bool = False
    static: bool = False
    static_floats: bool = False
    data_dependent: frozenset = frozenset()

    def needs_shape_env(self) -> bool:
        return self.all_dims or bool(self.dims) or bool(self.scalars) or self.shape_env or bool(self.data_dependent)


class NeedsShapeEnv(Exception):
    """Raised when a static trace meets an input that must be symbolic
    (marked dynamic) or a data-dependent value to capture; the frame is
    traced again with a ShapeEnv."""



def _data_dependent_operator(context: str, hint: str) -> NoReturn:
    unimplemented(gb_type="data-dependent operator", context=context, hints=(hint,),
                  explanation="The output of this operation (its value or its shape) depends on tensor data.")

class OutputGraph:
    """State shared by the root translator and every inlined frame of one trace.

    Attributes:
        graph: the fx graph being built.
        fake_mode: FakeTensorMode used to propagate metadata; it has a ShapeEnv
            only when the policy makes something symbolic (symbolic propagation
            costs several times more per operation).
        shape_env: that ShapeEnv, or None.
        policy: which inputs are symbolic.
        guards: guards installed by the trace.
        side_effects: pending mutations of pre-existing Python objects.
        inputs: placeholders in graph order.
        dropped_inputs: inputs whose placeholder :meth:`build_module` removed
            because the graph does not read them. Their symbols may still carry
            ShapeEnv guards (``L[n]`` specialises a dynamic int ``n`` without
            using its node), so guards are produced over ``inputs`` and these.
        instruction_count: bytecode instructions executed symbolically.
        unscoped_grad_mode_changes: grad-mode switches in the graph made by a
            plain ``torch.set_grad_enabled(m)`` call rather than a ``with``
            block (eager does not undo those when an exception escapes).
        identity_key_sources: sources of inputs used as dict keys, which are
            hashed by identity (guarded to stay distinct objects).
        open_states: undo functions of the process state (autocast, inference
            mode) that tracing entered and has not left yet, innermost last;
            :meth:`close_open_states` runs them when tracing ends early.
        subclass_dispatch_disabled: depth of ``DisableTorchFunctionSubclass``
            blocks entered in the trace; while positive, tensor-subclass
            operations do not call ``__torch_function__``.
        forbidden_tensor_attrs: tensor attributes whose read is a graph break
            (while a torch.func transform's function is traced speculatively).
    """

    forbidden_tensor_attrs: frozenset[str] = frozenset()

    def __init__(self, max_instructions: int, policy: DynamicPolicy = DynamicPolicy(),
                 capture_scalar_outputs: bool = False, capture_dynamic_output_shape_ops: bool = False):
        self.graph = torch.fx.Graph()
        self.policy = policy
        self.capture_scalar_outputs = capture_scalar_outputs
        self.capture_dynamic_output_shape_ops = capture_dynamic_output_shape_ops
        # a capture needs a ShapeEnv, but most frames capture nothing: a static trace meeting a
        # data-dependent value raises NeedsShapeEnv and the frame is traced again with one
        self.shape_env = (
            ShapeEnv(allow_scalar_outputs=capture_scalar_outputs,
                     allow_dynamic_output_shape_ops=capture_dynamic_output_shape_ops)
            if policy.needs_shape_env() else None
        )
        # export=True: no backed item() symbol for 0-d inputs (its guard names L['t'].item(), which
        # produce_guards cannot attribute to an input); item() is unbacked, branching on it breaks
        with imports.first_use("FakeTensorMode's config modules"):  # the first one imports them
            self.fake_mode = FakeTensorMode(shape_env=self.shape_env, export=True)
        self._sym_sizes: dict[tuple[torch.fx.Node, int], Any] = {}
        self.guards = GuardSet()
        self.side_effects = SideEffects()
        self.inputs: list[GraphInput] = []
        self.dropped_inputs: list[GraphInput] = []
        self._input_index: dict[int, int] = {}
        self._last_placeholder: torch.fx.Node | None = None
        self.instruction_count = 0
        self.max_instructions = max_instructions
        #: the deepest nesting of inlined calls this trace may reach (translator/recursion.py)
        self.max_inline_depth = 0
        self.compiled_graphs: list[CompiledGraph] = []
        #: the translator running the current instruction: graph nodes record its
        #: user stack as ``meta["user_stack"]`` (the HTML report links nodes to lines)
        self.current_tx: Any = None
        self.unscoped_grad_mode_changes = 0
        self.open_states: list[Callable[[], Any]] = []
        self.identity_key_sources: dict[Any, None] = {}  # inputs used as dict keys (by identity), in order
        self.subclass_dispatch_disabled = 0
        self.operations = 0  # operation nodes in the graph (kept up to date, O(1) to read)
        self.static_backend_inputs: list[torch.Tensor] = []  # see backend_fake_mode

    def close_open_states(self) -> None:
        """Leave, innermost first, the state contexts tracing entered for real
        and did not leave (tracing stopped inside their ``with`` block)."""
        while self.open_states:
            self.open_states.pop()()

    # ---- budget ----------------------------------------------------------------
    def tick(self) -> None:
        self.instruction_count += 1
        if self.instruction_count > self.max_instructions:
            unimplemented(
                gb_type="trace too long",
                context=f"more than {self.max_instructions} bytecode instructions traced",
                explanation="The frame unrolls too many loop iterations or inlined calls to trace.",
                hints=("Raise bytegraph.config.max_trace_instructions, or shorten the loop.",),
            )

    # ---- inputs ----------------------------------------------------------------
    def add_graph_input(
        self, source: Source, value: torch.Tensor, dynamic: dict[int, Any] | None = None, static: bool = False
    ) -> tuple[torch.fx.Node, torch.Tensor]:
        """The placeholder and FakeTensor for ``value`` read from ``source``.

        Args:
            dynamic: dims to make symbolic, each with an optional ShapeEnv
                constraint (from ``mark_dynamic``: a range, or "must stay dynamic").
            static: all sizes static even in a trace with a ShapeEnv (wrapper
                subclasses such as DTensor, traced with static shapes only).

        Raises:
            NeedsShapeEnv: when a dim must be symbolic but this trace is static.
        """
        index = self._input_index.get(id(value))
        if index is not None:
            existing = self.inputs[index]
            return existing.node, existing.example
        if self.shape_env is None or static:
            if dynamic:
                raise NeedsShapeEnv(source)
            example = self.fake_mode.from_tensor(value, static_shapes=True)
        else:
            context = _symbolic_context(value, dynamic or {})
            example = self.fake_mode.from_tensor(value, source=ShapeSource(source), symbolic_context=context)
            node = self._placeholder(source, value, example)
            self.inputs[-1].symbolic_context = context
            return node, example
        return self._placeholder(source, value, example), example

    def add_scalar_input(self, source: Source, value: int | float) -> tuple[torch.fx.Node, Any]:
        """A placeholder for a Python int/float made symbolic (SymInt/SymFloat)."""
        index = self._input_index.get(id(value))
        if index is not None and self.inputs[index].source == source:
            return self.inputs[index].node, self.inputs[index].example
        if self.shape_env is None:
            raise NeedsShapeEnv(source)
        shape_source = ShapeSource(source)
        if isinstance(value, int):
            example = self.shape_env.create_unspecified_symint_and_symbol(value, shape_source, DimDynamic.DYNAMIC)
        else:
            symbol = self.shape_env.create_unspecified_symbol(value, shape_source, DimDynamic.DYNAMIC)
            example = self.shape_env.create_symfloatnode(symbol, hint=value, source=shape_source)
        return self._placeholder(source, value, example), example

    def sym_size(self, node: torch.fx.Node, example: torch.Tensor, dim: int) -> tuple[torch.fx.Node, Any]:
        """A node for the symbolic size ``dim`` of the tensor ``node`` (one per node and dim)."""
        key = (node, dim)
        if key not in self._sym_sizes:
            size = example.size(dim)
            self._sym_sizes[key] = (self.create_node("call_function", torch.ops.aten.sym_size.int, (node, dim), {}, size),
                                    size)
        return self._sym_sizes[key]

    def _placeholder(self, source: Source, value: Any, example: Any) -> torch.fx.Node:
        name = _placeholder_name(source)
        if self._last_placeholder is not None:
            ctx = self.graph.inserting_after(self._last_placeholder)
        else:
            first = next(iter(self.graph.nodes), None)
            ctx = self.graph.inserting_before(first)
        with ctx:
            node = self.graph.placeholder(name)
        # FX names the generated forward's parameter after the target: use the node's
        # unique, sanitised name, so inputs whose paths differ only in symbols
        # (d['a"b'], d['']) never become the same parameter
        node.target = node.name
        node.meta["example_value"] = example
        node.meta["source"] = source
        self._last_placeholder = node
        self._input_index[id(value)] = len(self.inputs)
        version = example._version if isinstance(example, torch.Tensor) and not example.is_inference() else 0
        self.inputs.append(GraphInput(source, value, node, example, fake_version=version))
        return node

    def is_input(self, node: torch.fx.Node) -> bool:
        return node.op == "placeholder"

    def input_for(self, node: torch.fx.Node) -> GraphInput:
        """The graph input of placeholder ``node``."""
        return next(inp for inp in self.inputs if inp.node is node)

    def inputs_sharing_storage(self, example: torch.Tensor) -> list[GraphInput]:
        """Tensor inputs whose FakeTensor shares ``example``'s storage (inputs
        that alias each other at trace time share fake storages too)."""
        storage = storage_id(example)
        return [inp for inp in self.inputs if storage is not None and isinstance(inp.example, torch.Tensor)
                and storage_id(inp.example) == storage]

    # ---- operations --------------------------------------------------------------
    def run_fake(self, kind: str, target: Any, args: tuple, kwargs: dict) -> Any:
        """Run one operation on FakeTensor examples; map failures to graph breaks."""
        name = target if isinstance(target, str) else getattr(target, "__name__", repr(target))
        written = args[0] if args and writes.is_inplace_name(name) else None
        if isinstance(written, torch.Tensor) and torch._debug_has_internal_overlap(written) == 1:
            unimplemented(  # eager raises; a functionalizing backend (AOTAutograd) would not
                gb_type="in-place write to overlapping memory",
                context=f"{name} on a tensor with sizes {tuple(written.shape)} and strides {written.stride()}",
                explanation="More than one element of the written tensor is one memory location (an expand()); "
                "eager raises RuntimeError, so the operation runs natively.",
                hints=("Call .clone() (or .contiguous()) on the tensor before writing to it in place.",),
            )
        try:
            # the Python dispatcher lets composite kernels (F.pad...) take symbolic sizes, as under torch.compile
            with self.fake_mode, enable_python_dispatcher() if self.shape_env is not None else contextlib.nullcontext():
                if kind == "call_method":
                    result = getattr(args[0], target)(*args[1:], **kwargs)
                else:
                    result = target(*args, **kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException, GuardOnDataDependentSymNode) as e:
            if self.shape_env is None and (
                self.capture_dynamic_output_shape_ops if isinstance(e, DynamicOutputShapeException)
                else self.capture_scalar_outputs and isinstance(e, DataDependentOutputException)
            ):
                raise NeedsShapeEnv(name) from e
            _data_dependent_operator(f"{name}: {type(e).__name__}", HINT_DYNAMIC_OUTPUT_SHAPE
                                     if isinstance(e, DynamicOutputShapeException) else HINT_DATA_DEPENDENT)
        except UnsupportedOperatorException as e:
            unimplemented(
                gb_type="unsupported operator",
                context=f"{name}: {e}",
                explanation="This operator has no FakeTensor (meta) implementation, so its output cannot be inferred.",
                hints=("Call it outside the compiled function.",),
            )
        except Exception as e:  # eager would raise this too; let the native run raise it
            unimplemented(
                gb_type="operator error at trace time",
                context=f"{name} raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                explanation="Running the operation on FakeTensors failed; running it natively raises the real error "
                "(or, if it succeeds, bytegraph's metadata model lacks this case).",
                hints=("Check the arguments of this operation.",),
            )
        self._check_unbacked_outputs(name, result)
        return result

    def _check_unbacked_outputs(self, name: str, result: Any) -> None:
        """A data-dependent symbol the operation made must live in its output
        (``t.item()``, ``nonzero``); one made inside its kernel and dropped
        (``torch.full(size, t)`` reads ``t``'s value) has no home in the graph:
        a graph break, as when capture is off."""
        pending = self.shape_env.pending_fresh_unbacked_symbols if self.shape_env is not None else None
        if pending and not set(pending) <= free_unbacked_symbols(result):
            pending.clear()
            _data_dependent_operator(f"{name}: reads a tensor's value inside its kernel", HINT_DATA_DEPENDENT)

    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict, example: Any) -> torch.fx.Node:
        """Add one operation node (``kind`` ``call_function`` or ``call_method``).

        Raises:
            Unsupported: when FX would write part of the call as code taken from a
                user value (see :func:`_check_fx_renderable`).
        """
        _check_fx_renderable(kind, target, args, kwargs)
        node = self.graph.create_node(kind, target, args, kwargs)
        node.meta["example_value"] = example
        if self.current_tx is not None:
            node.meta["user_stack"] = tuple(self.current_tx.user_stack())
        if self.shape_env is not None and self.shape_env.pending_fresh_unbacked_symbols:
            # where the data-dependent symbols this node made live in its output (AOTAutograd needs it)
            node.meta["unbacked_bindings"] = compute_unbacked_bindings(self.shape_env, example)
        self.operations += 1
        return node

    def last_operations_may_raise(self, count: int) -> bool:
        """Whether one of the last ``count`` operation nodes may raise when the
        graph runs although its FakeTensor run did not: an operation that may
        raise on the data (see :func:`_may_raise_on_data`), or one whose code is
        not torch's own C kernels (a custom operator, a Python target)."""
        calls = (n for n in reversed(self.graph.nodes) if n.op in ("call_function", "call_method"))
        nodes = list(itertools.islice(calls, count))
        return len(nodes) < count or any(_may_raise_on_data(n) or not _torch_kernel(n.target) for n in nodes)

    def trace_state(self) -> dict[str, Any]:
        """Copies of the bookkeeping of inputs and nodes, for a trace that is
        taken back (:meth:`look_ahead`, a speculative trace) to restore."""
        return {name: copy.copy(getattr(self, name)) for name in _TAKEN_BACK}

    @contextlib.contextmanager
    def look_ahead(self):
        """Trace on without changing the graph (a scratch one meanwhile), its
        inputs, the operation count or the guards, all put back after."""
        saved, graph, guards = self.trace_state(), self.graph, self.guards.snapshot()
        self.graph = torch.fx.Graph()
        try:
            yield
        finally:
            self.__dict__.update(saved)
            self.graph = graph
            self.guards.restore(guards)

    def remove_node(self, node: torch.fx.Node) -> None:
        self.graph.erase_node(node)
        self.operations -= 1

    def op_count(self) -> int:
        """call_function / call_method nodes (what CompileCounter counts)."""
        return sum(1 for n in self.graph.nodes if n.op in ("call_function", "call_method"))

    def sets_grad_mode(self) -> bool:
        """Whether the graph switches grad mode (``torch._C._set_grad_enabled`` nodes)."""
        return any(n.target is torch._C._set_grad_enabled for n in self.graph.nodes)

    def mutates_inputs(self) -> bool:
        """Whether an operation in the graph may write to a graph input,
        directly or through a view of it (any tensor sharing its storage)."""
        input_storages = {storage_id(inp.example) for inp in self.inputs if isinstance(inp.example, torch.Tensor)}
        input_storages.discard(None)
        for node in self.graph.nodes:
            targets = writes.written_args(node)
            if targets is None or any(storage_id(t.meta["example_value"]) in input_storages for t in targets):
                return True
        return False

    def written_inputs(self) -> tuple[int, ...] | None:
        """Positions of the graph inputs an operation may write (directly or
        through a tensor sharing the storage); None when some write's target is
        unknown (an operation that wrote an argument the FakeTensor run found)."""
        storages: dict[int, list[int]] = {}
        for i, inp in enumerate(self.inputs):
            sid = storage_id(inp.example) if isinstance(inp.example, torch.Tensor) else None
            if sid is not None:
                storages.setdefault(sid, []).append(i)
        written: set[int] = set()
        for node in self.graph.nodes:
            targets = writes.written_args(node)
            if targets is None:
                return None
            for target in targets:
                written.update(storages.get(storage_id(target.meta["example_value"]), ()))
        return tuple(sorted(written))

    def _keep_dead_tensor_nodes(self, requested: dict[torch.fx.Node, None]) -> list[torch.fx.Node]:
        """Extra graph outputs (the generated code drops them) for operations that
        may raise on the data (``index_select`` out of range) or draw from the
        random generator, and whose tensor result no output, in-place write or
        state change depends on: eager raises or advances the generator, a
        backend that eliminated them as dead code would not. Each is output detached, so a
        backend does not prepare a backward for it (eager never runs one)."""
        calls = [n for n in self.graph.nodes if n.op in ("call_function", "call_method")]
        roots = [n for n in calls if n in requested or writes.is_inplace_name(getattr(n.target, "__name__", n.target))
                 or not isinstance(n.meta.get("example_value"), torch.Tensor)]
        live: set[torch.fx.Node] = set()
        while roots:
            node = roots.pop()
            if node not in live:
                live.add(node)
                roots.extend(node.all_input_nodes)
        dead = [n for n in calls if n not in live and isinstance(n.meta.get("example_value"), torch.Tensor)
                and (_may_raise_on_data(n) or _draws_random(n))]
        kept = []
        for node in dead:
            with self.graph.inserting_after(node):
                detached = self.graph.call_method("detach", (node,))
            detached.meta["example_value"] = node.meta["example_value"].detach()
            kept.append(detached)
        return kept

    def build_module(self, outputs: list[torch.fx.Node]) -> torch.fx.GraphModule:
        """Finish the graph with ``outputs`` and wrap it in a GraphModule.
        Placeholders nothing reads are dropped (their guards stay: see
        ``dropped_inputs``)."""
        self.graph.output(tuple(outputs))
        for inp in list(self.inputs):
            if not inp.node.users:
                self.graph.erase_node(inp.node)
                self.inputs.remove(inp)
                self.dropped_inputs.append(inp)
        return torch.fx.GraphModule(torch.nn.Module(), self.graph)

    def example_inputs(self) -> list:
        """What backends receive as example inputs, as torch.compile gives them: the
        real tensors, and the SymInt/SymFloat of each symbolic Python scalar (a plain
        int would be specialised by AOTAutograd, 0 and 1 even baked in as constants)."""
        return [inp.example if isinstance(inp.example, (torch.SymInt, torch.SymFloat)) else inp.value
                for inp in self.inputs]

    def backend_fake_mode(self, dynamic_output_shapes: bool = False) -> FakeTensorMode:
        """The FakeTensorMode backends compile under (made when a backend first
        reads the TracingContext's ``fake_mode``, where AOTAutograd and inductor
        look for it; a backend that never reads it, like ``eager``, pays nothing).

        It always has a ShapeEnv: inductor's FX graph cache and AOTAutograd's
        cache key their guards on one and bypass themselves without it. A
        dynamic trace hands over its own mode, whose ShapeEnv holds the trace's
        symbols. A static trace ran without a ShapeEnv (symbolic propagation
        costs several times more per operation), so a fresh mode with an empty
        ShapeEnv is made here, and every tensor input is converted into it
        with static shapes first: AOTAutograd's own conversion of the real
        inputs then finds those FakeTensors in the mode's memo and keeps every
        size static, as traced. The memo holds FakeTensors weakly, so this
        graph keeps them (``static_backend_inputs``) while it compiles.
        ``dynamic_output_shapes``: that ShapeEnv allows unbacked sizes (see
        :meth:`call_backend`).
        """
        if self.shape_env is not None:
            return self.fake_mode
        shape_env = ShapeEnv(allow_dynamic_output_shape_ops=dynamic_output_shapes,
                             allow_scalar_outputs=dynamic_output_shapes)
        mode = FakeTensorMode(shape_env=shape_env, export=True)
        self.static_backend_inputs = [mode.from_tensor(inp.value, static_shapes=True)
                                      for inp in self.inputs if isinstance(inp.value, torch.Tensor)]
        return mode

    def call_backend(self, compiler: Backend, gm: torch.fx.GraphModule) -> Callable:
        """``compiler(gm, example_inputs)`` under a :class:`BackendTracingContext`.
        A backend may need a data-dependent size the trace did not (the backward
        of ``y[mask] = values`` selects ``grad[mask]``): that failure is retried
        with unbacked sizes allowed, in the trace's ShapeEnv or, for a static
        trace, in the fresh one of :meth:`backend_fake_mode`."""
        def call(make_fake_mode: Callable[[], FakeTensorMode]) -> Callable:
            context = BackendTracingContext(make_fake_mode)
            with torch._guards.tracing(context):
                try:
                    return compiler(gm, self.example_inputs())
                finally:
                    context.settle()

        try:
            return call(self.backend_fake_mode)
        except Exception as e:
            if not _data_dependent_failure(e):
                raise
        if self.shape_env is not None:
            self.shape_env.settings = dataclasses.replace(
                self.shape_env.settings, allow_dynamic_output_shape_ops=True, allow_scalar_outputs=True)
            return call(self.backend_fake_mode)
        return call(lambda: self.backend_fake_mode(dynamic_output_shapes=True))

    def compile_subgraph(
        self, code: types.CodeType, f_globals: dict, tail: Callable[[PyCodegen], None], compiler: Backend, name: str
    ) -> PyCodegen:
        """Compile the graph and emit the code that calls it, then ``tail``.

        ``tail(codegen)`` emits what follows the graph call (rebuilding live
        values, replaying side effects, returning...). It runs twice: once in
        collect mode to learn which graph nodes must be outputs, then for real.

        Returns:
            The codegen holding the emitted instructions.

        Raises:
            BackendCompilerFailed: when the backend raises while compiling.
        """
        dry = PyCodegen(code, f_globals)
        dry.collecting = True
        tail(dry)
        outputs = list(dry.requested_outputs)
        outputs += self._keep_dead_tensor_nodes(dry.requested_outputs)
        codegen = PyCodegen(code, f_globals)
        if self.op_count() or outputs:
            gm = self.build_module(outputs)
            if enabled("graph"):
                get("graph").info("graph %s (%s):\n%s", len(self.compiled_graphs), name, format_graph(gm))
            start, imports_before = time.perf_counter(), imports.total()
            try:
                compiled = self.call_backend(compiler, gm)
            except Exception as e:
                raise BackendCompilerFailed(
                    f"backend {getattr(compiler, '__name__', compiler)!r} failed compiling a graph of {name}: "
                    f"{type(e).__name__}: {e}", format_graph(gm),
                    any(free_unbacked_symbols(n.meta.get("example_value")) for n in gm.graph.nodes)) from e
            if not callable(compiled):
                raise BackendCompilerFailed(f"backend {getattr(compiler, '__name__', compiler)!r} returned "
                                            f"{type(compiled).__name__} for a graph of {name}, not a callable",
                                            format_graph(gm))
            seconds, import_seconds = time.perf_counter() - start, imports.total() - imports_before
            subgraphs = getattr(compiled, "subgraph_count", 1)
            mutates = self.mutates_inputs()
            watched = tuple(
                i for i, inp in enumerate(self.inputs)
                if isinstance(inp.value, torch.Tensor) and not inp.value.is_inference()
            ) if mutates else ()
            written = self.written_inputs() if mutates else ()
            may_raise = any(n.op in ("call_function", "call_method") and _may_raise_on_data(n) for n in gm.graph.nodes)
            saved = written if written and may_raise else ()  # inference tensors too: they have no version counter
            compiled = rerun_natively_on_error(compiled, uses_rng(gm), watched, self.unscoped_grad_mode_changes == 0,
                                               saved, numpy_random.draws(gm), autocast_devices(gm))
            self.compiled_graphs.append(
                CompiledGraph(name, gm, self.op_count(), seconds, compiled, import_seconds, subgraphs))
            codegen.load_callable(compiled)
            codegen.load_sources([inp.source for inp in self.inputs])
            codegen.call(len(self.inputs))
            if outputs:
                codegen.emit("UNPACK_SEQUENCE", len(outputs))
                for node in outputs:
                    codegen.output_temps[node] = codegen.pop_to_temp("out")
            else:
                codegen.emit("POP_TOP")
        tail(codegen)
        return codegen


def _data_dependent_failure(error: BaseException) -> bool:
    """Whether ``error`` (or an exception it was raised from) is a FakeTensor
    data-dependent failure: an output size or value that depends on tensor data."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, (DynamicOutputShapeException, DataDependentOutputException, GuardOnDataDependentSymNode)):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


class BackendTracingContext(torch._guards.TracingContext):
    """The TracingContext a backend compiles in; its ``fake_mode`` is made by
    ``make_fake_mode()`` on first read (converting every input costs about a
    millisecond per tensor, which only compiling backends should pay)."""

    def __init__(self, make_fake_mode: Callable[[], FakeTensorMode]):
        super().__init__(None)
        self._make_fake_mode: Callable[[], FakeTensorMode] | None = make_fake_mode

    @property
    def fake_mode(self) -> FakeTensorMode | None:
        if self._make_fake_mode is not None:
            self._fake_mode, self._make_fake_mode = self._make_fake_mode(), None
        return self._fake_mode

    @fake_mode.setter
    def fake_mode(self, mode: FakeTensorMode | None) -> None:
        self._fake_mode, self._make_fake_mode = mode, None

    def settle(self) -> None:
        """The backend is done: a fake mode it never read is never made
        (``torch._guards.tracing`` reads ``fake_mode`` on exit)."""
        self._make_fake_mode = None


_RAISING_NAME = re.compile(r"linalg|cholesky|inverse|solve|lu|assert|multinomial|nonzero")


def _may_raise_on_data(node: torch.fx.Node) -> bool:
    """Whether an operation may raise because of tensor values: it takes an
    integer or bool tensor (indices: ``index_select``, ``gather``, ``embedding``,
    indexing with a tensor), or is a factorisation, solve or assertion."""
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    if _RAISING_NAME.search(str(name)):
        return True
    found = False

    def visit(value: Any) -> None:
        nonlocal found
        example = value.meta.get("example_value") if isinstance(value, torch.fx.Node) else None
        if isinstance(example, torch.Tensor) and not example.is_floating_point() and not example.is_complex():
            found = True

    torch.fx.node.map_aggregate((node.args, node.kwargs), visit)
    return found


def _torch_kernel(target: Any) -> bool:
    """Whether a node's target is a builtin operator, a C function or method of
    torch, or an ATen operator (not a custom operator or Python code)."""
    if isinstance(target, str):  # a Tensor method
        return True
    if isinstance(target, torch._ops.OpOverload):
        return target.namespace == "aten"
    return isinstance(target, (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType))


#: what :meth:`OutputGraph.trace_state` copies: the inputs, the operation count and the per-node caches
_TAKEN_BACK = ("inputs", "dropped_inputs", "operations", "_sym_sizes", "_input_index", "_last_placeholder",
               "identity_key_sources")

_RANDOM_NAME = re.compile(r"rand|dropout|bernoulli|normal|multinomial|uniform|exponential|geometric|cauchy|poisson|rrelu")


def _draws_random(node: torch.fx.Node) -> bool:
    """Whether operation ``node`` may draw from the random number generator (by
    the op's name, erring towards yes). A dropout function called with its
    training flag the constant False (an ``nn.Dropout`` in eval mode) draws
    nothing: every dropout function of ``torch`` and ``torch.nn.functional``
    takes that flag third (``training=``, or ``train=`` for the ``torch.*`` ones)."""
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    if node.op not in ("call_function", "call_method") or not _RANDOM_NAME.search(str(name)):
        return False
    if node.op == "call_function" and "dropout" in str(name):
        flag = node.args[2] if len(node.args) > 2 else node.kwargs.get("training", node.kwargs.get("train"))
        return flag is not False
    return True


def uses_rng(gm: torch.fx.GraphModule) -> bool:
    """Whether a node of ``gm`` may draw from the random number generator."""
    return any(_draws_random(node) for node in gm.graph.nodes)


@dataclasses.dataclass
class CompiledGraph:
    """One graph handed to the backend.

    Attributes:
        frame_name: name of the frame (or resume function) it came from.
        graph_module: the fx GraphModule given to the backend.
        op_count: call_function/call_method nodes.
        compile_seconds: time the backend took, in seconds (imports included).
        compiled: what the transformed code calls (the backend's callable).
        import_seconds: the part of it spent importing modules on first use
            (see :mod:`bytegraph.imports`).
        subgraphs: how many graphs the backend compiled it as: 1, or the
            ``subgraph_count`` of what it returned (the DDP bucket split,
            :mod:`bytegraph.backends.ddp`, compiles one per bucket group).
    """

    frame_name: str
    graph_module: torch.fx.GraphModule
    op_count: int
    compile_seconds: float
    compiled: Callable | None = None
    import_seconds: float = 0.0
    subgraphs: int = 1


def format_graph(gm: torch.fx.GraphModule) -> str:
    """The graph as a table: opcode, name, target, args, kwargs."""
    rows = [("opcode", "name", "target", "args", "kwargs")]
    for node in gm.graph.nodes:
        target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))
        rows.append((node.op, node.name, str(target), str(node.args), str(node.kwargs)))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _symbolic_context(value: torch.Tensor, dynamic: dict[int, Any]) -> StatelessSymbolicContext:
    sizes = [DimDynamic.DYNAMIC if i in dynamic else DimDynamic.STATIC for i in range(value.dim())]
    constraints = [dynamic.get(i) for i in range(value.dim())]
    return StatelessSymbolicContext(dynamic_sizes=sizes, constraint_sizes=constraints)


def storage_id(example: torch.Tensor) -> int | None:
    """Identity of a (fake) tensor's storage (views share it); None for
    layouts without one (sparse, mkldnn...)."""
    try:
        return example.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return None


#: constants FX writes into the generated forward as literals that evaluate back to
#: themselves (repr of an exact str is a string literal, never code)
_FX_LITERALS = (int, float, bool, complex, str, type(None), type(Ellipsis),
                torch.dtype, torch.device, torch.layout, torch.memory_format)


def _check_fx_renderable(kind: str, target: Any, args: tuple, kwargs: dict) -> None:
    """Graph-break unless FX can write this call without user text as code.

    FX renders a method name and keyword names as identifiers and other constants
    with ``repr`` (an enum by its member name): a method or keyword that is not an
    identifier, or a constant of another type (whose ``__repr__`` is user code),
    would become code of the generated ``forward``."""
    bad = None
    if kind == "call_method" and not is_plain_name(target):
        bad = f"method name {target!r}"
    for key in kwargs:
        if not is_plain_name(key):
            bad = f"keyword {key!r}"

    def visit(value: Any) -> None:
        nonlocal bad
        if isinstance(value, (list, tuple)) and (type(value) in (list, tuple, torch.Size)):
            for item in value:
                visit(item)
        elif type(value) is slice:
            visit((value.start, value.stop, value.step))
        elif type(value) is dict:
            for key, item in value.items():
                visit(key)
                visit(item)
        elif not (isinstance(value, (torch.fx.Node, torch._ops.OpOverload)) or type(value) in _FX_LITERALS):
            bad = bad or f"constant argument of type {type(value).__qualname__}"

    visit((args, kwargs))
    if bad is not None:
        name = target if isinstance(target, str) else getattr(target, "__name__", type(target).__name__)
        unimplemented(
            gb_type="argument FX cannot render",
            context=f"{name}: {bad}",
            explanation="The graph's generated code would hold this value as source text; "
            "user values never become code, so the call runs outside the graph.",
            hints=("Pass plain Python numbers, strings, dtypes or tensors to torch operations.",),
        )


def _placeholder_name(source: Source) -> str:
    """A readable placeholder name from the source's path, letters, digits and ``_``
    only (user text such as dict keys never reaches FX code as anything else)."""
    text = re.sub(r"[^0-9a-zA-Z_]+", "_", source.name()).strip("_").lower()
    return text if text[:1].isalpha() else f"input_{text}".rstrip("_")
