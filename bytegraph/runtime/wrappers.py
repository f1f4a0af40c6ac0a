"""What ``bytegraph.compile`` returns: compiled functions and OptimizedModule.

Without a PEP 523 frame hook, a frame is compiled when it is entered through a
wrapper: the function returned by :func:`compile_function`, or an
:class:`OptimizedModule`'s ``forward``. Under the stance ``"force_eager"``
(``torch.compiler.set_stance``) a wrapper calls its function as it is.

A compiled module is made by :func:`optimized_module`: an instance of a subclass
of both :class:`OptimizedModule` and torch's own ``OptimizedModule`` class, so
that code written for torch.compile (``isinstance`` checks in Lightning, HF and
accelerate; ``_orig_mod``; ``dynamo_ctx(fn)``) accepts it. Nothing of torch's
class runs: its methods that would reach torch's frontend (``__call__``,
``__setstate__``, ``_initialize``) are overridden.
"""
from __future__ import annotations

import functools
import types
from typing import Any, Callable

import torch

from bytegraph import compat
from bytegraph.compat import forced_eager
from bytegraph.convert import CompileOptions
from bytegraph.runtime import metrics
from bytegraph.runtime.cache import FrameHooks, cache_for, run
from bytegraph.runtime.ddp import is_ddp, run_ddp
from bytegraph.translator.inline import never_traced
from bytegraph.variables.builder import COMPILED_FUNCTION


def compile_function(fn: Callable, options: CompileOptions) -> Callable:
    """Wrap a Python function (bound method, or ``functools.partial`` of one) so
    each call runs through its cache. An object whose class defines
    ``__call__`` in Python is compiled through that method; any other callable
    (a builtin, an ``OpOverload``, an ``lru_cache`` wrapper, whose frames are C)
    has no Python frame of its own to trace and runs natively, as under
    torch.compile.

    Raises:
        TypeError: when ``fn`` is not callable.
    """
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        inner = compile_function(fn.__func__, options)
        return types.MethodType(inner, fn.__self__)
    if isinstance(fn, functools.partial):
        return functools.partial(compile_function(fn.func, options), *fn.args, **fn.keywords)
    if not isinstance(fn, types.FunctionType):
        if not callable(fn):
            raise TypeError(f"bytegraph.compile: model_or_fn must be callable, got {type(fn).__name__}")
        call = getattr(type(fn), "__call__", None)
        if isinstance(call, types.FunctionType):
            return compile_function(types.MethodType(call, fn), options)
        return _run_natively(fn)
    cache = cache_for(fn.__code__, fn)

    @functools.wraps(fn)
    def compiled(*args: Any, **kwargs: Any) -> Any:
        nonlocal cache
        if fn.__code__ is not cache.code:  # the user assigned fn.__code__: compile the new code
            cache = cache_for(fn.__code__, fn)
        if forced_eager():
            return fn(*args, **kwargs)
        return run(cache, fn, args, kwargs, options)

    setattr(compiled, COMPILED_FUNCTION, fn)
    compiled._bytegraph_cache = cache  # type: ignore[attr-defined]
    return compiled


