"""Inlining: tracing a call of a Python function inside the current trace.

The callee's bytecode runs in a child :class:`InliningTranslator` that shares
the parent's OutputGraph (graph, guards, side effects). Arguments are bound the
way CPython binds them (positional, keyword, defaults, ``*args``,
``**kwargs``); a binding error is the user's TypeError and ends the trace so the
native run raises it.
"""
from __future__ import annotations

import builtins
import functools
import inspect
import types
import unittest
from typing import Any, Sequence

from bytegraph import compat
from bytegraph.breaks import BreakSite, unimplemented
from bytegraph.bytecode.analysis import closing_runs_code
from bytegraph.bytecode.versions import resumes_after_yield_from
from bytegraph.guards.guards import IdMatch
from bytegraph.guards.source import AttrSource
from bytegraph.translator.base import InstructionTranslatorBase
from bytegraph.translator.binding import bind_arguments
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.callables import polyfills
from bytegraph.variables.callables.functions import (
    CellVariable, NestedUserFunctionVariable, UserFunctionVariable, UserMethodVariable,
)
from bytegraph.variables.callables.torch_functions import TORCH_MODELS
from bytegraph.variables.constant import ConstantVariable, raise_traced
from bytegraph.variables.containers.iterators import GeneratorVariable
from bytegraph.variables.exceptions import ExceptionVariable, TracedException
from bytegraph.variables.objects.class_statements import CLASS_MODELS
from bytegraph.variables.tensors.graph_calls import graph_call
from bytegraph.variables.tensors.subclass_dispatch import MODELED_FUNCTIONS

VT = VariableTracker

#: Modules whose Python functions are never traced into: calls to them are
#: graph breaks (they do I/O, threading, introspection, or are compilers).
SKIP_MODULE_PREFIXES = (
    "logging", "threading", "multiprocessing", "pdb", "bdb", "traceback",
    "unittest.mock", "unittest.main", "unittest.runner", "unittest.loader", "unittest.suite", "unittest.result",
    "unittest.signals", "unittest.async_case", "unittest._log",
    "inspect", "importlib", "asyncio", "socket", "subprocess", "tempfile", "pickle",
    "bytegraph", compat.FRONTEND, "torch._compile", "torch._inductor", "torch.fx", "torch._subclasses",
    "torch.distributed", "torch.utils._python_dispatch", "torch.jit",
    "torch.autograd.profiler", "torch.autograd.graph", "torch.profiler", "torch._functorch", "torch.func",
    "torch._higher_order_ops", "torch.onnx", "torch.export", "tqdm", "pytest", "_pytest",
)

#: Functions of skipped modules that are plain Python over their arguments (no I/O,
#: no compiler state), traced like user code, with the functions nested in them:
#: (module, qualified name).
INLINED_ANYWAY = frozenset({
    ("torch.jit._trace", "_script_if_tracing.<locals>.wrapper"),  # @torch.jit.script_if_tracing
    ("torch.jit._script", "_unwrap_optional"),
    ("torch.jit", "annotate"),
    ("torch.distributed.fsdp._flat_param", "_same_storage_size"),
    ("torch.fx.immutable_collections", "_no_mutation"),  # immutable_list.append...: raises TypeError
    (f"{compat.FRONTEND}.external_utils", "wrap_numpy.<locals>.wrap"),  # torch.compiler.wrap_numpy's wrapper
})

#: the parts of ``unittest.case`` that run tests or do I/O, not traced as test code:
#: the runner's machinery (results, cleanups, sub-test outcomes) and ``assertWarns``
#: (it resets the warnings registry of every module); ``assertLogs`` lives in the
#: skipped ``unittest._log``.
TEST_RUNNER = frozenset({
    ("unittest.case", "TestCase.run"), ("unittest.case", "TestCase.debug"), ("unittest.case", "TestCase.__call__"),
    ("unittest.case", "TestCase.doCleanups"), ("unittest.case", "TestCase.doClassCleanups"),
    ("unittest.case", "TestCase._callSetUp"), ("unittest.case", "TestCase._callTestMethod"),
    ("unittest.case", "TestCase._callTearDown"), ("unittest.case", "TestCase._callCleanup"),
    ("unittest.case", "_Outcome"), ("unittest.case", "_AssertWarnsContext"),
})

_UNTRACEABLE_FLAGS = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE


