"""Guard kinds: the facts a trace relied on, as checks on the frame's inputs.

Each guard renders itself as a Python boolean expression over the expression of
its source (:meth:`Guard.check`), and explains a failure in words
(:meth:`Guard.explain`), e.g. ``tensor 'x' size mismatch at index 0: expected 3,
got 4``. :mod:`bytegraph.guards.guard_code` assembles them into one generated
function per cache entry. Tensor guards are in :mod:`bytegraph.guards.tensor_guards`.
"""
from __future__ import annotations

import collections
import dataclasses
import math
import operator
import weakref
from typing import Any, Callable, ClassVar, Protocol

import torch

from bytegraph.guards.source import GLOBAL_STATE, AttrSource, Source, user_name
from bytegraph.guards.words import GLOBALS, INPUTS, STATE, Words, modules_phrase, short, type_name


class Names(Protocol):
    """What a guard needs from the code builder: names for constants."""

    def const(self, value: Any) -> str:
        """The name under which the guard function sees ``value``."""
        ...


def describe_source(source: Source | None) -> str:
    """How a guard failure names its value: ``'x'``, ``'self.fc.weight'``."""
    return user_name(source) if source is None else repr(user_name(source))


@dataclasses.dataclass(frozen=True, eq=False)
class Guard:
    """Base guard. ``source`` is ``None`` for checks of global state."""

    source: Source | None

    def key(self) -> tuple:
        """Identity of the fact; guards with equal keys are installed once."""
        return (type(self).__name__, self.source)

    def check(self, names: Names, value: str) -> str:
        raise NotImplementedError(type(self).__name__)

    def explain(self, actual: Any) -> str:
        raise NotImplementedError(type(self).__name__)

    #: cost class used for ordering: cheap and discriminating guards run first.
    order: ClassVar[int] = 5

    def checked_type(self) -> type | None:
        """The exact type this guard also checks of its source, if any (a
        TypeMatch for the same type is then redundant)."""
        return None

    #: its summary group (:data:`~bytegraph.guards.words.GROUPS`); None: by the path of its source
    group: ClassVar[str | None] = None
    unchanged_object: ClassVar[bool] = False  # a summary lists it among a module's unchanged objects
    checks_tensor: ClassVar[bool] = False  # a tensor held by a module is a parameter or buffer

    def describe(self, words: Words) -> tuple[str, str]:
        """``(name of the value checked, the fact in words)``."""
        return words.name(self.source), type(self).__name__

    def module_source(self) -> Source | None:
        """The source this guard shows to hold an ``nn.Module``, if any."""
        return None

    def dynamic_dims(self) -> list[int]:
        """The dims of the tensor it checks whose sizes are symbolic."""
        return []


@dataclasses.dataclass(frozen=True, eq=False)
class TypeMatch(Guard):
    """``type(value) is expected``."""

    expected: type = object
    order: ClassVar[int] = 2
    unchanged_object: ClassVar[bool] = True

    def describe(self, words: Words) -> tuple[str, str]:
        return words.name(self.source), f"has type {type_name(self.expected)}"

    def module_source(self) -> Source | None:
        expected = self.expected
        return self.source if isinstance(expected, type) and issubclass(expected, torch.nn.Module) else None

    def check(self, names: Names, value: str) -> str:
        return f"type({value}) is {names.const(self.expected)}"

    def explain(self, actual: Any) -> str:
        return (
            f"{describe_source(self.source)} type mismatch: expected "
            f"{self.expected.__qualname__}, got {type(actual).__qualname__}"
        )


@dataclasses.dataclass(frozen=True, eq=False)
class FiniteFloat(Guard):
    """``type(value) is float and math.isfinite(value)``: what a symbolic float input
    (SymFloat) stands for. The ShapeEnv reasons about it as a real number, so a
    trace made with it holds for no NaN or infinity (those are specialised)."""

    order: ClassVar[int] = 2

    def describe(self, words: Words) -> tuple[str, str]:
        return words.name(self.source), "finite float (neither NaN nor infinite)"

    def check(self, names: Names, value: str) -> str:
        return f"type({value}) is float and {names.const(math.isfinite)}({value})"

    def checked_type(self) -> type | None:
        return float

    def explain(self, actual: Any) -> str:
        return f"{describe_source(self.source)} is not a finite float: got {actual!r}"


