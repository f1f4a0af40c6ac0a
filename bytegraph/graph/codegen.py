"""PyCodegen: emit the bytecode of a transformed frame.

The translator describes *what* must exist after the graph runs (the return
value, or at a graph break the stack and live locals, plus side effects) as
VariableTrackers; each VT's ``reconstruct`` calls back into this class to emit
the instructions that rebuild it. Tensors computed by the graph are read from
temporaries holding the graph's outputs.

Reconstruction runs twice: first in *collect* mode, which only records which
graph nodes must be outputs, then for real once the graph is compiled.
"""
from __future__ import annotations

import types
import weakref
from typing import Any, Callable

import torch.fx
from bytecode import CellVar, FreeVar, Instr, Label

from bytegraph.breaks import BreakSite, InternalError, Unsupported, unimplemented
from bytegraph.bytecode.lower import NO_ARG, Op, lower
from bytegraph.guards.source import AttrSource, GetItemSource

#: sources whose value :meth:`PyCodegen.load_sources` may read once for several inputs (plain paths)
_SHARED_KINDS = (AttrSource, GetItemSource)

#: classes (and their functions) that a class statement made at trace time
#: (:mod:`bytegraph.variables.objects.class_statements`), each with where the
#: compiled frame breaks to run that statement natively: eager makes new ones
#: on every call, so generated code never loads them
TRACE_MADE: weakref.WeakKeyDictionary[Any, BreakSite] = weakref.WeakKeyDictionary()


def _check_not_trace_made(value: Any) -> None:
    site = TRACE_MADE.get(value) if isinstance(value, (type, types.FunctionType)) else None
    if site is None:
        return
    try:
        unimplemented(
            gb_type="class made in the trace escapes",
            context=f"{value.__qualname__} is live after the graph",
            explanation="A class statement in the compiled function makes a new class on every call; the class, "
                        "an instance or a method of it that outlives the graph would be the trace's one class, "
                        "so the statement runs natively.",
            hints=("Define the class at module level, or keep it inside the compiled function.",),
        )
    except Unsupported as brk:
        site.relocate(brk)  # break at the class statement (or the call it is made under)
        raise


