"""``torch.*`` callables and torch's global state.

:class:`TorchFunctionVariable` stands for a callable from the torch package. It
classifies the callable once:

- an **operator**: a torchgen binding of an ATen operator in any ``torch._C``
  namespace (:func:`aten_binding`), or a data constructor: calls become graph
  nodes; a Python function of torch never is one (it is traced, docs/torch_policy.md);
- a **state query** (``torch.is_grad_enabled`` ...): folded to a constant and
  guarded with a :class:`~bytegraph.guards.guards.GlobalStateMatch`;
- a **state context manager** (``no_grad``, ``enable_grad``,
  ``set_grad_enabled``, ``autocast``, ``inference_mode``): see
  :mod:`bytegraph.variables.torch_state`;
- a **pure helper** (``torch.Size``, ``torch.device``, ``torch.finfo`` ...):
  folded when its arguments are constants;
- a ``Tensor`` method or property getter called unbound
  (``torch.Tensor.add(x, y)``, ``torch.Tensor.shape.__get__(x)``): the same as
  ``x.add(y)`` / ``x.shape``;
- with tensor-subclass arguments, an operator dispatches through their
  ``__torch_function__`` (:mod:`~bytegraph.variables.tensors.subclass_dispatch`);
  ``torch._C.DisableTorchFunctionSubclass()`` turns that off in the trace; with
  NumPy arguments only ``torch.from_numpy``/``as_tensor``/``asarray``/``tensor``
  are traced;
- a **registered operator** (``torch.ops.<namespace>.<op>``, one of its
  overloads, or the ``CustomOpDef`` ``torch.library.custom_op`` returns): a
  graph node whose output comes from the operator's fake (meta) kernel, as
  under torch.compile; one without a fake kernel is a graph break;
- ``torch.vmap``/``torch.func.vmap`` of a torch C function (``torch.sin``,
  ``torch.Tensor.acos_``, an operator): the vmapped call is one graph node
  (:class:`VmapVariable`); of a Python function, see
  :mod:`bytegraph.variables.callables.func_transforms`;
- ``torch.fx.experimental.symbolic_shapes``' predicates and ``torch._check_with``
  are modelled (:mod:`~bytegraph.variables.tensors.symbolic`), and
  ``torch.autograd.Function.apply`` however it is reached (:data:`TORCH_MODELS`);
- anything else from torch written in Python is inlined like user code; the
  remaining C functions are graph breaks.
"""
from __future__ import annotations

import functools
import types
import weakref
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from bytegraph.breaks import unimplemented
from bytegraph.compat import FRONTEND
from bytegraph.variables.base import ConstantCallableVariable, VariableTracker
from bytegraph.variables.callables import func_purity, func_transforms, functions
from bytegraph.variables.constant import ConstantVariable, getattr_or_raise, raise_traced_from
from bytegraph.variables.objects import class_statements
from bytegraph.variables.containers.sequences import SizeVariable
from bytegraph.variables.operators import computes_from_arguments
from bytegraph.variables.tensors import scalar_args
from bytegraph.variables.tensors.graph_calls import dispatches, graph_call, overloaded_args
from bytegraph.variables.tensors.ndarray import NumpyNdarrayVariable, ndarray_to_tensor
from bytegraph.variables.tensors.symbolic import SHAPE_PREDICATES, runtime_check, shape_predicate
from bytegraph.variables.tensors.tensor import TensorVariable
from bytegraph.variables.torch_state.contexts import STATE_CONTEXTS, create_state_context
from bytegraph.variables.torch_state.dispatch_disabled import SubclassDispatchDisabledVariable
from bytegraph.variables.torch_state.saved_hooks import call_disable_saved_tensors_hooks
from bytegraph.variables.torch_state.sdpa_kernel import call_sdpa_kernel
from bytegraph.variables.torch_state.queries import STATE_SETTERS, fold_query, state_query
from bytegraph.variables.tx import as_subclass, dispatch_torch_function, make_tensor_subclass, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker

#: data constructors (no ATen operator of their own): a node when their data are traced values or
#: constants; a ``range`` as data reads as the list of its ints
DATA_CONSTRUCTORS = frozenset({torch.tensor, torch.as_tensor, torch.asarray})

