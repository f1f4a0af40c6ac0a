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
import warnings
from typing import Any, Callable, NoReturn

import torch
import torch._guards
import torch.fx
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
from bytegraph.breaks import HINT_DATA_DEPENDENT, HINT_DYNAMIC_OUTPUT_SHAPE, unimplemented
from bytegraph.graph import strict_dtypes, writes
from bytegraph.graph.fake_calls import call_on_fakes, has_index_tensor, needs_python_dispatcher
from bytegraph.graph.backend_compile import BackendCompile, CompiledGraph, may_raise_on_data, torch_kernel
from bytegraph.graph.side_effects import SideEffects
from bytegraph.guards.guards import GuardSet
from bytegraph.guards.shape_guards import ShapeSource
from bytegraph.guards.source import Source, is_plain_name


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
    #: the FakeTensor's storage size in bytes when it was made: smaller than the real one for a
    #: tensor whose storage outgrows its elements at offset 0 (shrunk by resize_, set_, a deepcopied view)
    fake_nbytes: Any = None


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
    (marked dynamic); the frame is traced again with a ShapeEnv. (A
    data-dependent value to capture starts one in place instead:
    :meth:`OutputGraph.start_shape_env`.)"""


def _data_dependent_operator(context: str, hint: str) -> NoReturn:
    unimplemented(gb_type="data-dependent operator", context=context, hints=(hint,),
                  explanation="The output of this operation (its value or its shape) depends on tensor data.")


class OutputGraph(BackendCompile):
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
        # data-dependent value starts one there (start_shape_env)
        self.shape_env = self._new_shape_env() if policy.needs_shape_env() else None
        self.fake_mode = _fake_mode(self.shape_env)
        self._sym_sizes: dict[tuple[torch.fx.Node, int], Any] = {}
        self.guards = GuardSet()
        self.side_effects = SideEffects()
        #: (cache key, result VT) of the lru_cache calls this trace traced: a repeat is eager's hit
        self.traced_cache_calls: list[tuple[tuple, Any]] = []
        self.inputs: list[GraphInput] = []
        self.dropped_inputs: list[GraphInput] = []
        self._input_index: dict[int, int] = {}
        self._last_placeholder: torch.fx.Node | None = None
        self.instruction_count = 0
        self.max_instructions = max_instructions
        #: the deepest nesting of inlined calls this trace may reach (bytegraph/recursion.py)
        self.max_inline_depth = 0
        self.compiled_graphs: list[CompiledGraph] = []
        #: the translator running the current instruction: graph nodes record its
        #: user stack as ``meta["user_stack"]`` (the HTML report links nodes to lines)
        self.current_tx: Any = None
        self._stack_texts: dict[tuple, str] = {}  # a user stack's ``meta["stack_trace"]`` text, made once
        self.unscoped_grad_mode_changes = 0
        self.open_states: list[Callable[[], Any]] = []
        # flags of the error_on_graph_break regions the trace is inside, outermost first (a resume
        # function's trace starts inside those open at its break): the innermost decides if a break raises
        self.break_regions: list[bool] = []
        self.region_at: dict[int, bool] = {}  # the innermost flag at each frame instruction run inside one
        self.identity_key_sources: dict[Any, None] = {}  # inputs used as dict keys (by identity), in order
        self.subclass_dispatch_disabled = 0
        self.operations = 0  # operation nodes in the graph (kept up to date, O(1) to read)
        #: an operation that may raise when the graph runs is protected by an ``except``
        #: clause of the traced code that could catch it (see ``step_in_try_block``)
        self.raises_into_handler = False
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
            node = self.graph.placeholder(name.lower())
        # FX names the generated forward's parameter after the target: the node's unique,
        # sanitised name, so inputs whose paths differ only in symbols (d['a"b'], d[''])
        # never become the same parameter; spelt as the source starts (``L_x_``, node ``l_x_``)
        # as torch.compile prints its graphs
        node.target = name[0] + node.name[1:]
        node.meta["example_value"] = example
        node.meta["source"] = source
        self._last_placeholder = node
        self._input_index[id(value)] = len(self.inputs)
        version = example._version if isinstance(example, torch.Tensor) and not example.is_inference() else 0
        tensor = isinstance(example, torch.Tensor) and writes.storage_id(example) is not None
        nbytes = example.untyped_storage().nbytes() if tensor else None
        self.inputs.append(GraphInput(source, value, node, example, fake_version=version, fake_nbytes=nbytes))
        return node

    def is_input(self, node: torch.fx.Node) -> bool:
        return node.op == "placeholder"

    def input_for(self, node: torch.fx.Node) -> GraphInput:
        """The graph input of placeholder ``node``."""
        return next(inp for inp in self.inputs if inp.node is node)

    def inputs_sharing_storage(self, example: torch.Tensor) -> list[GraphInput]:
        """Tensor inputs whose FakeTensor shares ``example``'s storage (inputs
        that alias each other at trace time share fake storages too)."""
        storage = writes.storage_id(example)
        return [inp for inp in self.inputs if storage is not None and isinstance(inp.example, torch.Tensor)
                and writes.storage_id(inp.example) == storage]

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
        strict_dtypes.check_dtypes(name, args, kwargs)
        try:
            result = self._fake_call(kind, target, args, kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException, GuardOnDataDependentSymNode) as e:
            if self.shape_env is None and (
                self.capture_dynamic_output_shape_ops if isinstance(e, DynamicOutputShapeException)
                else self.capture_scalar_outputs and isinstance(e, DataDependentOutputException)
            ):
                self.start_shape_env()
                return self.run_fake(kind, target, args, kwargs)
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
            if self.shape_env is None and has_index_tensor(args, kwargs):  # a kernel reading an index tensor's
                self.start_shape_env()  # data (tensor_split) needs one before eager is blamed
                return self.run_fake(kind, target, args, kwargs)
            unimplemented(
                gb_type="operator error at trace time",
                context=f"{name} raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                explanation="Running the operation on FakeTensors failed; running it natively raises the real error "
                "(or, if it succeeds, bytegraph's metadata model lacks this case).",
                hints=("Check the arguments of this operation.",),
            )
        self._check_unbacked_outputs(name, result)
        return result

    def start_shape_env(self) -> None:
        """Give this static trace a ShapeEnv from here on: it met a value to capture (``t.item()``,
        ``nonzero``). What it traced so far stands: with nothing symbolic yet, every input static and
        every size a number, a trace with a ShapeEnv from the start would have traced the same, so the
        frame is not traced again. Its tensor inputs get the all-static context they would have had."""
        self.shape_env = self._new_shape_env()
        self.fake_mode.shape_env, self.fake_mode.static_shapes = self.shape_env, False
        for inp in self.inputs:
            if isinstance(inp.example, torch.Tensor):
                inp.symbolic_context = _symbolic_context(inp.example, {})

    def _new_shape_env(self) -> ShapeEnv:
        """A ShapeEnv that allows the captures this trace was configured with."""
        return ShapeEnv(allow_scalar_outputs=self.capture_scalar_outputs,
                        allow_dynamic_output_shape_ops=self.capture_dynamic_output_shape_ops)

    def _fake_call(self, kind: str, target: Any, args: tuple, kwargs: dict) -> Any:
        """``target(*args, **kwargs)`` on FakeTensors, under torch's Python dispatcher when
        :func:`needs_python_dispatcher` says it may meet a symbol; should a run without it fail in a
        trace with a ShapeEnv (a symbol made inside a kernel, unseen in the arguments), the run
        is made again under it before the failure is believed."""
        dispatcher = self.shape_env is not None and needs_python_dispatcher(args, kwargs)
        before = len(self.shape_env.pending_fresh_unbacked_symbols) if self.shape_env is not None else 0
        try:
            return call_on_fakes(self.fake_mode, dispatcher, kind, target, args, kwargs)
        except Exception:
            if self.shape_env is None or dispatcher:
                raise
            del self.shape_env.pending_fresh_unbacked_symbols[before:]
        return call_on_fakes(self.fake_mode, True, kind, target, args, kwargs)

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
            stack = node.meta["user_stack"] = tuple(self.current_tx.user_stack())
            # as a traceback lists it: FX prints the innermost line above each run of nodes it made
            text = self._stack_texts.get(stack)
            if text is None:
                text = self._stack_texts[stack] = "".join(f"  {frame}\n" for frame in stack)
            node.meta["stack_trace"] = text
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
        return len(nodes) < count or any(may_raise_on_data(n) or not torch_kernel(n.target) for n in nodes)

    def trace_state(self) -> dict[str, Any]:
        """Copies of the bookkeeping of inputs and nodes, for a trace that is
        taken back (:meth:`look_ahead`, a speculative trace) to restore."""
        return {name: copy.copy(getattr(self, name)) for name in _TAKEN_BACK}

    def restore_trace_state(self, state: dict[str, Any]) -> None:
        """Put back what :meth:`trace_state` copied."""
        self.__dict__.update(state)

    @contextlib.contextmanager
    def look_ahead(self):
        """Trace on without changing the graph (a scratch one meanwhile), its
        inputs, the operation count or the guards, all put back after."""
        saved, graph, guards = self.trace_state(), self.graph, self.guards.snapshot()
        self.graph = torch.fx.Graph()
        try:
            yield
        finally:
            self.restore_trace_state(saved)
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
        input_storages = {writes.storage_id(inp.example) for inp in self.inputs if isinstance(inp.example, torch.Tensor)}
        input_storages.discard(None)
        for node in self.graph.nodes:
            targets = writes.written_args(node)
            if targets is None or any(writes.storage_id(t.meta["example_value"]) in input_storages for t in targets):
                return True
        return False

    def written_inputs(self) -> tuple[int, ...] | None:
        """Positions of the graph inputs an operation may write (directly or
        through a tensor sharing the storage); None when some write's target is
        unknown (an operation that wrote an argument the FakeTensor run found)."""
        storages: dict[int, list[int]] = {}
        for i, inp in enumerate(self.inputs):
            sid = writes.storage_id(inp.example) if isinstance(inp.example, torch.Tensor) else None
            if sid is not None:
                storages.setdefault(sid, []).append(i)
        written: set[int] = set()
        for node in self.graph.nodes:
            targets = writes.written_args(node)
            if targets is None:
                return None
            for target in targets:
                written.update(storages.get(writes.storage_id(target.meta["example_value"]), ()))
        return tuple(sorted(written))


#: what :meth:`OutputGraph.trace_state` copies: the inputs, the operation count and the per-node caches
_TAKEN_BACK = ("inputs", "dropped_inputs", "operations", "_sym_sizes", "_input_index", "_last_placeholder",
               "identity_key_sources", "traced_cache_calls", "break_regions")


def _symbolic_context(value: torch.Tensor, dynamic: dict[int, Any]) -> StatelessSymbolicContext:
    sizes = [DimDynamic.DYNAMIC if i in dynamic else DimDynamic.STATIC for i in range(value.dim())]
    constraints = [dynamic.get(i) for i in range(value.dim())]
    return StatelessSymbolicContext(dynamic_sizes=sizes, constraint_sizes=constraints)


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
    text = re.sub(r"[^0-9a-zA-Z]+", "_", source.name())
    return text if text[:1].isalpha() else f"input_{text}"


def _fake_mode(shape_env: ShapeEnv | None) -> FakeTensorMode:
    """The trace's FakeTensorMode (export=True: no backed item() symbol for 0-d
    inputs, whose guard names ``L['t'].item()``, which produce_guards cannot
    attribute to an input; item() is unbacked, branching on it breaks).

    Raises:
        Unsupported: when the configuration packages the first one imports fail
            to load for a reason of the machine's (torch makes its compilers'
            cache folder as it imports them): the frame runs natively, reported.
    """
    try:
        with imports.first_use("FakeTensorMode's config modules"):  # the first one imports them
            return FakeTensorMode(shape_env=shape_env, export=True)
    except OSError as exc:
        warnings.warn(f"bytegraph: torch's compiler packages could not be loaded ({type(exc).__name__}: {exc}); "
                      "compiled functions run natively. Is TORCHINDUCTOR_CACHE_DIR a folder that can be made "
                      "and written?", stacklevel=2)
        unimplemented(
            gb_type="torch's compiler packages failed to load",
            context=f"{type(exc).__name__}: {exc}",
            explanation="Tracing needs torch's FakeTensorMode, whose configuration packages make the compilers' "
            "cache folder as they load; that failed on this machine, so the frame runs natively.",
            hints=("Set TORCHINDUCTOR_CACHE_DIR to a folder that can be created and written.",),
        )