class PyCodegen:
    """Instruction buffer plus the knowledge needed to load values in a frame.

    Args:
        code: the code object whose frame the instructions run in (for which
            names are cells, free variables or plain locals).
        f_globals: that frame's globals (``LOAD_GLOBAL`` reads them directly).
        lineno: line number given to every emitted instruction.
    """

    def __init__(self, code: types.CodeType, f_globals: dict, lineno: int | None = None):
        self.code = code
        self.f_globals = f_globals
        self.lineno = lineno if lineno is not None else code.co_firstlineno
        self.ops: list[Op | Label] = []
        self.collecting = False
        self.requested_outputs: dict[torch.fx.Node, None] = {}
        self.output_temps: dict[torch.fx.Node, str] = {}
        self._vt_temps: dict[int, str] = {}
        #: during :meth:`load_sources`: the paths read once, and their temporaries
        self._shared_sources: frozenset | set = frozenset()
        self._source_temps: dict[Any, str] = {}
        self._temp_count = 0
        self.temps: list[str] = []
        self.closed_over: dict[str, None] = {}  # cells of the frame put in closures (LOAD_CLOSURE)

    # ---- raw emission ------------------------------------------------------------
    def emit(self, opname: str, arg: Any = NO_ARG) -> None:
        """Emit one instruction of the translator's vocabulary (CPython 3.11's
        opnames and calling convention); :attr:`instructions` lowers it to the
        running Python."""
        self.ops.append(Op(opname, arg, self.lineno))

    def label(self, label: Label) -> None:
        self.ops.append(label)

    @property
    def instructions(self) -> list[Instr | Label]:
        """What was emitted, as native instructions of the running Python."""
        return lower(self.ops)

    def new_temp(self, hint: str = "tmp") -> str:
        self._temp_count += 1
        name = f"___{hint}{self._temp_count}"
        self.temps.append(name)
        return name

    def delete_temps(self) -> None:
        """Delete every temporary made so far, so code that runs on in this frame
        (``locals()``, finalizers, memory) sees only the user's variables."""
        for name in self.temps:
            self.emit("DELETE_FAST", name)

    # ---- loads and stores -----------------------------------------------------------
    def load_const(self, value: Any) -> None:
        _check_not_trace_made(value)
        self.emit("LOAD_CONST", value)

    def load_callable(self, value: Any) -> None:
        """Push NULL and ``value`` so that ``call(n)`` can follow its arguments."""
        _check_not_trace_made(value)
        self.emit("PUSH_NULL")
        self.emit("LOAD_CONST", value)

    def call(self, nargs: int) -> None:
        self.emit("PRECALL", nargs)
        self.emit("CALL", nargs)

    def call_on_top(self, fn: Any, *args: Any) -> None:
        """With an object on top of the stack: ``fn(obj, *args)`` (``args``
        are VTs, rebuilt here), its result dropped; the object stays on top."""
        for op, arg in (("COPY", 1), ("PUSH_NULL", None), ("SWAP", 2), ("LOAD_CONST", fn), ("SWAP", 2)):
            self.emit(op) if arg is None else self.emit(op, arg)
        for arg in args:
            self.reconstruct(arg)
        self.call(1 + len(args))
        self.emit("POP_TOP")

    def set_grad_enabled(self, mode: bool) -> None:
        """Emit the statement ``torch._C._set_grad_enabled(mode)``."""
        self.load_callable(torch._C._set_grad_enabled)
        self.load_const(mode)
        self.call(1)
        self.emit("POP_TOP")

    def _deref(self, name: str) -> Any:
        if name in self.code.co_cellvars:
            return CellVar(name)
        if name in self.code.co_freevars:
            return FreeVar(name)
        return None

    def load_local(self, name: str) -> None:
        deref = self._deref(name)
        if deref is not None:
            self.emit("LOAD_DEREF", deref)
        else:
            self.emit("LOAD_FAST", name)

    def store_local(self, name: str) -> None:
        deref = self._deref(name)
        if deref is not None:
            self.emit("STORE_DEREF", deref)
        else:
            self.emit("STORE_FAST", name)

    def delete_local(self, name: str) -> None:
        deref = self._deref(name)
        self.emit("DELETE_DEREF" if deref is not None else "DELETE_FAST", deref if deref is not None else name)

    def load_closure(self, name: str) -> None:
        deref = self._deref(name)
        if deref is None:
            raise InternalError(f"{name} is not a cell or free variable of {self.code.co_name}")
        self.closed_over[name] = None
        self.emit("LOAD_CLOSURE", deref)

    def load_global(self, name: str, f_globals: dict) -> None:
        if f_globals is self.f_globals:
            self.emit("LOAD_GLOBAL", (False, name))
        else:
            self.load_const(f_globals)
            self.load_const(name)
            self.subscr()

    def store_global(self, name: str, f_globals: dict) -> None:
        """Store TOS into ``f_globals[name]``."""
        if f_globals is self.f_globals:
            self.emit("STORE_GLOBAL", name)
        else:
            self.load_const(f_globals)
            self.load_const(name)
            self.emit("STORE_SUBSCR")

    def load_attr(self, name: str) -> None:
        self.emit("LOAD_ATTR", name)

    def load_method(self, name: str) -> None:
        """Replace TOS by its method ``name``, ready for ``call(nargs)`` after the arguments."""
        self.emit("LOAD_METHOD", name)

    def subscr(self) -> None:
        self.emit("BINARY_SUBSCR")

    def load_source(self, source: Any) -> None:
        temp = self._source_temps.get(source)
        if temp is not None:
            self.emit("LOAD_FAST", temp)
            return
        source.reconstruct(self)
        if source in self._shared_sources:
            temp = self.new_temp("src")
            self.emit("COPY", 1)
            self.emit("STORE_FAST", temp)
            self._source_temps[source] = temp

    def load_sources(self, sources: list[Any]) -> None:
        """Push the value of each of ``sources`` in order (a graph's inputs). An
        attribute or item path that several of them go through is read once
        and kept in a temporary for the rest of the list (parameters of one
        submodule share ``self._modules['layer']``): fewer reads on every call."""
        uses: dict[Any, set] = {}  # a path -> the paths read from it next (and itself, when it is an input)
        for source in sources:
            uses.setdefault(source, set()).add(source)
            while source.base is not None:
                uses.setdefault(source.base, set()).add(source)
                source = source.base
        self._shared_sources = {s for s, after in uses.items() if len(after) > 1 and isinstance(s, _SHARED_KINDS)}
        try:
            for source in sources:
                self.load_source(source)
        finally:
            self._shared_sources, self._source_temps = frozenset(), {}

    def load_callable_source(self, source: Any) -> None:
        """Push NULL and the value of ``source``, ready for ``call(n)``."""
        self.emit("PUSH_NULL")
        self.load_source(source)

    def pop_to_temp(self, hint: str = "tmp") -> str:
        """Store TOS in a new temporary local; returns its name."""
        temp = self.new_temp(hint)
        self.emit("STORE_FAST", temp)
        return temp

    def store_temp(self, emit_value: Callable[[], None], hint: str = "tmp") -> str:
        """Run ``emit_value`` (which pushes one value) and store it in a new temporary."""
        emit_value()
        return self.pop_to_temp(hint)

    # ---- values ------------------------------------------------------------------------
    def reconstruct(self, vt: Any) -> None:
        """Push the value ``vt`` stands for. An object created in the trace is
        built once and reused, so identity is preserved (see
        ``VariableTracker.rebuilt_once``)."""
        temp = self._vt_temps.get(id(vt))
        if temp is not None:
            self.emit("LOAD_FAST", temp)
            return
        vt.reconstruct(self)
        if vt.source is None and (vt.mutable or vt.rebuilt_once):
            temp = self.new_temp("obj")
            self.emit("COPY", 1)
            self.emit("STORE_FAST", temp)
            self._vt_temps[id(vt)] = temp

    def load_graph_output(self, node: torch.fx.Node) -> None:
        """Push the graph's output for ``node`` (collect mode: request it)."""
        if self.collecting:
            self.requested_outputs[node] = None
            self.emit("LOAD_CONST", None)
            return
        self.emit("LOAD_FAST", self.output_temps[node])