#: calls with no effect on the traced program (usage logging): answered None, not recorded.
NO_OP_CALLS = frozenset({torch._C._log_api_usage_once})

#: helpers evaluated at trace time when every argument is a constant.
PURE_HELPERS = frozenset(
    {
        torch.device, torch.Size, torch.finfo, torch.iinfo, torch.promote_types, torch.can_cast,
        torch.is_tensor, torch.is_storage, torch.typename, torch.get_default_device,
        torch.is_floating_point, torch.is_complex, torch.result_type,
        torch.nn.modules.utils._pair, torch.nn.modules.utils._single, torch.nn.modules.utils._triple,
        torch.nn.modules.utils._ntuple,
    }
)

#: ``torch._check``-style assertions the user writes about (possibly data-dependent) scalars.
RUNTIME_CHECKS = frozenset({torch._check, torch._check_is_size, torch._check_with})

#: RNN kernels whose packed-sequence overload (``batch_sizes`` second) reads tensor data.
PACKED_RNN_OPS = frozenset({torch._VF.gru, torch._VF.lstm, torch._VF.rnn_tanh, torch._VF.rnn_relu})

#: The package of torch's own bytecode frontend (TorchDynamo). bytegraph never imports
#: or calls it; it only recognises torch functions by this module name: calls into it
#: are never traced (functions it wraps run natively), and its "is compiling" checks
#: answer True. tests/test_no_dynamo.py enforces that the name is never imported.

#: callables that mean "we are being compiled"; answered True, as under torch.compile.
IS_COMPILING_NAMES = frozenset(
    {
        ("torch.compiler", "is_compiling"), ("torch.compiler", "is_dynamo_compiling"),
        ("torch._utils", "is_compiling"), (f"{FRONTEND}.external_utils", "is_compiling"),
        (f"{FRONTEND}.eval_frame", "is_compiling"),
    }
)


#: ``has_torch_function`` checks: answered from the Python types of the arguments.
HAS_TORCH_FUNCTION = frozenset(
    {torch._C._has_torch_function, torch._C._has_torch_function_unary, torch._C._has_torch_function_variadic}
)


#: context managers that turn tensor-subclass dispatch off.
DISABLE_TORCH_FUNCTION = (torch._C.DisableTorchFunctionSubclass, torch._C.DisableTorchFunction)


def tensor_method_of(fn: Any) -> tuple[str, str] | None:
    """``("method", name)`` for ``torch.Tensor``'s C methods (``torch.Tensor.add``),
    ``("getter", name)`` for its C property getters (``torch.Tensor.shape.__get__``),
    else None."""
    if isinstance(fn, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return ("method", fn.__name__) if fn.__objclass__ in (torch._C.TensorBase, torch.Tensor) else None
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, types.GetSetDescriptorType) and getattr(fn, "__name__", None) == "__get__" and (
        owner.__objclass__ in (torch._C.TensorBase, torch.Tensor)
    ):
        return "getter", owner.__name__
    return None


@functools.cache
def _is_aten_name(name: str) -> bool:
    """Whether the dispatcher has an ``aten::name`` operator (``"add"``, ``"hardswish_"``), of any
    overload. Asked per name (listing every operator of the dispatcher costs milliseconds): the
    JIT's registry holds the schemas of every dispatcher operator, and some of its own (``aten::len``),
    which the dispatcher does not find."""
    qualified = "aten::" + name
    for schema in torch._C._jit_get_schemas_for_operator(qualified):
        try:
            torch._C._dispatch_find_schema_or_throw(qualified, schema.overload_name)
        except RuntimeError:
            continue
        return True
    return False


@functools.cache
def binding_namespaces() -> tuple[Any, ...]:
    """The submodules of ``torch._C`` (``_nn``, ``_fft``, ``_linalg``, ``_special``, ``_sparse``,
    ``_nested``...), read from torch, not listed: the namespaces torchgen binds ATen operators in,
    beside ``torch._C._VariableFunctions`` (behind ``torch.<op>`` and ``torch._VF``)."""
    modules = tuple(m for m in vars(torch._C).values()
                    if isinstance(m, types.ModuleType) and m.__name__.startswith("torch._C."))
    return modules