def inline_call(tx: InstructionTranslatorBase, fn: Any, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
    """Trace ``fn(*args, **kwargs)`` for a user function VT; returns the result VT.

    Args:
        fn: a UserFunctionVariable / UserMethodVariable / NestedUserFunctionVariable
            (methods receive ``self`` already prepended in ``args``).

    Raises:
        Unsupported: when the callee cannot be traced; the user stack then
            includes the callee's frames.
    """
    target = getattr(fn, "fn", None)
    model = MODELED_FUNCTIONS.get(target) or TORCH_MODELS.get(target) or CLASS_MODELS.get(target)
    if model is not None:  # a torch function whose effect bytegraph models (handle_torch_function...)
        return model(tx, list(args), kwargs)
    if compat.registered_in_graph(getattr(fn, "fn", None)) is not None:  # allow_in_graph, nonstrict_trace
        return graph_call(tx, "call_function", fn.fn, args, kwargs)  # one node, not traced
    check_inlinable(tx, fn)
    if fn.source is not None and type(fn) is UserFunctionVariable:  # a function's __code__ may be swapped
        tx.output.guards.add(IdMatch.of(AttrSource(fn.source, "__code__"), fn.get_code()))
    bound = bind_arguments(tx, fn, args, kwargs)
    child = InliningTranslator(fn.get_code(), fn.get_globals(), bound, tx, fn)
    if child.code.co_flags & inspect.CO_GENERATOR:
        child.birth = generator_birth(tx)
        tx.root().generators.append(child)
        return GeneratorVariable(child)  # runs lazily, one yield per next()
    child.run()
    return child.return_value


def inline_class_body(tx: InstructionTranslatorBase, body: Any) -> tuple[dict[str, VT], VT]:
    """Trace a class statement's body (a function of no arguments whose locals
    are the class namespace): the namespace and the body's result (the
    ``__class__`` cell, or None)."""
    check_inlinable(tx, body)
    namespace: dict[str, VT] = {}
    child = InliningTranslator(body.get_code(), body.get_globals(), namespace, tx, body)
    child.run()
    return namespace, child.return_value


class InliningTranslator(InstructionTranslatorBase):
    """Translator for an inlined call; ``return_value`` holds its result."""

    def __init__(self, code: types.CodeType, f_globals: dict, symbolic_locals: dict[str, VT],
                 parent: InstructionTranslatorBase, fn: VT):
        super().__init__(code, f_globals, symbolic_locals, parent.output, parent)
        self.fn = fn
        self.return_value: VT | None = None
        self.started = False
        self.yielded: VT | None = None
        self.birth: BreakSite | None = None  # set for generator frames (see :func:`inline_call`)

    def load_freevar(self, name: str) -> VT:
        return self.fn.get_closure_cell(self, self.code.co_freevars.index(name))

    def store_freevar(self, name: str, value: VT) -> None:
        index = self.code.co_freevars.index(name)
        cell = self.stand_in(index)
        if cell is not None:
            cell.set(value)
            return
        shared = self.frame_cell_name(self.fn.fn.__closure__[index])
        if shared is not None:
            self.root().store_freevar(shared, value)
            return
        unimplemented(
            gb_type="closure cell write",
            context=f"nonlocal {name} assigned in {self.code.co_name}",
            explanation="Writing to a closure cell of a function defined outside the compiled region is not supported yet.",
            hints=("Return the new value instead of assigning a nonlocal.",),
        )

    def freevar_cell(self, name: str) -> VT:
        cell = self.stand_in(self.code.co_freevars.index(name))
        return cell if cell is not None else CellVariable({name: self.load_freevar(name)}, name)

    def stand_in(self, index: int) -> CellVariable | None:
        """The trace's cell that free variable ``index`` of this frame is: the
        function's own for a function made in the trace, the one a stand-in
        cell of a realized function stands for (see ``Tx.stand_in_cells``)."""
        if isinstance(self.fn, NestedUserFunctionVariable):
            return self.fn.closure_cell(index)
        known = self.stand_in_cells.get(id(self.fn.fn.__closure__[index]))
        return known[1] if known is not None else None

    def do_return(self, value: VT) -> None:
        self.return_value = value
        self.done = True

    # ---- generator frames ------------------------------------------------------------------
    def yield_value(self, value: VT) -> None:
        self.yielded = value

    def resume_generator(self, caller: InstructionTranslatorBase, throw: ExceptionVariable | None = None,
                         sent: VT | None = None) -> VT | None:
        """Run this generator frame to its next ``yield`` for ``caller`` (the
        frame doing ``next()``), with ``sent`` as the value of the suspended
        ``yield`` (``generator.send``; None: ``None``), or, with ``throw``, raise
        that exception at the suspension point first (``generator.throw``,
        ``close()``). Returns the yielded VT, or None once the frame has returned.

        Raises:
            TracedException: what escapes the frame, which is then finished. A
                StopIteration escaping becomes ``RuntimeError("generator raised
                StopIteration")`` whose ``__cause__`` and ``__context__`` are the
                StopIteration (PEP 479), as CPython's ``gen_send_ex`` does.
        """
        if self.done:
            return None
        self.caller = caller
        self.yielded = None
        try:
            if throw is not None:  # chained to what is handled from this frame on (_PyErr_ChainStackItem)
                throw.chain_context(self.handled_exception())
                self.handle_exception(self.instructions[self.ip - 1], TracedException(throw, fresh=False))
            elif self.started:
                self.push(sent or ConstantVariable(None))  # the value of the yield expression
            self.started = True
            while not self.done and self.yielded is None:
                self.step()
        except TracedException as e:
            self.done = True
            if not issubclass(e.exc.python_type(), StopIteration):
                raise
            error = ExceptionVariable(RuntimeError, [ConstantVariable("generator raised StopIteration")])
            error.set_cause(e.exc)
            error.context = e.exc
            raise TracedException(error, fresh=False) from None
        return self.yielded

    def close_generator(self, caller: InstructionTranslatorBase) -> None:
        """``generator.close()`` called from ``caller`` (CPython's ``gen_close``):
        a generator suspended in ``yield from`` first closes the generator it
        delegates to; then GeneratorExit is raised at the suspension point, so
        ``finally`` blocks and ``with`` exits run. A frame not started or
        already finished is just marked finished.

        Raises:
            TracedException: RuntimeError("generator ignored GeneratorExit")
                when the frame yields again (it stays suspended); any other
                exception escaping the frame (GeneratorExit is swallowed).
            Unsupported: when it delegates to an iterator other than a traced
                generator that has a ``close`` method.
        """
        if self.done or not self.started:
            self.done = True
            return
        try:
            delegate = self.yield_from_target()
            if isinstance(delegate, GeneratorVariable):
                delegate.frame.close_generator(caller)
            elif delegate is not None and hasattr(delegate.python_type(), "close"):
                unimplemented(
                    gb_type="generator close",
                    context=f"closing {self.code.co_qualname}, suspended in yield from {delegate}",
                    explanation="bytegraph closes only generators traced in the compiled region.",
                    hints=("Exhaust the generator, or close it outside the compiled function.",),
                )
            thrown = ExceptionVariable(GeneratorExit, [])
            thrown.chain_context(caller.handled_exception())
        except TracedException as e:  # closing the delegate failed: that error is thrown in instead
            thrown = e.exc
        try:
            if self.resume_generator(caller, throw=thrown) is not None:
                raise_traced(RuntimeError, "generator ignored GeneratorExit")
        except TracedException as e:
            if not issubclass(e.exc.python_type(), GeneratorExit):
                raise

    def yield_from_target(self) -> VT | None:
        """The iterator a generator suspended in ``yield from`` delegates to
        (CPython's ``_PyGen_yf``: the stack top when the next instruction is
        ``RESUME`` with an argument of 2 or more), else None."""
        following = self.instructions[self.ip]
        return self.stack[-1] if following.opname == "RESUME" and resumes_after_yield_from(following.arg) else None

    def has_pending_cleanup(self) -> bool:
        """Whether closing this generator could run code: it is suspended at a
        ``yield`` that a ``try``/``with`` of its own protects with more than
        ``except SomeException:`` clauses (:func:`closing_runs_code`; a ``yield
        from`` target is checked on its own, as a generator of the trace)."""
        return self.started and not self.done and closing_runs_code(self.decoded, self.ip - 1, self._global_value)

    def _global_value(self, name: str) -> Any:
        return self.f_globals[name] if name in self.f_globals else getattr(builtins, name, None)

    inline_call = inline_call  # the module function itself: one Python frame less per nested call
    inline_class_body = inline_class_body


def generator_birth(tx: InstructionTranslatorBase) -> BreakSite:
    """Where the compiled frame breaks so that a generator created by a call
    in ``tx`` is created natively, and the rest of the frame runs natively
    (a resume function's arguments would keep the generator alive longer than
    eager does). A generator made inside another generator's frame is created
    natively when that one is."""
    frame = tx
    while isinstance(frame, InliningTranslator):
        if frame.birth is not None:
            return frame.birth
        frame = frame.parent
    return tx.break_site(resume=False)


@functools.lru_cache(maxsize=4096)  # asked for every call the trace meets; modules are few
def is_skipped_module(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in SKIP_MODULE_PREFIXES)


def _listed(module: str, qualname: str, listing: frozenset[tuple[str, str]]) -> bool:
    """Whether the function is one of ``listing`` or nested in one (its lambdas...)."""
    return any(module == m and (qualname == q or qualname.startswith(q + ".")) for m, q in listing)


def is_test_code(module: str, qualname: str, f_globals: dict) -> bool:
    """Whether a function is a test's own code, traced wherever it is defined:
    a function defined in the body of a ``unittest.TestCase`` subclass (its
    assertion methods, a base class's ``subTest``), other than the test
    runner's machinery (:data:`TEST_RUNNER`)."""
    owner = f_globals.get(qualname.split(".", 1)[0])
    return (isinstance(owner, type) and issubclass(owner, unittest.TestCase)
            and not _listed(module, qualname, TEST_RUNNER))


def _not_traced(module: str, qualname: str, f_globals: dict) -> str | None:
    """Why a function of ``module`` named ``qualname`` is never traced into:
    ``"disabled"`` (one of torch's "do not compile" wrappers), ``"skipped"``
    (a function of a skipped module or of the test runner), or None (it is traced)."""
    if _listed(module, qualname, TEST_RUNNER):
        return "skipped"
    if _listed(module, qualname, INLINED_ANYWAY) or is_test_code(module, qualname, f_globals):
        return None
    if module.startswith(compat.FRONTEND) or module == "torch._compile":
        return "disabled"
    if is_skipped_module(module) and module != polyfills.__name__:
        return "skipped"
    return None


def never_traced(fn: Any) -> bool:
    """Whether a call of ``fn`` (a Python function, a method bound to one, or
    a ``functools.partial`` of either) is a graph break wherever it is met, by
    where the function is defined (see :func:`check_inlinable`): e.g. FSDP2's
    module hooks, which torch wraps not to be compiled. Other callables: False."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    func = getattr(fn, "__func__", fn)
    if not isinstance(func, types.FunctionType):
        return False
    return _not_traced(func.__globals__.get("__name__", "") or "", func.__code__.co_qualname, func.__globals__) is not None


def is_test_method(fn: VT) -> bool:
    """Whether ``fn`` is a method of a ``unittest.TestCase`` instance that is not
    the runner's: test code wherever it is defined (a test base class may
    install library functions as assertion methods)."""
    if not isinstance(fn, UserMethodVariable) or not issubclass(fn.obj.python_type(), unittest.TestCase):
        return False
    return not _listed(fn.fn.__globals__.get("__name__", ""), fn.fn.__code__.co_qualname, TEST_RUNNER)


def check_inlinable(tx: InstructionTranslatorBase, fn: VT) -> None:
    """Graph-break when ``fn`` must not be traced into."""
    code = fn.get_code()
    name = fn.get_name()
    if code.co_flags & _UNTRACEABLE_FLAGS:
        unimplemented(
            gb_type="coroutine call",
            context=f"call to coroutine function {name}",
            explanation="Coroutines and async generators are not traced.",
            hints=("Call it outside the compiled function.",),
        )
    module = fn.get_globals().get("__name__", "") or ""
    why = None if is_test_method(fn) else _not_traced(module, getattr(code, "co_qualname", name), fn.get_globals())
    if why == "disabled" and (module, name) == (f"{compat.FRONTEND}.decorators", "graph_break"):
        unimplemented(
            gb_type="explicit graph break",
            context=f"call to {compat.FRONTEND}.graph_break()",
            explanation="The program asks for a graph break here.",
            hints=("Remove the call to keep the code before and after it in one graph.",),
        )
    if why == "disabled":  # torch's "do not compile" wrappers
        if getattr(getattr(fn, "fn", None), "_torchdynamo_disable_recursive", True) is False:
            unimplemented(
                gb_type="function disabled for compilers, not its callees",
                context=f"call to {name}, marked torch.compiler.disable(recursive=False)",
                explanation="Its own frame runs natively; the functions it calls are compiled as frames of "
                "their own.",
                hints=("Use recursive=True to run its callees natively too.",),
            )
        wrapped = getattr(getattr(fn, "fn", None), "__wrapped__", None)
        target = getattr(wrapped, "__qualname__", name)
        unimplemented(
            gb_type="function disabled for compilers",
            context=f"call to {target}, which torch marks as not to be compiled",
            explanation="torch wraps this function so that compilers run it natively "
            "(torch.utils.checkpoint.checkpoint and torch.manual_seed are two).",
            hints=("It runs natively, the rest of the frame stays compiled.",),
        )
    if why == "skipped":
        unimplemented(
            gb_type="call to skipped function",
            context=f"call to {module}.{name}",
            explanation=f"Functions from {module.split('.')[0]!r} are not traced (they do I/O, threading, "
            "introspection or compilation).",
            hints=("Call it outside the compiled function, or accept the graph break.",),
        )
    if tx.depth >= tx.output.max_inline_depth:
        unimplemented(
            gb_type="inline depth exceeded",
            context=f"call to {name} at depth {tx.depth}",
            explanation="The chain of nested calls is deeper than Python's recursion limit leaves room for "
            "(or than bytegraph.config.max_inline_depth); the outermost call runs natively, as eager runs it.",
            hints=("Raise bytegraph.config.max_inline_depth (or sys.setrecursionlimit), or avoid recursion "
                   "this deep in the compiled region.",),
        )