@dataclasses.dataclass(frozen=True, eq=False)
class RecomputedMatch(Guard):
    """``recompute(*sources) is expected``: a branch the trace took on float
    arithmetic over symbolic scalars (``(v + 0.1) - 0.1 == v``, ``n / 3 > 0.3``),
    taken again on the inputs with Python's own operations, as eager takes it. The
    ShapeEnv's guard for it would be its real-number rewrite (``True`` for the
    example), which rounding, overflow and the sign of zero contradict.
    ``label`` is the computation in words."""

    sources: tuple = ()
    recompute: Callable[..., Any] | None = None
    expected: Any = None
    label: str = ""
    order: ClassVar[int] = 5
    group: ClassVar[str | None] = INPUTS

    def describe(self, words: Words) -> tuple[str, str]:
        return words.name(self.source), f"{self.label} is {self.expected!r} (recomputed with Python's operations)"

    def key(self) -> tuple:
        return (type(self).__name__, self.sources, self.label, self.expected)

    def check(self, names: Names, value: str) -> str:
        raise AssertionError("rendered by the code builder, which knows each source's expression")

    def explain(self, actual: Any) -> str:
        return f"{self.label} is no longer {self.expected!r}"


@dataclasses.dataclass(frozen=True, eq=False)
class ConstantMatch(Guard):
    """``type(value) is type(expected) and value == expected`` for scalars,
    strings and other immutable constants (``is`` for None/bool/Ellipsis).

    The items of a tuple are checked by type too (``(2.0, 3) == (2, 3)``, but a
    graph traced with the int 2 is wrong for the float), and a float 0.0 or NaN
    by its sign. The very object the trace saw (what an attribute still holds
    unless it was assigned) passes with one ``is``: it is the same constant.
    """

    expected: Any = None
    order: ClassVar[int] = 1

    def describe(self, words: Words) -> tuple[str, str]:
        exp = self.expected
        if exp is None or exp is Ellipsis or exp is NotImplemented or type(exp) is bool:
            return words.name(self.source), f"is {exp!r}"
        return words.name(self.source), f"== {short(exp)} ({type(exp).__name__})"

    def check(self, names: Names, value: str) -> str:
        exp = self.expected
        if exp is None or exp is Ellipsis or exp is NotImplemented or type(exp) is bool:
            return f"{value} is {names.const(exp)}"
        return f"{value} is {names.const(exp)} or ({_same_constant(names, value, exp)})"

    def explain(self, actual: Any) -> str:
        return f"{describe_source(self.source)} value mismatch: expected {self.expected!r}, got {actual!r}"


def _same_constant(names: Names, value: str, exp: Any) -> str:
    """Guard source: ``value`` equals the constant ``exp`` and is of its exact
    type, as are its items (by position) if it is a tuple."""
    if type(exp) is int:
        return f"type({value}) is int and {value} == {exp}"
    if type(exp) is float and (exp != exp or exp == 0.0):
        # what tells such floats apart for a trace: NaN equals NaN (it never equals itself), -0.0
        # differs from 0.0 (they are ==): the sign, read by C code rather than a Python helper
        test = f"{value} != {value}" if exp != exp else f"{value} == 0.0"
        return f"type({value}) is float and {test} and {_same_sign(names, value, exp)}"
    parts = [f"type({value}) is {names.const(type(exp))}", f"{value} == {names.const(exp)}"]
    if type(exp) is tuple:
        parts += _item_checks(names, value, exp)
    elif type(exp) is frozenset:
        parts.append(_set_items_check(names, value, exp))
    elif type(exp) in _PARTS:  # slice(2, 3) == slice(2.0, 3), complex(1, 0.0) == complex(1, -0.0)
        parts.append(f"{names.const(same_constant)}({value}, {names.const(exp)})")
    return " and ".join(parts)


#: constants made of parts that ``==`` compares without their types or signs
_PARTS = (tuple, frozenset, slice, complex)


def _told_apart_by_equality(item: Any) -> bool:
    """Whether ``==`` plus an exact type check tells ``item`` from every other
    constant: not one made of parts, nor a float zero (whose sign ``==`` ignores)."""
    return type(item) not in _PARTS and not (type(item) is float and item == 0.0)


def _set_items_check(names: Names, value: str, items: frozenset) -> str:
    """Guard source: each item of the set ``value`` (already equal to
    ``items``) is of the type of its equal in ``items`` ({2} == {2.0}), as
    (type, item) pairs; item by item where a nested tuple's items or a float
    zero's sign tell equal items apart."""
    if all(_told_apart_by_equality(item) for item in items):
        pairs = frozenset((type(item), item) for item in items)
        return f"frozenset(zip(map(type, {value}), {value})) == {names.const(pairs)}"
    return f"{names.const(same_items)}({value}, {names.const({item: item for item in items})})"