def aten_binding(fn: Any) -> bool:
    """Whether ``fn`` is a torchgen binding of an ATen operator: a C function of
    ``torch._C._VariableFunctions`` or bound to a :func:`binding_namespaces` module, whose name
    is an ``aten::`` operator."""
    if not isinstance(fn, types.BuiltinFunctionType):
        return False
    if not _is_aten_name(fn.__name__):
        return False
    owner = fn.__self__  # None for ``torch._C._VariableFunctions``' static methods; any object for a bound method
    return any(owner is ns for ns in binding_namespaces()) or getattr(torch._C._VariableFunctions, fn.__name__,
                                                                      None) is fn


def is_torch_op(fn: Any) -> bool:
    """Whether calls of ``fn`` go in the graph as nodes: an ATen binding (:func:`aten_binding`)
    or a data constructor. A Python function never is, whatever ``torch.overrides`` lists: it is
    traced, and the bindings it reaches are the nodes (docs/torch_policy.md)."""
    return aten_binding(fn) or _in(fn, DATA_CONSTRUCTORS)


def _in(fn: Any, table: frozenset) -> bool:
    try:
        return fn in table
    except TypeError:  # unhashable
        return False


def registered_op(fn: Any) -> torch._ops.OpOverload | torch._ops.OpOverloadPacket | None:
    """The dispatcher operator ``fn`` calls: ``fn`` itself for ``torch.ops.<ns>.<op>``
    (an ``OpOverloadPacket``) and ``torch.ops.<ns>.<op>.<overload>`` (an
    ``OpOverload``), the default overload for a ``torch.library.custom_op``
    object (a ``CustomOpDef``, whose ``__call__`` calls it); else None."""
    if isinstance(fn, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return fn
    if isinstance(fn, torch._library.custom_ops.CustomOpDef):
        return fn._opoverload
    return None


def is_compiling_query(fn: Any) -> bool:
    return (getattr(fn, "__module__", None), getattr(fn, "__name__", None)) in IS_COMPILING_NAMES


def is_torch_callable(fn: Any) -> bool:
    """Whether ``fn`` belongs to the torch package and gets the torch treatment."""
    if registered_op(fn) is not None:
        return True
    try:
        hash(fn)
    except TypeError:
        return False
    if state_query(fn) is not None or is_torch_op(fn) or fn in PURE_HELPERS or fn in RUNTIME_CHECKS or is_compiling_query(fn) or (
        fn in HAS_TORCH_FUNCTION or fn in NO_OP_CALLS or fn in SHAPE_PREDICATES or tensor_method_of(fn) is not None
    ):
        return True
    if isinstance(fn, type) and issubclass(fn, STATE_CONTEXTS + DISABLE_TORCH_FUNCTION):
        return True
    module = getattr(fn, "__module__", None) or ""
    if not isinstance(fn, types.BuiltinFunctionType):
        return False
    if module == "":  # a C binding without a module: torch's when bound to a torch module or class
        owner = getattr(fn, "__self__", None)
        if owner is None:  # a static C function (``torch.Tensor._make_subclass``), not a builtin type's
            return not computes_from_arguments(fn)
        if isinstance(owner, types.ModuleType):
            return owner.__name__.startswith("torch")
        return isinstance(owner, type) and owner.__module__.startswith("torch")
    return module.startswith("torch")


class TorchFunctionVariable(ConstantCallableVariable):
    """A callable from the torch package (see module docstring)."""

    def var_getattr(self, tx: Tx, name: str) -> VT:
        return wrap_const(tx, getattr_or_raise(self.fn, name))

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        fn = self.fn
        if fn in NO_OP_CALLS:
            return ConstantVariable(None)
        state = state_query(fn)
        if state is not None and not kwargs and all(a.is_python_constant() for a in args):
            getter = functools.partial(fn, *(a.as_python_constant() for a in args)) if args else fn
            value = fold_query(tx, getter, state)
            if fn is torch._C._is_torch_function_enabled and tx.output.subclass_dispatch_disabled:
                return ConstantVariable(False)  # inside DisableTorchFunctionSubclass in the trace
            return value
        if is_compiling_query(fn):
            return ConstantVariable(True)
        if fn in STATE_SETTERS:
            return STATE_SETTERS[fn](tx, args, kwargs)
        if fn in HAS_TORCH_FUNCTION:
            values = args[0].unpack_var_sequence(tx) if fn is torch._C._has_torch_function else list(args)
            return ConstantVariable(any(dispatches(tx, v) for v in values))
        if isinstance(fn, type) and issubclass(fn, STATE_CONTEXTS):
            return create_state_context(tx, fn, args, kwargs)
        if isinstance(fn, type) and issubclass(fn, DISABLE_TORCH_FUNCTION) and not args and not kwargs:
            return SubclassDispatchDisabledVariable(fn)
        method = tensor_method_of(fn)
        if method is not None and args and isinstance(args[0], TensorVariable):
            if method[0] == "getter" and len(args) == 1 and not kwargs:
                return args[0].var_getattr(tx, method[1])
            if method[0] == "method":
                return args[0].call_method(tx, method[1], list(args[1:]), kwargs)
        if any(isinstance(a, NumpyNdarrayVariable) for a in (*args, *kwargs.values())):
            return ndarray_to_tensor(tx, fn, args, kwargs)
        if fn is torch._C.TensorBase._make_subclass:
            return make_tensor_subclass(tx, args, kwargs)
        if fn is torch._C.TensorBase.__new__ and len(args) == 2 and not kwargs and isinstance(args[1], TensorVariable):
            return as_subclass(tx, args[1], args[0])  # Tensor.__new__(cls, t): an alias of t, as cls
        op = registered_op(fn)
        if op is not None:
            return call_registered_op(tx, op, args, kwargs)
        scalars = scalar_args.read_as_scalars(tx, "call_function", fn, args, kwargs) if is_torch_op(fn) else None
        if scalars is not None:  # torch.full(size, t): t.item() where eager reads it
            args, kwargs = scalars
        if is_torch_op(fn) and overloaded_args(tx, [*args, *kwargs.values()]):
            return dispatch_torch_function(tx, self, args, kwargs)
        if fn in RUNTIME_CHECKS:
            return runtime_check(tx, fn, args, kwargs)
        if fn in SHAPE_PREDICATES:
            return shape_predicate(tx, fn, args, kwargs)
        if fn is torch.Size and len(args) == 1 and not kwargs:
            return SizeVariable(args[0].unpack_var_sequence(tx))
        if fn in PACKED_RNN_OPS and len(args) > 1 and isinstance(args[1], TensorVariable) and (
            args[1].example.dtype == torch.int64 and args[1].example.dim() == 1
        ):
            unimplemented(
                gb_type="packed sequence RNN",
                context=f"torch._VF.{fn.__name__} on a PackedSequence",
                explanation="The packed RNN kernel reads the batch sizes' values, which FakeTensors do not have; "
                "it runs natively.",
                hints=("Pad the batch instead of packing it, or accept the graph break.",),
            )
        constant_args = all(a.is_python_constant() for a in args) and all(
            v.is_python_constant() for v in kwargs.values()
        )
        if fn in PURE_HELPERS and constant_args:
            values = [a.as_python_constant() for a in args]
            kw = {k: v.as_python_constant() for k, v in kwargs.items()}
            return wrap_const(tx, fn(*values, **kw))
        if fn in DATA_CONSTRUCTORS and args and args[0].is_python_constant() and type(
                args[0].as_python_constant()) is range:  # torch.tensor(range(n)): the same data as a list, which FX writes
            args = [wrap_const(tx, list(args[0].as_python_constant())), *args[1:]]
        if is_torch_op(fn) or fn in PURE_HELPERS:
            return graph_call(tx, "call_function", fn, args, kwargs)
        if isinstance(fn, types.FunctionType):  # torch's Python (a func __torch_function__ was given): traced
            return tx.inline_call(functions.UserFunctionVariable(fn), list(args), kwargs)
        unimplemented(
            gb_type="unsupported torch function",
            context=f"call to {getattr(fn, '__module__', '?')}.{getattr(fn, '__name__', fn)}",
            explanation="This torch function is not a tensor operation bytegraph can put in a graph.",
            hints=("Call it outside the compiled function.",),
        )

    def __repr__(self) -> str:
        return f"TorchFunctionVariable({getattr(self.fn, '__name__', self.fn)})"


#: namespaces whose operators FakeTensorMode implements itself (meta functions, decompositions)
BUILTIN_OP_NAMESPACES = frozenset({"aten", "prims", "prim"})


def call_registered_op(tx: Tx, op: torch._ops.OpOverload | torch._ops.OpOverloadPacket, args: Sequence[VT],
                       kwargs: dict[str, VT]) -> VT:
    """``op(*args, **kwargs)`` as one graph node, its output computed by the
    operator's fake kernel (``register_fake``, a Meta or composite kernel).

    An operator whose schema writes an argument (``mutates_args``) marks its
    node, so the graph's guards treat its tensor arguments as possibly written
    (``OutputGraph.mutates_inputs``). The fake kernel's Python values other than
    None stand for what the real kernel computes, which may differ, so such an
    output is a graph break.

    Raises:
        Unsupported: ``custom operator without fake kernel`` when no overload of a
            ``torch.library`` operator has a fake or meta kernel (FakeTensors
            cannot run it); the errors of :func:`graph_call` otherwise.
    """
    overloads = [op] if isinstance(op, torch._ops.OpOverload) else [getattr(op, n) for n in op.overloads()]
    name = overloads[0]._schema.name if overloads else str(op)  # "mylib::twice"
    namespace = name.split("::")[0]
    if namespace not in BUILTIN_OP_NAMESPACES and not any(
        torch._library.utils.has_fake_kernel(o) for o in overloads
    ):
        unimplemented(
            gb_type="custom operator without fake kernel",
            context=f"call to {name}",
            explanation="The operator has no fake (meta) kernel, so the shapes and dtypes of its outputs cannot be "
            "computed without running it; it runs natively.",
            hints=("Register one with torch.library.register_fake (or @op.register_fake for a custom_op), "
                   "returning empty tensors of the output shapes.",),
        )

    def check(example: Any) -> None:
        values = example if isinstance(example, (tuple, list)) else (example,)
        if namespace not in BUILTIN_OP_NAMESPACES and any(
            v is not None and not isinstance(v, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool))
            for v in values
        ):
            unimplemented(
                gb_type="custom operator returning a Python value",
                context=f"{name} returned {type(example).__name__}",
                explanation="The value a fake kernel returns need not be what the real kernel returns; the call "
                "runs natively.",
                hints=("Return tensors from the operator.",),
            )

    mutates = any(o._schema.is_mutable for o in overloads)
    return graph_call(tx, "call_function", op, args, kwargs, check=check, mutates_args=mutates)


