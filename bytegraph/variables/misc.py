"""Small VariableTracker kinds that have no other home."""
from __future__ import annotations

import functools
import inspect
import logging
import os
import types
from typing import TYPE_CHECKING, Any, Sequence

from bytegraph.breaks import unimplemented
from bytegraph.guards.guards import GlobalStateMatch
from bytegraph.guards.source import AttrSource, ConvertSource, WeakRefCallSource
from bytegraph.graph import deferred
from bytegraph.variables.base import BoundMethodVariable, VariableTracker
from bytegraph.variables.constant import ConstantVariable, getattr_or_raise, raise_traced

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.translator.base import InstructionTranslatorBase as Tx

VT = VariableTracker


class NullVariable(VariableTracker):
    """The NULL that ``PUSH_NULL``/``LOAD_GLOBAL`` put next to a callable for a call
    (below it up to 3.12, above it from 3.13), or an unbound local saved by
    ``LOAD_FAST_AND_CLEAR``."""

    def python_type(self) -> type:
        return type(None)

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.emit("PUSH_NULL")

    def __repr__(self) -> str:
        return "NULL"


#: methods of ``types.MappingProxyType`` that only read
_PROXY_READERS = frozenset({"items", "keys", "values", "get", "copy", "__getitem__", "__contains__", "__len__"})


