"""Compiling the traced graph: the GraphModule made from it, the backend call
(under a TracingContext whose FakeTensorMode is made when a backend asks for
it), and the code that calls the compiled graph and unpacks its outputs
(:meth:`BackendCompile.compile_subgraph`, a mixin of
:class:`~bytegraph.graph.output_graph.OutputGraph`).
"""
from __future__ import annotations

import dataclasses
import re
import time
import types
from typing import Any, Callable

import torch
import torch._guards
import torch.fx
from torch.fx.experimental.symbolic_shapes import ShapeEnv, free_unbacked_symbols
from torch._subclasses.fake_tensor import FakeTensorMode

from bytegraph import collector, imports
from bytegraph.backends.checks import (BackendTimeout, OutputCheck, SharedStorage, backend_name, deadline,
                                       result_problem)
from bytegraph.breaks import BackendCompilerFailed
from bytegraph.config import config
from bytegraph.graph import numpy_random, writes
from bytegraph.graph.codegen import PyCodegen
from bytegraph.graph.fx_source import release_source_when_freed
from bytegraph.graph.rerun import autocast_devices, rerun_natively_on_error
from bytegraph.graph.sdp_flags import enters_sdpa_kernel
from bytegraph.graph.state_setters import left_for, switched_states, written_states
from bytegraph.graph.targets import bind_targets
from bytegraph.logs import enabled, get


Backend = Callable[[torch.fx.GraphModule, list], Callable]


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