class AutogradFunctionApplyVariable(VariableTracker):
    """``MyFunction.apply`` of a ``torch.autograd.Function`` subclass: the call
    goes in the graph as one node, so autograd uses the user's ``backward``
    (backends that trace the joint graph run it too). The ``forward`` is run on
    FakeTensors once while tracing, to infer its outputs."""

    def __init__(self, fn_cls: type):
        super().__init__()
        self.fn_cls = fn_cls

    def python_type(self) -> type:
        return types.MethodType

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        class_statements.check_runs_natively(tx, self.fn_cls)  # a Function defined in the compiled code
        return graph_call(tx, "call_function", _apply_target(self.fn_cls), args, kwargs)


#: the function behind ``torch.autograd.Function.apply`` (a classmethod): whatever way a call
#: reaches it bound to a subclass (``Cls.apply``, ``pscan = Cls.apply`` at module level, a bound
#: method in a dict, ``functools.partial(Cls.apply)``), the call is that Function's node
FUNCTION_APPLY = torch.autograd.Function.apply.__func__


def call_function_apply(tx: Tx, args: list[VT], kwargs: dict[str, VT]) -> VT:
    """The model of :data:`FUNCTION_APPLY` (``args[0]`` is the class it is bound to)."""
    cls = args[0].as_python_constant() if args and args[0].is_python_constant() else None
    if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
        unimplemented(
            gb_type="unsupported autograd.Function.apply",
            context=f"Function.apply bound to {args[0] if args else 'nothing'}",
            explanation="Function.apply is traced bound to a subclass of torch.autograd.Function only.",
            hints=("Call apply on the Function subclass.",),
        )
    return AutogradFunctionApplyVariable(cls).call_function(tx, args[1:], kwargs)