def _run_natively(fn: Callable) -> Callable:
    """A wrapper that calls ``fn`` as it is (it has no Python frame to compile)."""
    def native(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    try:
        functools.update_wrapper(native, fn)
    except AttributeError:  # objects without __name__/__doc__ (OpOverload has them; some C callables lack some)
        pass
    setattr(native, COMPILED_FUNCTION, fn)
    return native


class OptimizedModule(torch.nn.Module):
    """An ``nn.Module`` whose ``forward`` runs compiled (mirrors torch.compile's
    ``OptimizedModule``).

    The original module is ``_orig_mod`` (registered as a submodule, so
    ``state_dict`` keys are prefixed ``_orig_mod.`` as with torch.compile);
    every other attribute is forwarded to it, so parameters, ``train()`` /
    ``eval()`` and custom attributes behave as on the original. Reads, writes
    and deletes are all forwarded, and ``training`` mirrors the original's, so
    the wrapper never holds a diverging copy of the module's state.
    """

    _orig_mod: torch.nn.Module
    _bytegraph_compiled_module = True  # (COMPILED_MODULE: traced code calling it traces _orig_mod)
    #: attributes that belong to the wrapper itself
    _OWN_ATTRIBUTES = frozenset({"_orig_mod", "_compiled_call", "_options", "_hooks"})

    def __init__(self, module: torch.nn.Module, options: CompileOptions):
        torch.nn.Module.__init__(self)  # (not super(): torch's OptimizedModule may follow in the MRO)
        self._orig_mod = module
        self._options = options
        self._hooks = FrameHooks(options)  # (they hold the caches of the callees it routes)
        traced = module.module if is_ddp(module) else module  # DDP's own forward runs natively
        self._compiled_call = compile_function(_module_frame(type(traced)), options)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """One call of the module. Its hooks are traced with its ``forward``,
        except when one of them is a function bytegraph never traces (FSDP2's):
        then the module is called natively, hooks and all, with its ``forward``
        compiled (as torch.compile runs a compiled module's hooks), instead of
        tracing up to that hook and breaking there."""
        module = self._modules["_orig_mod"]  # (self._orig_mod would go through two __getattr__ calls)
        if is_ddp(module):  # DDP's forward runs natively and calls _call for its module
            return run_ddp(module, self._call, *args, **kwargs)
        return self._call(module, *args, **kwargs)

    def _call(self, module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        if forward_hooks_never_traced(module):
            return self._hooks.route_callee(module)(*args, **kwargs)
        return self._compiled_call(module, *args, **kwargs)

    @property  # type: ignore[override]
    def training(self) -> bool:
        return self._orig_mod.training

    @training.setter
    def training(self, value: bool) -> None:
        # nn.Module.__init__ sets the default before _orig_mod exists: ignore it
        if "_orig_mod" in self.__dict__.get("_modules", {}):
            self._orig_mod.training = value

    def __getattr__(self, name: str) -> Any:
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    # (nn.Module's own methods, not super()'s: torch's OptimizedModule may follow in the MRO)
    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._OWN_ATTRIBUTES or hasattr(type(self), name):
            torch.nn.Module.__setattr__(self, name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._OWN_ATTRIBUTES or hasattr(type(self), name):
            torch.nn.Module.__delattr__(self, name)
        else:
            delattr(self._orig_mod, name)

    @property
    def dynamo_ctx(self) -> CompileContext:
        """What torch's compiled modules call ``dynamo_ctx``: applied to a function,
        it compiles it with this module's options (Lightning compiles
        ``training_step`` this way)."""
        return CompileContext(self._options)

    def __repr__(self) -> str:
        return f"OptimizedModule({self._orig_mod!r})"

    def __reduce__(self) -> tuple:
        """Pickled as the module and the compile options (compiled code is not kept)."""
        return (optimized_module, (self._orig_mod, self._options))

    # container protocols are looked up on the type, past __getattr__: forward them
    def __bool__(self) -> bool:
        return bool(self._orig_mod)

    def __len__(self) -> int:
        return len(self._orig_mod)

    def __iter__(self) -> Any:
        return iter(self._orig_mod)

    def __getitem__(self, index: Any) -> Any:
        return self._orig_mod[index]

    def __contains__(self, item: Any) -> bool:
        return item in self._orig_mod


class CompileContext:
    """A compiled module's ``dynamo_ctx``: ``ctx(fn)`` is ``fn`` compiled with its options."""

    def __init__(self, options: CompileOptions):
        self.options = options

    def __call__(self, fn: Callable) -> Callable:
        return compile_function(fn, self.options)


@functools.cache
def _torch_compatible() -> type:
    """:class:`OptimizedModule` as a subclass of torch's ``OptimizedModule`` too.
    Every method of torch's class that would call torch's frontend is replaced:
    ``__call__`` is ``nn.Module``'s, ``__getstate__``/``__setstate__`` are
    ``nn.Module``'s (torch's would re-wrap ``forward`` with its frontend)."""
    torch_class = compat.torch_optimized_module()
    own = {
        "__call__": torch.nn.Module.__call__,
        "__getstate__": torch.nn.Module.__getstate__,
        "__setstate__": torch.nn.Module.__setstate__,
        "__doc__": OptimizedModule.__doc__,
        "__module__": OptimizedModule.__module__,
    }
    return type("OptimizedModule", (OptimizedModule, torch_class), own)


def optimized_module(module: torch.nn.Module, options: CompileOptions) -> OptimizedModule:
    """``module`` compiled: an :class:`OptimizedModule` that is an instance of
    torch's ``OptimizedModule`` class as well."""
    return _torch_compatible()(module, options)


_FRAMES: dict[tuple[str, types.CodeType | None], types.FunctionType] = {}


def _module_frame(cls: type) -> types.FunctionType:
    """The frame OptimizedModules of class ``cls`` compile: :func:`_call_module`
    named after the class, one per class (and its ``forward``), so that every
    instance shares one FrameCache, as torch.compile's cache on ``forward``'s code."""
    forward = getattr(cls, "forward", None)
    key = (cls.__qualname__, getattr(forward, "__code__", None))
    frame = _FRAMES.get(key)
    if frame is None:
        name = f"{cls.__qualname__}.__call__"
        code = _call_module.__code__.replace(co_name=name, co_qualname=name)
        frame = _FRAMES[key] = types.FunctionType(code, _call_module.__globals__, name)
    if isinstance(forward, types.FunctionType):  # (again after a reset, which forgets labels)
        metrics.label(frame.__code__, frame.__name__, forward)
    return frame


def _call_module(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    """The frame an OptimizedModule compiles: one call of the module, so that
    hooks and ``forward`` are traced together."""
    return module(*args, **kwargs)


def forward_hooks_never_traced(module: torch.nn.Module) -> bool:
    """Whether one of the forward (pre-)hooks ``module(...)`` would run,
    its own or a global one, is a function bytegraph never traces
    (:func:`~bytegraph.translator.inline.never_traced`), e.g. FSDP2's, which
    torch wraps not to be compiled."""
    module_mod = torch.nn.modules.module
    hook_dicts = (module._forward_pre_hooks, module._forward_hooks, module_mod._global_forward_pre_hooks,
                  module_mod._global_forward_hooks)
    if not any(hook_dicts):  # no hook at all: the common case, asked on every call of a compiled module
        return False
    return any(never_traced(hook) for hooks in hook_dicts for hook in hooks.values())