def _item_checks(names: Names, value: str, items: tuple) -> list[str]:
    """Checks that, with ``value == items`` already true, make each item of
    ``value`` the same constant as in ``items``: its exact type, a nested
    tuple's items, the sign of a float zero (a NaN item is equal only when it
    is the very object)."""
    checks = []
    for i, item in enumerate(items):
        expr = f"{value}[{i}]"
        checks.append(f"type({expr}) is {names.const(type(item))}")
        if type(item) is tuple:
            checks += _item_checks(names, expr, item)
        elif type(item) is float and item == 0.0:
            checks.append(_same_sign(names, expr, item))
        elif type(item) in _PARTS:  # a frozenset, slice or complex
            checks.append(f"{names.const(same_constant)}({expr}, {names.const(item)})")
    return checks


def _same_sign(names: Names, value: str, exp: float) -> str:
    return f"math.copysign(1.0, {value}) == {names.const(math.copysign(1.0, exp))}"


@dataclasses.dataclass(frozen=True, eq=False)
class EqualsMatch(Guard):
    """``value == expected`` where ``expected`` is an immutable snapshot (e.g. a
    frozenset of a set's items); pair with a TypeMatch."""

    expected: Any = None
    order: ClassVar[int] = 2

    def describe(self, words: Words) -> tuple[str, str]:
        return words.name(self.source), f"== {short(self.expected)}"

    def check(self, names: Names, value: str) -> str:
        exp = self.expected
        equal = f"{value} == {names.const(exp)}"
        return f"{equal} and {_set_items_check(names, value, exp)}" if type(exp) is frozenset else equal

    def explain(self, actual: Any) -> str:
        return f"{describe_source(self.source)} value mismatch: expected {self.expected!r}, got {actual!r}"


@dataclasses.dataclass(frozen=True, eq=False)
class IdMatch(Guard):
    """``value is expected``, holding ``expected`` weakly where possible.

    The cache entry owning this guard is invalidated when the object dies
    (``on_death``), so an id can never be matched by a new object at the same
    address.
    """

    expected_id: int = 0
    label: str = ""
    ref: Any = None  # a weak reference to the object (``weak``), or the object itself when it cannot have one
    weak: bool = False
    order: ClassVar[int] = 1
    unchanged_object: ClassVar[bool] = True

    @staticmethod
    def of(source: Source, obj: Any) -> "IdMatch":
        try:
            return IdMatch(source, id(obj), _label(obj), weakref.ref(obj), True)
        except TypeError:  # builtins, ints, tuples, weak references...: immortal or owned by a strong owner
            return IdMatch(source, id(obj), _label(obj), obj, False)

    def key(self) -> tuple:
        return ("IdMatch", self.source, self.expected_id)

    def describe(self, words: Words) -> tuple[str, str]:
        return words.name(self.source), f"is the same object as when compiled ({self.label})"

    def module_source(self) -> Source | None:
        obj = self.ref() if self.weak else self.ref
        return self.source if isinstance(obj, torch.nn.Module) else None

    def check(self, names: Names, value: str) -> str:
        if self.weak:
            # calling the weak reference and comparing with ``is`` is cheaper than ``id()``, which
            # makes a new int on every call; a dead referent gives None, which never matches (the
            # entry is invalidated on the death, but a guard loop that started before still runs it)
            return f"{value} is {names.const(self.ref)}() is not None"
        return f"id({value}) == {self.expected_id}"

    def explain(self, actual: Any) -> str:
        return f"{describe_source(self.source)} is no longer the same object (expected {self.label}, got {_label(actual)})"


#: containers whose truth is their length (no ``__bool__`` or ``__len__`` of a subclass)
_BUILTIN_CONTAINERS = (tuple, list, dict, collections.OrderedDict)


def _length_is(value: str, exact_type: type, length: int) -> str:
    """``len(value) == length`` for a value whose type is already checked to be
    ``exact_type``; ``not value`` when that says the same more cheaply (an empty
    builtin container: no call)."""
    if length == 0 and exact_type in _BUILTIN_CONTAINERS:
        return f"not {value}"
    return f"len({value}) == {length}"


@dataclasses.dataclass(frozen=True, eq=False)
class LenMatch(Guard):
    """``type(value) is expected_type and len(value) == length`` for containers."""

    expected_type: type = tuple
    length: int = 0
    order: ClassVar[int] = 2

    def checked_type(self) -> type | None:
        return self.expected_type

    def describe(self, words: Words) -> tuple[str, str]:
        return words.name(self.source), f"{type_name(self.expected_type)} of length {self.length}"

    def check(self, names: Names, value: str) -> str:
        length = _length_is(value, self.expected_type, self.length)
        return f"type({value}) is {names.const(self.expected_type)} and {length}"

    def explain(self, actual: Any) -> str:
        if type(actual) is not self.expected_type:
            return (
                f"{describe_source(self.source)} type mismatch: expected "
                f"{self.expected_type.__qualname__}, got {type(actual).__qualname__}"
            )
        return f"{describe_source(self.source)} length mismatch: expected {self.length}, got {len(actual)}"