class OpaqueConstantVariable(VariableTracker):
    """A library object used only by identity and for its attributes (e.g. a
    logger, a ``typing`` alias): read, compared and passed around, never traced
    into. Calls on it are graph breaks."""

    def __init__(self, value: Any, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def truthy(self, tx: Tx) -> bool:
        return bool(self.value)

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if isinstance(self.value, logging.Logger) and (method := logger_method(self.value, name)) is not None:
            return method
        value = getattr_or_raise(self.value, name)
        if self.source is not None:
            return tx.wrap(value, AttrSource(self.source, name))
        return tx.wrap_const(value)

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        """``type.__dict__["__mro__"].__get__(cls)``: a descriptor of ``type`` read
        on a class with a source is read natively, its value guarded through
        ``getter(cls)`` (what a metaclass shadowing ``cls.__mro__`` cannot change)."""
        desc = getattr(self.value, "__self__", None)
        if (getattr(self.value, "__name__", None) == "__get__"
                and type(desc) in (types.GetSetDescriptorType, types.MemberDescriptorType)
                and desc.__objclass__ is type and len(args) == 1 and not kwargs and args[0].source is not None
                and isinstance(cls := args[0].as_python_constant() if args[0].is_python_constant() else None, type)):
            return tx.wrap(self.value(cls), ConvertSource(args[0].source, self.value, f"type.{desc.__name__}"))
        if (type(desc) is types.MappingProxyType and getattr(self.value, "__name__", None) in _PROXY_READERS
                and all(a.is_python_constant() for a in (*args, *kwargs.values()))):
            # a read of a constant mapping proxy (inspect.Signature.parameters.items()): nothing can write
            # through a proxy, so the answer is the constant the real call gives now
            return tx.wrap_const(self.value(*[a.as_python_constant() for a in args],
                                            **{k: v.as_python_constant() for k, v in kwargs.items()}))
        return super().call_function(tx, args, kwargs)

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None:
            codegen.load_source(self.source)
        else:
            codegen.load_const(self.value)

    def __repr__(self) -> str:
        return f"OpaqueConstantVariable({type(self.value).__name__})"


class RuntimeStrVariable(VariableTracker):
    """``str(obj)`` of an object whose string is object's default repr
    (``<module.Class object at 0x...>``: its address, known only once the
    object exists): made after the graph by ``str`` of the rebuilt object.
    The trace cannot read it (reading it is a graph break)."""

    def __init__(self, obj: VT):
        super().__init__()
        self.obj = obj

    def python_type(self) -> type:
        return str

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_callable(str)
        codegen.reconstruct(self.obj)
        codegen.call(1)

    def __repr__(self) -> str:
        return f"RuntimeStrVariable({self.obj})"


class DeferredCallVariable(VariableTracker):
    """``warnings.warn`` or a logger's level method (``logger.info``, ``.log``
    ...): the call only affects the world outside the program's values, so with
    constant arguments it is recorded and made after the graph runs (see
    :mod:`bytegraph.graph.deferred`), attributed to the line eager reports,
    instead of breaking the graph.

    Args:
        fn: ``warnings.warn`` or the bound logger method.
        logger: the logger for a logger method, else None.
        level: the method's level (None for ``Logger.log``, whose first
            argument is the level).
    """

    def __init__(self, fn: Any, logger: logging.Logger | None = None, level: int | None = None):
        super().__init__()
        self.fn = fn
        self.logger = logger
        self.level = level

    def python_type(self) -> type:
        return type(self.fn)

    def truthy(self, tx: Tx) -> bool:
        return True

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        if not all(a.is_python_constant() for a in (*args, *kwargs.values())):
            unimplemented(
                gb_type="logging or warning with traced values",
                context=f"{name} with non-constant arguments",
                explanation="A warning or log message built from traced values is only known when the graph runs.",
                hints=("Log constants, or move the call out of the compiled function.",),
            )
        values = tuple(a.as_python_constant() for a in args)
        options = {k: v.as_python_constant() for k, v in kwargs.items()}
        traced = tuple(
            (frame.filename, frame.lineno, frame.name, t.f_globals) for t in tx.user_frames() for frame in [t.frame_summary()]
        )
        pieces_above = tx.root().runtime.resume_depth(tx.root().code)
        try:
            if self.logger is None:
                replay, call = self._bind_warning(tx, traced, values, options)
            else:
                replay, call = self._bind_log(values, options)
        except TypeError as e:
            unimplemented(
                gb_type="unsupported warning or log call",
                context=f"{name}{values}: {e}",
                explanation="These arguments are not ones bytegraph can replay after the graph; "
                            "the call runs natively so that it behaves exactly as in eager.",
                hints=("Call it with a message, category and stacklevel (warnings) or a message, format "
                       "arguments, extra and stacklevel (logging).",),
            )
        tx.output.side_effects.record_call(replay, (traced, pieces_above, *call), {})
        return ConstantVariable(None)

    def _bind_warning(self, tx: Tx, traced: tuple, values: tuple, options: dict) -> tuple[Any, tuple]:
        bound = inspect.signature(deferred.replay_warning).bind(traced, 0, *values, **options)
        bound.apply_defaults()
        message, category, stacklevel = bound.arguments["message"], bound.arguments["category"], bound.arguments["stacklevel"]
        category = deferred.warning_category(message, category)
        location = deferred.traced_location(traced, stacklevel)
        module = location[3].get("__name__") if location else None
        lineno = location[1] if location else None
        may_raise = functools.partial(deferred.warning_may_raise, category, message, module, lineno)
        if may_raise():
            unimplemented(
                gb_type="warning that may raise",
                context=f"{category.__name__}({message!r})",
                explanation="The warnings filters turn this warning into an exception, which must be raised "
                            "where eager raises it, before the rest of the frame runs.",
                hints=("Expected under 'error' warnings filters; the frame runs natively up to the warning.",),
            )
        tx.output.guards.add(GlobalStateMatch(None, may_raise, False, "warnings filters"))
        return deferred.replay_warning, (message, category, stacklevel, bound.arguments["source"])

    def _bind_log(self, values: tuple, options: dict) -> tuple[Any, tuple]:
        if self.level is None:
            if not values or type(values[0]) is not int:
                raise TypeError("level must be an integer")
            level, values = values[0], values[1:]
        else:
            level = self.level
        if not values:
            raise TypeError("missing the message")
        extra_options = set(options) - {"extra", "stacklevel"}
        if extra_options:
            raise TypeError(f"options {sorted(extra_options)} are not replayed (exc_info and stack_info "
                            "need the live frame)")
        return deferred.replay_log, (self.logger, level, values[0], values[1:], options.get("extra"),
                                     options.get("stacklevel", 1))

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_const(self.fn)


def logger_method(logger: logging.Logger, name: str) -> DeferredCallVariable | None:
    """The deferred call for ``logger.<name>`` if it is a level method."""
    if name == "log":
        return DeferredCallVariable(getattr(logger, name), logger)
    if name in deferred.LOG_LEVELS:
        return DeferredCallVariable(getattr(logger, name), logger, deferred.LOG_LEVELS[name])
    return None


class EnvironVariable(VariableTracker):
    """``os.environ``. Reads (``get``, ``[key]``, ``key in``) are folded at trace
    time and guarded on that variable's value, so changing the environment
    variable recompiles; anything else (writes, iteration) is a graph break."""

    def __init__(self, source=None):
        super().__init__(source)

    def python_type(self) -> type:
        return type(os.environ)

    def var_getattr(self, tx: Tx, name: str) -> VT:
        if name in ("get", "__getitem__", "__contains__"):
            return BoundMethodVariable(self, name)
        return super().var_getattr(tx, name)

    def contains_op(self, tx: Tx, item: VT) -> VT:
        return self.call_method(tx, "__contains__", [item], {})

    def call_method(self, tx: Tx, name: str, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if name not in ("get", "__getitem__", "__contains__") or kwargs or not all(
                a.is_python_constant() for a in args) or not args or (name != "get" and len(args) != 1):
            unimplemented(
                gb_type="unsupported environment access",
                context=f"os.environ.{name} with {len(args)} arguments",
                explanation="bytegraph folds os.environ.get(key[, default]), os.environ[key] and key in os.environ "
                            "with constant keys; other uses run natively.",
                hints=("Read the environment outside the compiled function.",),
            )
        key = args[0].as_python_constant()
        value = os.environ.get(key)
        tx.output.guards.add(GlobalStateMatch(None, _environ_getter(key), value, f"environment variable {key}"))
        if name == "__contains__":
            return ConstantVariable(value is not None)
        if value is None and name == "__getitem__":
            raise_traced(KeyError, key)
        if value is None:
            return args[1] if len(args) > 1 else ConstantVariable(None)
        return ConstantVariable(value)

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_const(os.environ)


@functools.lru_cache(maxsize=None)
def _environ_getter(key: str) -> Any:
    """``os.environ.get(key)`` as a guard's getter (one per key, so equal guards merge)."""
    return functools.partial(os.environ.get, key)


class WeakRefVariable(VariableTracker):
    """A ``weakref.ref`` read from a source; calling it reads the referent,
    guarded through ``ref()`` (so its death or replacement recompiles)."""

    def __init__(self, ref: Any, source: Any):
        super().__init__(source)
        self.ref = ref

    def python_type(self) -> type:
        return type(self.ref)

    def truthy(self, tx: Tx) -> bool:
        return True

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if args or kwargs:
            return super().call_function(tx, args, kwargs)
        return tx.wrap(self.ref(), WeakRefCallSource(self.source))


class WithExitVariable(VariableTracker):
    """The ``__exit__`` that ``BEFORE_WITH`` leaves on the stack."""

    def __init__(self, ctx: VT):
        super().__init__()
        self.ctx = ctx

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        tx.block_stack.remove(self.ctx)
        return self.ctx.exit(tx, list(args))

    def reconstruct(self, codegen: PyCodegen) -> None:
        """Leave the context's ``__exit__``: the generated code resumes inside
        the ``with`` block. A torch state context (grad mode) is re-created and
        entered again (its effect lives in global state, which the graph
        boundary resets), starting from the grad mode the original found;
        a user context is rebuilt as it is, already entered."""
        reenter = getattr(self.ctx, "reenter_on_reconstruct", False)
        if reenter and self.ctx.grad_mode_to_reenter() is not None:
            # re-made and entered under the mode eager's object found, which its __exit__ restores
            codegen.set_grad_enabled(self.ctx.grad_mode_to_reenter())
        codegen.reconstruct(self.ctx)
        if reenter:
            codegen.emit("COPY", 1)
            codegen.emit("LOAD_METHOD", "__enter__")
            codegen.call(0)
            codegen.emit("POP_TOP")
        codegen.load_attr("__exit__")


class NativeResultVariable(VariableTracker):
    """What an instruction run natively at a graph break pushes, while the
    translator looks ahead for the end of the untraceable stretch
    (``translator/native_stretch.py``): a value known only at run time, which
    no operation can read."""

    def __repr__(self) -> str:
        return "NativeResultVariable()"