#: Python functions of torch modelled here rather than inlined (``inline_call`` consults them)
TORCH_MODELS: dict[Any, Callable[[Tx, list, dict], VT]] = {
    FUNCTION_APPLY: call_function_apply, torch.nn.attention.sdpa_kernel: call_sdpa_kernel,
    torch.autograd.graph.disable_saved_tensors_hooks: call_disable_saved_tensors_hooks}


_APPLY_TARGETS: "weakref.WeakKeyDictionary[type, Any]" = weakref.WeakKeyDictionary()


def _apply_target(fn_cls: type) -> Any:
    """A plain function calling ``fn_cls.apply``: an fx target the graph's code
    can name (fx cannot import a classmethod bound to a user class)."""
    target = _APPLY_TARGETS.get(fn_cls)
    if target is None:
        def target(*args: Any, **kwargs: Any) -> Any:
            return fn_cls.apply(*args, **kwargs)

        target.__name__ = target.__qualname__ = f"{fn_cls.__name__}_apply"
        _APPLY_TARGETS[fn_cls] = target
    return target


#: the C callables whose vmap is one graph node: running them (on FakeTensors at trace time, then in the
#: graph) runs no Python code, so nothing the trace does not see happens twice or not at all
_C_CALLABLES = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
                torch._ops.OpOverload, torch._ops.OpOverloadPacket)