@dataclasses.dataclass(frozen=True, eq=False)
class DictKeysMatch(Guard):
    """``type(value) is expected_type and list(value.keys()) == keys`` (keys in order)."""

    expected_type: type = dict
    keys: tuple = ()
    order: ClassVar[int] = 3

    def checked_type(self) -> type | None:
        return self.expected_type

    def describe(self, words: Words) -> tuple[str, str]:
        return words.name(self.source), f"{type_name(self.expected_type)} with keys {short(list(self.keys))}"

    def module_source(self) -> Source | None:
        source = self.source
        return source.base_source if isinstance(source, AttrSource) and source.attr == "_modules" else None

    def check(self, names: Names, value: str) -> str:
        length = _length_is(value, self.expected_type, len(self.keys))
        head = f"type({value}) is {names.const(self.expected_type)} and {length}"
        if not self.keys and self.expected_type in (dict, collections.OrderedDict):
            return head  # an empty dict has no keys (e.g. a module's hook dicts, checked on every call)
        same = f"{names.const(same_keys)}({value}, {names.const(self.keys)})"
        if all(compared_by_value(k) for k in self.keys):
            # the very key objects the trace saw (a dict keeps its keys) are the same keys: no call
            return f"{head} and (all(map({names.const(operator.is_)}, {value}, {names.const(self.keys)})) or {same})"
        return f"{head} and {same}"

    def explain(self, actual: Any) -> str:
        if type(actual) is not self.expected_type:
            return f"{describe_source(self.source)} type mismatch: expected {self.expected_type.__qualname__}"
        return f"{describe_source(self.source)} keys changed: expected {list(self.keys)!r}, got {list(actual)!r}"


def compared_by_value(key: Any) -> bool:
    """Whether a dict key is compared by value in guards (a scalar, or a tuple
    of them); any other key (a tensor, a module, an object hashed by identity)
    must be the very same object."""
    if type(key) is tuple:
        return all(compared_by_value(k) for k in key)
    return type(key) in (str, int, float, bool, bytes, type(None))


def same_keys(mapping: Any, keys: tuple) -> bool:
    """Whether ``mapping``'s keys are ``keys`` in order (its length already
    checked): keys compared by value the same constants
    (:func:`same_constant`), other keys identical (never calling their
    ``__eq__``, which for a tensor is elementwise)."""
    return all(a is b or (compared_by_value(b) and same_constant(a, b)) for a, b in zip(mapping, keys))


def same_items(items: Any, expected: dict) -> bool:
    """Whether each of ``items`` (a set already equal to ``expected``'s keys)
    is the same constant as its equal in ``expected`` (a dict from each
    expected item to itself)."""
    return all(same_constant(a, expected[a]) for a in items)