class BackendCompile:
    """Compiling an :class:`~bytegraph.graph.output_graph.OutputGraph`'s graph with a backend (mixed into it)."""

    def _keep_dead_tensor_nodes(self, requested: dict[torch.fx.Node, None]) -> list[torch.fx.Node]:
        """Extra graph outputs (the generated code drops them) for operations that
        may raise on the data (``index_select`` out of range) or draw from the
        random generator, and whose tensor result no output, in-place write or
        state change depends on: eager raises or advances the generator, a
        backend that eliminated them as dead code would not. Each is output detached, so a
        backend does not prepare a backward for it (eager never runs one)."""
        calls = [n for n in self.graph.nodes if n.op in ("call_function", "call_method")]
        # a node giving anything but tensors (a tuple of them, unbind's, counts as tensors) may matter by itself
        roots = [n for n in calls if n in requested or writes.is_inplace_name(getattr(n.target, "__name__", n.target))
                 or not _tensors_only(n.meta.get("example_value"))]
        live: set[torch.fx.Node] = set()
        while roots:
            node = roots.pop()
            if node not in live:
                live.add(node)
                roots.extend(node.all_input_nodes)
        dead = [n for n in calls if n not in live and isinstance(n.meta.get("example_value"), torch.Tensor)
                and (may_raise_on_data(n) or draws_random(n))]
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
        ``dropped_inputs``); targets that fx would call by a wrong name are
        bound as objects (:mod:`bytegraph.graph.targets`)."""
        self.graph.output(tuple(outputs))
        for inp in list(self.inputs):
            if not inp.node.users:
                self.graph.erase_node(inp.node)
                self.inputs.remove(inp)
                self.dropped_inputs.append(inp)
        bind_targets(self.graph)
        return release_source_when_freed(torch.fx.GraphModule(torch.nn.Module(), self.graph))

    def example_inputs(self) -> list:
        """What backends receive as example inputs, as torch.compile gives them: the
        real tensors, and the SymInt/SymFloat of each symbolic Python scalar (a plain
        int would be specialised by AOTAutograd, 0 and 1 even baked in as constants)."""
        return [inp.example if isinstance(inp.example, (torch.SymInt, torch.SymFloat)) else inp.value
                for inp in self.inputs]

    def backend_fake_mode(self) -> FakeTensorMode:
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
        That ShapeEnv allows unbacked sizes (see :meth:`call_backend`).
        """
        if self.shape_env is not None:
            self._settle_input_autograd()
            return self.fake_mode
        shape_env = ShapeEnv(allow_dynamic_output_shape_ops=True, allow_scalar_outputs=True)
        mode = FakeTensorMode(shape_env=shape_env, export=True)
        self.static_backend_inputs = [mode.from_tensor(inp.value, static_shapes=True)
                                      for inp in self.inputs if isinstance(inp.value, torch.Tensor)]
        return mode

    def _settle_input_autograd(self) -> None:
        """Give the backend the inputs' autograd state as it is before the
        graph runs. The trace's FakeTensor of an input that an in-place
        operation wrote with a value requiring grad (``x.addcmul_(y, y)``)
        requires grad from then on, and a dynamic trace hands its mode over,
        so the backend (AOTAutograd, converting the real inputs through the
        mode's memo) would see that input requiring grad, and every output
        computed from it before the write too. Such an input's memo entry
        becomes a detached alias of its FakeTensor (the same symbolic sizes)
        with the real input's ``requires_grad``."""
        converter = self.fake_mode.fake_tensor_converter
        for inp in self.inputs:
            real, fake = inp.value, inp.example
            if isinstance(real, torch.Tensor) and isinstance(fake, torch.Tensor) and \
                    fake.requires_grad != real.requires_grad:
                settled = fake.detach()
                settled.requires_grad_(real.requires_grad)
                converter.set_tensor_memo(real, settled)

    def call_backend(self, compiler: Backend, gm: torch.fx.GraphModule) -> Callable:
        """``compiler(gm, example_inputs)`` under a :class:`BackendTracingContext`.
        A backend may need a data-dependent size the trace did not (the backward
        of ``y[mask] = values`` selects ``grad[mask]``), so the ShapeEnv it gets
        always allows unbacked sizes: the trace's own or, for a static trace,
        the fresh one of :meth:`backend_fake_mode`. (Refusing them first and
        retrying on the failure compiled such a graph twice on a cold cache and
        once on a warm one.)"""
        if self.shape_env is not None:
            self.shape_env.settings = dataclasses.replace(
                self.shape_env.settings, allow_dynamic_output_shape_ops=True, allow_scalar_outputs=True)
        context = BackendTracingContext(self.backend_fake_mode)
        # a backend that retraces the graph (aot_eager) runs it from the state the frame is called in
        with left_for(self.open_states), torch._guards.tracing(context), collector.running(), \
                deadline(config.backend_timeout, f"backend {backend_name(compiler)!r}"):
            try:
                return compiler(gm, self.example_inputs())
            finally:
                context.settle()

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
        for state in switched_states(self.open_states):  # the code after the graph switches them (``tail``)
            self.create_node("call_function", state.state.write, (*state.key, state.entry), {}, None)
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
            except (Exception, BackendTimeout) as e:
                raise BackendCompilerFailed(
                    f"backend {backend_name(compiler)!r} failed compiling a graph of {name}: "
                    f"{type(e).__name__}: {e}", format_graph(gm),
                    any(free_unbacked_symbols(n.meta.get("example_value")) for n in gm.graph.nodes)) from e
            problem = result_problem(compiled, len(self.inputs))
            if problem is not None:
                raise BackendCompilerFailed(f"backend {backend_name(compiler)!r} returned {problem} for a graph of "
                                            f"{name}", format_graph(gm))
            seconds, import_seconds = time.perf_counter() - start, imports.total() - imports_before
            subgraphs = getattr(compiled, "subgraph_count", 1)
            mutates = self.mutates_inputs()
            written = self.written_inputs() if mutates else ()
            # the version counters that tell whether the graph wrote an input before it raised: those of
            # the inputs it may write when they are known (no other input can move), else of every one
            watched = tuple(
                i for i, inp in enumerate(self.inputs) if (written is None or i in written)
                and isinstance(inp.value, torch.Tensor) and not inp.value.is_inference()
            ) if mutates else ()
            if written is None and self.raises_into_handler:
                written = watched  # targets unknown: copy every tensor input, so the rerun reaches the except
            may_raise = self.raises_into_handler or any(
                n.op in ("call_function", "call_method") and may_raise_on_data(n) for n in gm.graph.nodes)
            saved = written if written and may_raise else ()  # inference tensors too: they have no version counter
            # each graph input has a TensorMatch guard: with no symbolic size, it fixes shape and dtype
            saved_static = not any(isinstance(n, torch.SymInt) for i in saved for n in self.inputs[i].example.shape)
            check = OutputCheck(len(outputs), f"backend {backend_name(compiler)!r}",
                                shared_storages(outputs, self.inputs))
            compiled = rerun_natively_on_error(compiled, check, uses_rng(gm), watched,
                                               self.unscoped_grad_mode_changes == 0, saved, numpy_random.draws(gm),
                                               autocast_devices(gm), saved_static, enters_sdpa_kernel(gm),
                                               written_states(gm))
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


