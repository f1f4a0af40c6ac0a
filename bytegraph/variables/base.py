"""VariableTracker: what the translator's stack and locals hold.

A VariableTracker (VT) stands for one Python value of the traced program. It
knows how to answer the operations the bytecode performs on the value
(attribute access, calls, iteration, truth) *symbolically*: by folding
constants, by adding nodes to the graph, by inlining user code, or by raising a
graph break. A VT that came from the frame's inputs carries a
:class:`~bytegraph.guards.source.Source`; the guards for the facts it exposes
were installed when it was wrapped (see :mod:`bytegraph.variables.builder`).

Methods take the translator ``tx`` explicitly (there is no global translator).
"""
from __future__ import annotations

import abc
import functools
import inspect
import types
import typing
import weakref
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Sequence

from bytegraph.breaks import Unsupported, unimplemented
from bytegraph.guards.guards import GlobalStateMatch, IdMatch, NoAliasing
from bytegraph.variables.handlers import call_method_handler, handler_name
from bytegraph.variables.tx import list_iterator, wrap_const
if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.guards.source import Source
    from bytegraph.variables.tx import Tx


class VariableTracker:
    """Base of all variable trackers.

    Attributes:
        source: where the value was read from, or None for values created
            during the trace.
    """

    #: True for VTs whose Python object is mutable and must keep one identity
    #: when rebuilt (lists, dicts, user objects created in the trace).
    mutable = False
    #: False for VTs whose rebuilt object needs no memo to keep its identity
    #: (constants are loaded from co_consts, tensors from the graph's outputs);
    #: others made in the trace (functions, tuples, partials...) are rebuilt
    #: once per graph break and reused, as ``a is b`` and dict keys need.
    rebuilt_once = True
    #: names of ``method_<name>`` handlers that change the value: marked as a
    #: side effect before they run (:func:`call_method_handler`)
    MUTATORS: frozenset[str] = frozenset()
    #: True for symbolic scalars: a value not known now whose :meth:`as_python_constant`
    #: specialises it (the ShapeEnv guards the value), as folding and cache keys may
    specializable = False
    #: True for kinds whose ``as_python_constant()`` builds a new object on each
    #: call (sequences, dicts, sets, slices): no identity to compare or guard
    rebuilds_constant = False
    #: True for tensors and ndarrays: one made by an operation is a new object
    #: unless the operation gave back its input's VT (see :meth:`same_object`)
    array_identity = False
    #: for kinds whose methods are all ``method_`` handlers (containers): what a call
    #: that none fits does (a graph break, or eager's TypeError), not an attribute read and called
    unhandled_method: Callable[..., NoReturn] | None = None
    #: True for containers whose ``iter()`` is their own ``__iter__`` (lists,
    #: dicts, dict views, sets): its iterator sees mutations made during the loop
    live_iterator = False

    def __init__(self, source: Source | None = None):
        self.source = source

    # ---- what the value is -------------------------------------------------
    def python_type(self) -> type:
        """The Python type of the value (``type(value)`` in eager)."""
        unimplemented(
            gb_type="unknown python type",
            context=f"type() of {self}",
            explanation="bytegraph does not know the Python type of this value.",
        )

    def is_python_constant(self) -> bool:
        """Whether :meth:`as_python_constant` would succeed."""
        return False

    def as_python_constant(self) -> Any:
        """The concrete Python value, when it is known at trace time."""
        unimplemented(
            gb_type="non-constant value",
            context=f"{self} used where a Python constant is needed",
            explanation="This value is only known when the compiled code runs, but the operation needs it now.",
            hints=("Make the value a constant (e.g. a Python int) or move the code out of the compiled region.",),
        )

    # ---- operations --------------------------------------------------------
    def var_getattr(self, tx: Tx, name: str) -> VariableTracker:
        """``value.name``: the kind's ``attr_<name>`` handler when it has one
        (:func:`handler_name`); by default, methods on the MRO of the value's type
        (not its metaclass's: ``[].mro`` is none) bind to :meth:`call_method` of
        this VT; plain class attributes of immutable types whose instances have
        no ``__dict__`` (``[].__doc__``) are constants."""
        found = self.attr_from_handler(tx, name)
        if found is not None:
            return found
        cls = self.python_type()
        attr = type_attribute(cls, name)
        if attr is not _MISSING and not isinstance(attr, _DATA_DESCRIPTORS) and callable(getattr(cls, name, None)):
            return BoundMethodVariable(self, name)
        if attr is not _MISSING and not hasattr(type(attr), "__get__") and cls.__flags__ & _IMMUTABLE_TYPE and (
                cls.__dictoffset__ == 0):
            return wrap_const(tx, attr)
        unimplemented(
            gb_type="unsupported attribute",
            context=f"attribute {name!r} of {self}",
            explanation="bytegraph cannot read this attribute symbolically.",
        )

    def attr_dunder_class(self, tx: Tx) -> VariableTracker | None:
        """``value.__class__``: ``type(value)``, unless the class overrides
        ``__class__`` (None: the kind's other rules answer)."""
        cls = self.python_type()
        return wrap_const(tx, cls) if type_attribute(cls, "__class__") is OBJECT_CLASS else None

    def attr_from_handler(self, tx: Tx, name: str) -> VariableTracker | None:
        """``value.name`` by the kind's ``attr_<name>`` handler; None when it has
        none (a kind whose :meth:`var_getattr` asks something first calls this)."""
        handler = getattr(type(self), handler_name("attr_", name), None)
        return None if handler is None else handler(self, tx)

    def call_function(
        self, tx: Tx, args: Sequence[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        """``value(*args, **kwargs)``."""
        unimplemented(
            gb_type="unsupported call",
            context=f"call to {self}",
            explanation="bytegraph cannot trace a call of this kind of object.",
        )

    def has_attr(self, tx: Tx, name: str) -> bool:
        """``hasattr(value, name)``; by default asked of the Python constant, else
        of the value's type. Kinds whose instances hold attributes override it."""
        if self.is_python_constant():
            return hasattr(self.as_python_constant(), name)
        # an instance has what its class's MRO defines (the metaclass's __name__, __qualname__,
        # __mro__... belong to the class, not to instances: functools.partial objects have no __name__)
        return any(name in vars(klass) for klass in self.python_type().__mro__)

    def store_attr(self, tx: Tx, name: str, value: VariableTracker) -> None:
        """``value.name = v``: the kind's ``store_<name>`` handler when one stores it,
        else a graph break. Kinds that record stores (side effects, graph) override it."""
        if self.store_from_handler(tx, name, value):
            return
        unimplemented(
            gb_type="unsupported attribute store",
            context=f"setting {name!r} on {self}",
            explanation="bytegraph cannot record this attribute assignment as a side effect.",
            hints=("Move the assignment out of the compiled function.",),
        )

    def store_from_handler(self, tx: Tx, name: str, value: VariableTracker) -> bool:
        """``value.name = v`` by the kind's ``store_<name>`` handler; whether it stored
        it (False: none, or its conditions do not hold: the kind's other rules apply)."""
        handler = getattr(type(self), handler_name("store_", name), None)
        return handler is not None and handler(self, tx, value)

    def delete_attr(self, tx: Tx, name: str) -> None:
        """``del value.name``; by default a graph break (user objects override it)."""
        unimplemented(
            gb_type="attribute delete",
            context=f"del {self}.{name}",
            explanation="bytegraph deletes instance attributes of user objects (not descriptors, not "
                        "attributes of modules or builtin objects).",
            hints=("Move the del out of the compiled function.",),
        )

    def call_method(
        self, tx: Tx, name: str, args: Sequence[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        """``value.name(*args, **kwargs)``: the kind's ``method_<name>`` handler
        when it has one whose signature the arguments fit
        (:func:`call_method_handler`); by default attribute then call."""
        result = call_method_handler(self, tx, name, args, kwargs)
        if result is not None:
            return result
        if self.unhandled_method is not None:
            self.unhandled_method(name, args, kwargs)
        attr = self.var_getattr(tx, name)
        if isinstance(attr, BoundMethodVariable) and attr.obj is self:
            unimplemented(
                gb_type="unsupported method call",
                context=f"{self.python_type().__name__}.{name}()",
                explanation=f"bytegraph does not model the method {name} on this kind of value.",
            )
        return attr.call_function(tx, args, kwargs)

    # ---- operators ----------------------------------------------------------
    # CPython's protocol: ``a op b`` asks ``a``'s kind (binary_op), then ``b``'s
    # (reflected_binary_op); ``a op= b`` asks ``a``'s in-place rule first. Each
    # kind answers what it owns and returns NotImplemented otherwise;
    # ``builtin.apply_operator`` runs the order.

    #: rank of an operand whose kind takes over every operator it takes part in
    #: (as ``__array_priority__``/``__torch_function__`` do): ndarrays 3,
    #: dispatching tensor subclasses 2, data pointers 1; the highest goes first.
    override_rank = 0

    def operator_override(self, tx: Tx, op: Any, args: Sequence[VariableTracker]) -> Any:
        """``op(*args)`` with this operand among ``args``, when this kind takes
        the whole operation over (see :attr:`override_rank`); else NotImplemented."""
        return NotImplemented

    def binary_op(self, tx: Tx, op: Any, other: VariableTracker) -> Any:
        """``self op other`` (``op`` an ``operator`` function) as this kind
        defines it, or NotImplemented (then ``other``'s reflected rule is asked)."""
        return NotImplemented

    def reflected_binary_op(self, tx: Tx, op: Any, other: VariableTracker) -> Any:
        """``other op self`` after ``other``'s kind returned NotImplemented
        (``__radd__``...), or NotImplemented."""
        return NotImplemented

    def inplace_op(self, tx: Tx, op: Any, other: VariableTracker) -> Any:
        """``self op= other`` (``op`` an in-place ``operator`` function): the result,
        NotImplemented to compute the binary operator (immutable values), or None
        (a graph break) for a mutable value whose in-place rule is not modelled."""
        return None if self.mutable else NotImplemented

    def unary_op(self, tx: Tx, op: Any) -> Any:
        """``-self``, ``+self``, ``~self``, ``abs(self)``, or NotImplemented."""
        return NotImplemented

    def contains_op(self, tx: Tx, item: VariableTracker) -> Any:
        """``item in self`` by this kind's ``__contains__``, NotImplemented (then
        membership is decided by iterating, as CPython does), or None (not
        modelled: a graph break)."""
        return NotImplemented

    def has_unpack_var_sequence(self, tx: Tx) -> bool:
        """Whether :meth:`unpack_var_sequence` can list the items at trace time."""
        return False

    def lazy_iterator(self, tx: Tx) -> VariableTracker | None:
        """``iter(self)`` stepped one item at a time when this kind has one (a user
        object's Python ``__iter__``); None: its items are listed whole."""
        return None

    def str_text(self, tx: Tx) -> VariableTracker | None:
        """``str(self)`` when this kind answers it (an exception of constant
        arguments, a user object's Python ``__str__``); a type leaving ``__str__``
        to object's gives its repr (a list, a dict holding objects); None otherwise."""
        return self.repr_text(tx) if self.python_type().__str__ is object.__str__ else None

    def hash_value(self, tx: Tx) -> VariableTracker | None:
        """``hash(self)`` when this kind answers it (a user object's ``__hash__``
        or identity hash); None otherwise (constants fold)."""
        return None

    def int_value(self, tx: Tx) -> VariableTracker | None:
        """``int(self)`` when this kind answers it (a user object's ``__int__``/
        ``__index__``); None otherwise (constants fold, tensors convert)."""
        return None

    def reversed_iter(self, tx: Tx) -> VariableTracker | None:
        """``reversed(self)`` when this kind answers it (a user object's Python
        ``__reversed__``); None otherwise (sequences and constants are reversed
        by ``reversed``'s own handler)."""
        return None

    def repr_text(self, tx: Tx) -> VariableTracker | None:
        """``repr(self)`` when this kind answers it (a user object's Python
        ``__repr__``); None otherwise (constants fold)."""
        return None

    def unpack_var_sequence(self, tx: Tx) -> list[VariableTracker]:
        """The items of iterating the value, as VTs (finite, known now)."""
        unimplemented(
            gb_type="unsupported iteration",
            context=f"iterating over {self}",
            explanation="bytegraph cannot list the items of this value at trace time.",
        )

    def assert_in_graph(self, tx: Tx, truth: bool) -> bool:
        """``assert value`` (``truth`` True) or ``assert not value`` (False), or
        any branch on ``value`` whose other side only raises (``if not value:
        raise ValueError(...)``, as in torch.distributions' argument checks): put
        the check into the graph, to run when the graph runs, and return True; or return False (the default) to decide it at
        trace time with :meth:`truthy`. Kinds whose truth only the data knows
        override it (mirrors torch.compile, which turns an ``assert`` on a
        tensor into a runtime assertion instead of a graph break)."""
        return False

    def truthy(self, tx: Tx) -> bool:
        """``bool(value)``, decided at trace time or a graph break."""
        unimplemented(
            gb_type="unsupported truth value",
            context=f"bool() of {self}",
            explanation="bytegraph cannot decide the truth of this value at trace time.",
        )

    def get_iter(self, tx: Tx) -> VariableTracker:
        """``iter(value)``: this kind's lazy iterator when it has one, else an
        iterator over its items listed now; a :attr:`live_iterator` container's
        own ``__iter__``. Iterators override it (``iter(it) is it``)."""
        if self.live_iterator:
            return self.call_method(tx, "__iter__", [], {})
        iterator = self.lazy_iterator(tx)
        if iterator is not None:
            return iterator.get_iter(tx)
        return list_iterator(self.unpack_var_sequence(tx), self)

    # ---- identity and types --------------------------------------------------
    def constant_identity(self) -> int | None:
        """``id()`` of the object this kind stands for when that is known from
        the VT alone: the Python constant, unless it is rebuilt on each read."""
        if self.is_python_constant() and not self.rebuilds_constant:
            return id(self.as_python_constant())
        return None

    def identity(self, tx: Tx) -> int | None:
        """``id()`` of the real object behind this value, when there is one."""
        ident = tx.output.side_effects.identity_of(self)
        return ident if ident is not None else self.constant_identity()

    def guard_identity(self, tx: Tx) -> bool:
        """Guard that the object behind this value (read from a source) stays the
        same object, as ``id()`` needs; False when it cannot be held weakly
        (lists, dicts: an entry must not keep them alive)."""
        obj = tx.output.side_effects.object_of(self)
        if obj is None and self.is_python_constant() and not self.rebuilds_constant:
            obj = self.as_python_constant()
        try:
            weakref.ref(obj)
        except TypeError:
            return False
        tx.output.guards.add(IdMatch.of(self.source, obj))
        return True

    def same_object(self, tx: Tx, other: VariableTracker) -> bool | None:
        """``self is other``, or None when it cannot be known at trace time."""
        if self is other:
            return True
        ida, idb = self.identity(tx), other.identity(tx)
        if ida is not None and idb is not None:
            if ida != idb and self.source is not None and other.source is not None:
                # distinct objects on this call; a later call may pass one object twice
                tx.output.guards.add(NoAliasing(None, (self.source, other.source)))
            return ida == idb
        if self.mutable and other.mutable and (self.source is None or other.source is None):
            return False  # a list/dict/set made in the trace is a new object, and has exactly one VT
        if self.array_identity and other.array_identity:
            if self.source is None or other.source is None:
                # An op that returns its input in eager gives back the input's VT
                # (graph_call compares FakeTensor identity; numpy_call returns
                # the argument written in place), so a computed tensor or array
                # with its own VT is a new object.
                return False
            # Two inputs that are distinct objects now: guard that they stay so.
            tx.output.guards.add(NoAliasing(None, (self.source, other.source)))
            return False
        try:
            ta, tb = self.python_type(), other.python_type()
        except Exception:
            return None
        if ta is not tb:
            return False
        return None

    def instance_answer(self, cls: Any) -> tuple[type, bool]:
        """``(type(value), isinstance(value, cls))`` with ``cls`` a class: asked
        of the type; kinds that hold the real object ask the object."""
        obj_type = self.python_type()
        return obj_type, issubclass(obj_type, cls)

    def isinstance_of(self, tx: Tx, cls: Any) -> bool:
        """``isinstance(value, cls)``. Classes whose metaclass decides instance checks
        itself (a user ``__instancecheck__``, runtime-checkable Protocols) are graph
        breaks; an answer from an ABC is guarded (``register()`` can change it)."""
        if isinstance(cls, tuple):
            return any(self.isinstance_of(tx, c) for c in cls)
        if isinstance(cls, typing._SpecialGenericAlias):  # typing.Sequence, typing.List...: checks its origin class
            return self.isinstance_of(tx, cls.__origin__)
        if isinstance(cls, types.UnionType):  # list | tuple: any of its members
            return self.isinstance_of(tx, cls.__args__)
        meta = type(cls)
        if meta.__instancecheck__ is not type.__instancecheck__ and not meta.__module__.startswith("torch") and (
            not isinstance(cls, abc.ABCMeta) or getattr(cls, "_is_protocol", False)
        ):
            unimplemented(
                gb_type="isinstance with __instancecheck__",
                context=f"isinstance(..., {getattr(cls, '__qualname__', cls)!r}), whose {meta.__qualname__} "
                "decides instance checks",
                explanation="The answer may depend on the object's attributes; the check runs natively.",
                hints=("Check the type or the attributes directly.",),
            )
        obj_type, answer = self.instance_answer(cls)
        if isinstance(cls, abc.ABCMeta):
            tx.output.guards.add(GlobalStateMatch(None, _subclass_check(obj_type, cls), answer,
                                                  f"issubclass({obj_type.__qualname__}, {cls.__qualname__})"))
        return answer

    # ---- graph and codegen -------------------------------------------------
    def as_proxy(self) -> Any:
        """This value as an argument of an fx node (a Node or a constant)."""
        unimplemented(
            gb_type="unsupported graph argument",
            context=f"{self} passed to a torch operation",
            explanation="Only tensors, symbolic sizes, Python constants and containers of them can be graph arguments.",
        )

    def as_example(self) -> Any:
        """This value with tensors replaced by their FakeTensor examples."""
        return self.as_python_constant()

    def reconstruct(self, codegen: PyCodegen) -> None:
        """Emit bytecode that leaves this value on the stack."""
        if self.source is not None:
            codegen.load_source(self.source)
            return
        unimplemented(
            gb_type="cannot reconstruct",
            context=f"{self} is live after the graph",
            explanation="bytegraph cannot rebuild this value in the generated code.",
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class BoundMethodVariable(VariableTracker):
    """``obj.name`` for a method implemented by ``obj``'s VT (``lst.append``,
    ``d.items``, ``"x".join``...): calling it calls ``obj.call_method(name)``."""

    def __init__(self, obj: VariableTracker, name: str):
        super().__init__()
        self.obj = obj
        self.name = name

    def python_type(self) -> type:
        return bound_method_type(self._descriptor())

    def _descriptor(self) -> Any:
        """What ``type(obj)`` defines under the name (None when unknown)."""
        try:
            owner = self.obj.python_type()
        except Unsupported:
            return None
        attr = type_attribute(owner, self.name)
        return None if attr is _MISSING else attr

    def truthy(self, tx: Tx) -> bool:
        return True

    def call_function(
        self, tx: Tx, args: Sequence[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return self.obj.call_method(tx, self.name, args, kwargs)

    def attr_dunder_self(self, tx: Tx) -> VariableTracker:
        return self.obj

    def attr_dunder_name(self, tx: Tx) -> VariableTracker:
        return wrap_const(tx, self.name)

    def _descriptor_attr(self, tx: Tx, name: str) -> VariableTracker | None:
        """A bound method's ``__qualname__``/``__doc__``/``__text_signature__``
        are its descriptor's (None when it has none)."""
        descriptor = self._descriptor()
        return wrap_const(tx, getattr(descriptor, name)) if hasattr(descriptor, name) else None

    def attr_dunder_qualname(self, tx: Tx) -> VariableTracker | None:
        return self._descriptor_attr(tx, "__qualname__")

    def attr_dunder_doc(self, tx: Tx) -> VariableTracker | None:
        return self._descriptor_attr(tx, "__doc__")

    def attr_dunder_text_signature(self, tx: Tx) -> VariableTracker | None:
        return self._descriptor_attr(tx, "__text_signature__")

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.reconstruct(self.obj)
        codegen.load_attr(self.name)

    def __repr__(self) -> str:
        return f"BoundMethodVariable({self.obj}.{self.name})"


class KnownObjectVariable(VariableTracker):
    """A VT holding the Python object it stands for, known at trace time (a
    constant, a callable, a class, a module, a library object): the object is
    its Python constant and its identity; the generated code reads it again
    from its source, or loads it as a constant.

    Attributes:
        value: the object.
    """

    #: True for kinds the generated code loads as a constant even when read from a source
    loaded_as_constant = False

    def __init__(self, value: Any, source: Source | None = None):
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

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is not None and not self.loaded_as_constant:
            codegen.load_source(self.source)
        else:
            codegen.load_const(self.value)


class ConstantCallableVariable(KnownObjectVariable):
    """A callable known at trace time (``len``, ``torch.add``, ``np.sum``,
    ``itertools.chain``, a user's function...): a constant, loaded as such by
    the generated code; subclasses say what calling it does. ``fn`` is the
    callable (its :attr:`value`)."""

    loaded_as_constant = True

    @property
    def fn(self) -> Any:
        return self.value

    def truthy(self, tx: Tx) -> bool:
        return True


_MISSING = object()
OBJECT_CLASS = vars(object)["__class__"]  # the descriptor of a class that does not override __class__
_DATA_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)  # (never methods)
_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: the type's attributes cannot be set


def type_attribute(cls: type, name: str) -> Any:
    """What ``cls``'s MRO defines under ``name``, no descriptor invoked (not the
    metaclass's attributes), or ``_MISSING``."""
    return next((vars(klass)[name] for klass in cls.__mro__ if name in vars(klass)), _MISSING)


@functools.lru_cache(maxsize=None)
def _subclass_check(obj_type: type, cls: type) -> Callable[[], bool]:
    """A guard getter re-asking an ABC about ``obj_type`` (one per pair, so guards dedupe)."""
    return lambda: issubclass(obj_type, cls)


def bound_method_type(descriptor: Any) -> type:
    """``type(obj.name)`` for what ``type(obj)`` defines under that name: a
    method-wrapper for a slot wrapper (``(1).__add__``), a bound method for a
    Python function, else a builtin method (``[].append``, ``dict.fromkeys``)."""
    if isinstance(descriptor, types.WrapperDescriptorType):
        return types.MethodWrapperType
    if isinstance(descriptor, types.FunctionType):
        return types.MethodType
    return types.BuiltinMethodType


def bad_method(container: VariableTracker, name: str) -> NoReturn:
    """A method of a container kind that bytegraph does not model: a graph break."""
    unimplemented(
        gb_type="unsupported container method",
        context=f"{container.python_type().__name__}.{name}",
        explanation=f"bytegraph does not model {container.python_type().__name__}.{name} on traced values.",
    )