class VmapVariable(ConstantCallableVariable):
    """``torch.vmap`` (also ``torch.func.vmap``). ``torch.vmap(fn, in_dims,
    out_dims, randomness, chunk_size=...)`` with constant arguments and ``fn`` a
    torch C function gives a :class:`VmappedVariable`; a Python function is
    :mod:`~bytegraph.variables.callables.func_transforms`'s; anything else is a graph
    break."""

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        if args and isinstance(args[0], (*func_purity.USER_FUNCTIONS, func_transforms.TransformedFunctionVariable)):
            return func_transforms.FuncTransformVariable(self.fn).call_function(tx, args, kwargs)
        values = [*args, *kwargs.values()]
        fn = args[0].as_python_constant() if args and args[0].is_python_constant() else None
        if not (isinstance(fn, _C_CALLABLES) and is_torch_callable(fn)) or not all(
            v.is_python_constant() for v in values
        ):
            unimplemented(
                gb_type="unsupported vmap",
                context=f"torch.vmap of {args[0] if args else 'nothing'}",
                explanation="Only the vmap of a torch C function (torch.sin, torch.Tensor.add_, an operator) with "
                "constant in_dims/out_dims, or of a Python function (a def or lambda, or one a torch.func transform "
                "returned), is traced; the vmap of another callable (a module, a bound method, functools.partial) "
                "runs natively.",
                hints=("Call torch.vmap outside the compiled function, or vmap a torch function directly.",),
            )
        try:
            vmapped = self.fn(*(a.as_python_constant() for a in args),
                              **{k: v.as_python_constant() for k, v in kwargs.items()})
        except Exception as e:  # noqa: BLE001 - eager's own error (bad in_dims...), raised in the trace
            raise_traced_from(e)
        return VmappedVariable(vmapped, fn)


class VmappedVariable(ConstantCallableVariable):
    """What ``torch.vmap(fn, ...)`` returned for a torch C function ``fn``
    (see :class:`VmapVariable`): a call is one graph node running it, its
    outputs computed on FakeTensors (vmap runs on them). An output that is one
    of the arguments (``torch.vmap(torch.Tensor.acos_)(x)`` returns ``x``) is
    that argument's VT; the node counts as writing its arguments (aliasing
    guard), as ``fn`` may be in place. Not rebuilt after the graph (eager makes
    a new wrapper per ``torch.vmap`` call): a graph break if live there."""

    def __init__(self, vmapped: Callable, fn: Callable):
        super().__init__(vmapped)
        self.wrapped_fn = fn

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        return graph_call(tx, "call_function", self.fn, args, kwargs, mutates_args=True)

    def reconstruct(self, codegen: PyCodegen) -> None:
        VariableTracker.reconstruct(self, codegen)

    def __repr__(self) -> str:
        return f"VmappedVariable({getattr(self.wrapped_fn, '__name__', self.wrapped_fn)})"