def shared_storages(outputs: list[torch.fx.Node], inputs: list) -> tuple[SharedStorage, ...]:
    """The groups of graph outputs that are distinct tensors of one storage in
    the trace (see :class:`~bytegraph.backends.checks.OutputCheck`); ``inputs``:
    the graph inputs (a group of views of one keeps no layout: it is not rebuilt)."""
    input_storages = {writes.storage_id(i.example) for i in inputs if isinstance(i.example, torch.Tensor)}
    examples = [node.meta.get("example_value") for node in outputs]
    by_storage: dict[int, list[int]] = {}
    twins: dict[int, list[tuple[int, int]]] = {}
    for j, example in enumerate(examples):
        storage = writes.storage_id(example) if isinstance(example, torch.Tensor) else None
        if storage is None:
            continue
        # two nodes of one example object, ``t`` and ``t.contiguous()``, are one object in eager too
        first = next((i for i in by_storage.get(storage, ()) if examples[i] is example), None)
        if first is None:
            by_storage.setdefault(storage, []).append(j)
        else:
            twins.setdefault(storage, []).append((j, first))
    groups = []
    for storage, same in by_storage.items():
        if len(same) < 2:
            continue
        layouts = tuple((tuple(examples[j].shape), examples[j].stride(), examples[j].storage_offset()) for j in same)
        numel = examples[same[0]].untyped_storage().nbytes() // examples[same[0]].element_size()
        static = all(type(n) is int for layout in layouts for n in (*layout[0], *layout[1], layout[2]))
        static = static and type(numel) is int and storage not in input_storages
        groups.append(SharedStorage(tuple(same), layouts if static else None, numel if static else None,
                                    tuple(twins.get(storage, ()))))
    return tuple(groups)


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


#: names of operations that may raise on values of any dtype (factorisations, solves, assertions...),
#: matched as whole words of the name (``lu`` and ``lu_solve``, not ``relu`` or ``gelu``)
_RAISING_NAME = re.compile(r"(?:^|_)(?:linalg|cholesky|inverse|solve|lu|assert|multinomial|nonzero)(?:_|$)")

#: operations that cannot raise on the values of integer or bool tensors (no index, divisor or
#: count among their arguments): arithmetic that wraps around, comparisons, bitwise logic, copies,
#: as methods, functions and operators, in place too (``add_``, ``operator.iadd``, ``__iadd__``)
_SAFE_ON_INTEGERS = frozenset(
    name for op in ("add", "sub", "mul", "neg", "abs", "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and",
                    "bitwise_or", "bitwise_xor", "bitwise_not", "logical_and", "logical_or", "logical_not",
                    "clone", "copy", "fill", "zero", "detach")
    for name in (op, f"{op}_", f"__{op}__", f"__i{op}__", f"__r{op}__", f"i{op}")
) | {"and_", "or_", "xor", "iand", "ior", "ixor", "__and__", "__or__", "__xor__", "__iand__", "__ior__", "__ixor__"}


def _tensors_only(value: Any) -> bool:
    """Whether ``value`` is a tensor, or a tuple or list of them (nested)."""
    if isinstance(value, (tuple, list)):
        return bool(value) and all(_tensors_only(v) for v in value)
    return isinstance(value, torch.Tensor)


def may_raise_on_data(node: torch.fx.Node) -> bool:
    """Whether an operation may raise when the graph runs although its
    FakeTensor run did not: because of tensor values (it takes an integer or
    bool tensor — indices: ``index_select``, ``gather``, ``embedding``,
    indexing with a tensor; divisors: ``//``, ``%`` — and is not one of
    :data:`_SAFE_ON_INTEGERS`, or is a factorisation, solve or assertion), or
    because its floating-point tensor arguments have different dtypes (the
    meta functions of ``linear``, ``mm``, ``addmm``, ``mv``, ``layer_norm``,
    ``index_add``... accept float32 with float64 where the kernels raise)."""
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    if _RAISING_NAME.search(str(name)):
        return True
    found = False
    floating: set[torch.dtype] = set()

    def visit(value: Any) -> None:
        nonlocal found
        example = value.meta.get("example_value") if isinstance(value, torch.fx.Node) else None
        if not isinstance(example, torch.Tensor):
            return
        if example.is_floating_point() or example.is_complex():
            floating.add(example.dtype)
        else:
            found = True

    torch.fx.node.map_aggregate((node.args, node.kwargs), visit)
    return len(floating) > 1 or (found and name not in _SAFE_ON_INTEGERS)


def torch_kernel(target: Any) -> bool:
    """Whether a node's target is a builtin operator, a C function or method of
    torch, or an ATen operator (not a custom operator or Python code)."""
    if isinstance(target, str):  # a Tensor method
        return True
    if isinstance(target, torch._ops.OpOverload):
        return target.namespace == "aten"
    return isinstance(target, (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType))


_RANDOM_NAME = re.compile(r"rand|dropout|bernoulli|normal|multinomial|uniform|exponential|geometric|cauchy|poisson|rrelu")


def draws_random(node: torch.fx.Node) -> bool:
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
    return any(draws_random(node) for node in gm.graph.nodes)