def same_constant(a: Any, b: Any) -> bool:
    """Whether ``a`` is the constant ``b`` for a trace: equal and of the same
    exact type, the items of a tuple, frozenset or slice and the parts of a
    complex too, a float's sign too (-0.0 is not 0.0) and NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if type(b) is tuple:
        return len(a) == len(b) and all(x is y or same_constant(x, y) for x, y in zip(a, b))
    if type(b) is float:
        return math.copysign(1.0, a) == math.copysign(1.0, b) and (a == b or (a != a and b != b))
    if type(b) is frozenset:
        return a == b and same_items(a, {item: item for item in b})
    if type(b) is slice:
        return same_constant((a.start, a.stop, a.step), (b.start, b.stop, b.step))
    if type(b) is complex:
        return same_constant(a.real, b.real) and same_constant(a.imag, b.imag)
    return bool(a == b)


@dataclasses.dataclass(frozen=True, eq=False)
class DictContains(Guard):
    """``key in value`` (``present``) or ``key not in value`` for one str/int key."""

    key_value: Any = None
    present: bool = True
    order: ClassVar[int] = 2

    def key(self) -> tuple:
        return ("DictContains", self.source, self.key_value)

    def describe(self, words: Words) -> tuple[str, str]:
        return words.name(self.source), f"{'has' if self.present else 'has no'} key {short(self.key_value)}"

    def check(self, names: Names, value: str) -> str:
        return f"{names.const(self.key_value)} {'in' if self.present else 'not in'} {value}"

    def explain(self, actual: Any) -> str:
        now = "now present" if not self.present else "now missing"
        return f"key {self.key_value!r} of {describe_source(self.source)} is {now}"


@dataclasses.dataclass(frozen=True, eq=False)
class NotShadowed(Guard):
    """A builtin read by the frame is not shadowed by a module global:
    ``name not in f_globals``."""

    f_globals: dict = dataclasses.field(default_factory=dict)
    builtin_name: str = ""
    order: ClassVar[int] = 1
    group: ClassVar[str | None] = GLOBALS

    def key(self) -> tuple:
        return ("NotShadowed", id(self.f_globals), self.builtin_name)

    def describe(self, words: Words) -> tuple[str, str]:
        module = self.f_globals.get("__name__", "?")
        return self.builtin_name, f"the builtin (no global of {modules_phrase([module])} shadows it)"

    def check(self, names: Names, value: str) -> str:
        return f"{names.const(self.builtin_name)} not in {names.const(self.f_globals)}"

    def explain(self, actual: Any) -> str:
        return f"builtin {self.builtin_name!r} is now shadowed by a global"


@dataclasses.dataclass(frozen=True, eq=False)
class GlobalStateMatch(Guard):
    """``getter() == expected`` for process-wide torch state (grad mode,
    default dtype, ...). ``source`` is None; ``label`` names the state."""

    getter: Callable[[], Any] = torch.is_grad_enabled
    expected: Any = True
    label: str = "grad mode"
    order: ClassVar[int] = 0
    group: ClassVar[str | None] = STATE

    def key(self) -> tuple:
        return ("GlobalStateMatch", self.getter)

    def describe(self, words: Words) -> tuple[str, str]:
        return GLOBAL_STATE, f"{self.label} = {short(self.expected)}"

    def check(self, names: Names, value: str) -> str:
        if self.expected is None or type(self.expected) is bool:
            return f"{names.const(self.getter)}() is {self.expected}"
        return f"{names.const(self.getter)}() == {names.const(self.expected)}"

    def explain(self, actual: Any) -> str:
        return f"{self.label} changed: expected {self.expected!r}, got {self.getter()!r}"


@dataclasses.dataclass(frozen=True, eq=False)
class SameObject(Guard):
    """``value is <other source's value>``: one object reached through two paths."""

    other: Source | None = None
    order: ClassVar[int] = 2

    def key(self) -> tuple:
        return ("SameObject", self.source, self.other)

    def describe(self, words: Words) -> tuple[str, str]:
        return words.name(self.source), f"is the same object as {words.name(self.other)}"

    def check(self, names: Names, value: str) -> str:
        raise AssertionError("rendered by the code builder, which knows each source's expression")

    def explain(self, actual: Any) -> str:
        return f"{describe_source(self.source)} is no longer the same object as {describe_source(self.other)}"


@dataclasses.dataclass(frozen=True, eq=False)
class NoAliasing(Guard):
    """Distinct inputs stay distinct objects (needed when the graph mutates an
    input tensor, or when the trace decided ``a is b`` was False).
    ``sources`` lists the inputs; ``source`` is None."""

    sources: tuple = ()
    order: ClassVar[int] = 4
    group: ClassVar[str | None] = INPUTS

    def key(self) -> tuple:
        return ("NoAliasing", self.sources)

    def describe(self, words: Words) -> tuple[str, str]:
        names = [words.name(s) for s in self.sources]
        listed = 8  # names listed before "and N more"
        shown = ", ".join(names[:listed]) + (f" and {len(names) - listed} more" if len(names) > listed else "")
        return "inputs", f"{len(names)} distinct objects: {shown}"

    def check(self, names: Names, value: str) -> str:
        raise AssertionError("rendered by the code builder, which knows each source's expression")

    def explain(self, actual: Any) -> str:
        return "inputs that were distinct objects are now the same object: " + ", ".join(
            describe_source(s) for s in self.sources
        )


def _label(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return f"{type(obj).__name__} {name}" if name else f"{type(obj).__name__} at {id(obj):#x}"


class GuardSet:
    """The guards one trace installed, in installation order, without duplicates."""

    def __init__(self) -> None:
        self._guards: dict[tuple, Guard] = {}

    def add(self, guard: Guard) -> None:
        self._guards.setdefault(guard.key(), guard)

    def __iter__(self):
        return iter(self._guards.values())

    def __len__(self) -> int:
        return len(self._guards)

    def snapshot(self) -> dict[tuple, Guard]:
        """The guards now, for :meth:`restore` (a look-ahead that must install none)."""
        return dict(self._guards)

    def restore(self, snapshot: dict[tuple, Guard]) -> None:
        self._guards = dict(snapshot)
