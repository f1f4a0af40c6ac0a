"""Sources: where a traced value came from in the frame.

A Source names a path from the frame's inputs to a value, e.g.
``AttrSource(LocalSource("self"), "weight")`` is ``self.weight``. Sources serve
three consumers:

- guards: :meth:`Source.guard_expr` renders the path as Python source for the
  generated guard function (``GuardCodeBuilder`` supplies names of constants);
- codegen: :meth:`Source.reconstruct` emits bytecode that loads the value in the
  transformed frame;
- diagnostics: :meth:`Source.name` is the readable path (``L['self'].weight``).

Sources are immutable and hashable so they can key the graph inputs and guards.
"""
from __future__ import annotations

import dataclasses
import keyword
import unicodedata
from typing import Any, Mapping, Protocol


def is_plain_name(name: Any) -> bool:
    """Whether ``name`` may appear as itself in generated source: a str that is an
    identifier, not a keyword, and already in NFKC form (the parser normalises
    identifiers, so ``o.\ufb01`` would read attribute ``fi``). Any other name is
    user text that generated code receives as a bound constant instead."""
    return (
        type(name) is str and name.isidentifier() and not keyword.iskeyword(name)
        and unicodedata.normalize("NFKC", name) == name
    )


class GuardNames(Protocol):
    """What a source needs from the guard code builder."""

    def const(self, value: Any) -> str: ...

    def expr(self, source: "Source") -> str: ...

    def local(self, name: str) -> str: ...

    def freevar_index(self, name: str) -> int: ...

    def cells(self) -> str:
        """The guard's parameter holding the closure cells."""
        ...


class Codegen(Protocol):
    """What a source needs from the bytecode generator."""

    def load_local(self, name: str) -> None: ...

    def load_global(self, name: str, f_globals: dict) -> None: ...

    def load_const(self, value: Any) -> None: ...

    def load_attr(self, name: str) -> None: ...

    def subscr(self) -> None: ...

    def load_source(self, source: "Source") -> None: ...

    def load_callable_source(self, source: "Source") -> None: ...
    def load_callable(self, value: Any) -> None: ...
    def load_method(self, name: str) -> None: ...

    def call(self, nargs: int) -> None: ...


def attr_expr(names: GuardNames, base: str, attr: str) -> str:
    """Guard source reading attribute ``attr`` of expression ``base``: ``base.attr``
    for a plain name, else ``getattr(base, <constant>)`` so no user text is code."""
    return f"{base}.{attr}" if is_plain_name(attr) else f"getattr({base}, {names.const(attr)})"


def _hashed_once(cls: type) -> type:
    """Make the hash of a Source kind computed once per object: a deep path
    (``self.layers[3].attn.q.weight``) is hashed on every dict lookup of the
    trace and guard building, and its generated ``__hash__`` would rehash the
    whole path each time. A copy (or pickle) does not carry the cached value:
    a hash made from ids may differ there."""
    compute = cls.__hash__

    def __hash__(self: Any) -> int:
        try:
            return self.__dict__["_hash"]
        except KeyError:
            value = self.__dict__["_hash"] = compute(self)
            return value

    def __getstate__(self: Any) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    cls.__hash__ = __hash__
    cls.__getstate__ = __getstate__
    return cls


@dataclasses.dataclass(frozen=True)
class Source:
    """Base of all sources."""

    def name(self) -> str:
        raise NotImplementedError(type(self).__name__)

    def guard_expr(self, names: GuardNames) -> str:
        raise NotImplementedError(type(self).__name__)

    def reconstruct(self, codegen: Codegen) -> None:
        raise NotImplementedError(type(self).__name__)

    @property
    def base(self) -> Source | None:
        return None

    def root(self) -> Source:
        src: Source = self
        while src.base is not None:
            src = src.base
        return src

    def depth(self) -> int:
        return 0 if self.base is None else 1 + self.base.depth()

    def __str__(self) -> str:
        return self.name()


@_hashed_once
@dataclasses.dataclass(frozen=True)
class LocalSource(Source):
    """A local variable (argument) of the frame being compiled."""

    local_name: str

    def name(self) -> str:
        return f"L[{self.local_name!r}]"

    def guard_expr(self, names: GuardNames) -> str:
        return names.local(self.local_name)

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_local(self.local_name)


@_hashed_once
@dataclasses.dataclass(frozen=True)
class ClosureSource(Source):
    """A free variable of the frame being compiled (contents of its closure cell)."""

    var_name: str

    def name(self) -> str:
        return f"C[{self.var_name!r}]"

    def guard_expr(self, names: GuardNames) -> str:
        return f"{names.cells()}[{names.freevar_index(self.var_name)}].cell_contents"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_local(self.var_name)


@_hashed_once
@dataclasses.dataclass(frozen=True, eq=False)
class GlobalSource(Source):
    """``f_globals[var_name]`` of some function's module (compared by dict identity)."""

    var_name: str
    f_globals: dict

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, GlobalSource)
            and other.var_name == self.var_name
            and other.f_globals is self.f_globals
        )

    def __hash__(self) -> int:
        return hash((self.var_name, id(self.f_globals)))

    def name(self) -> str:
        module = self.f_globals.get("__name__", "?")
        return f"G[{self.var_name!r}]" if module == "__main__" else f"{module}.{self.var_name}"

    def guard_expr(self, names: GuardNames) -> str:
        return f"{names.const(self.f_globals)}[{names.const(self.var_name)}]"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_global(self.var_name, self.f_globals)


@_hashed_once
@dataclasses.dataclass(frozen=True)
class AttrSource(Source):
    """``base.attr``."""

    base_source: Source
    attr: str

    @property
    def base(self) -> Source:
        return self.base_source

    def name(self) -> str:
        return f"{self.base_source.name()}.{self.attr}"

    def guard_expr(self, names: GuardNames) -> str:
        return attr_expr(names, names.expr(self.base_source), self.attr)

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_source(self.base_source)
        codegen.load_attr(self.attr)


@_hashed_once
@dataclasses.dataclass(frozen=True)
class GetItemSource(Source):
    """``base[key]`` for a constant key (int, str, or another hashable constant)."""

    base_source: Source
    key: Any

    @property
    def base(self) -> Source:
        return self.base_source

    def name(self) -> str:
        return f"{self.base_source.name()}[{self.key!r}]"

    def guard_expr(self, names: GuardNames) -> str:
        key = self.key
        literal = str(key) if type(key) is int else names.const(key)
        return f"{names.expr(self.base_source)}[{literal}]"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_source(self.base_source)
        codegen.load_const(self.key)
        codegen.subscr()


@_hashed_once
@dataclasses.dataclass(frozen=True)
class WeakRefCallSource(Source):
    """``base()`` for a weak reference ``base``: the object it refers to."""

    base_source: Source

    @property
    def base(self) -> Source:
        return self.base_source

    def name(self) -> str:
        return f"{self.base_source.name()}()"

    def guard_expr(self, names: GuardNames) -> str:
        return f"{names.expr(self.base_source)}()"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_callable_source(self.base_source)
        codegen.call(0)


@_hashed_once
@dataclasses.dataclass(frozen=True)
class CallMethodSource(Source):
    """``base.method()``: what a zero-argument method of an input returns, e.g.
    ``x.storage_offset()`` or ``x.untyped_storage().nbytes()`` (metadata the
    tensor guard does not cover, guarded when a trace reads it)."""

    base_source: Source
    method: str

    @property
    def base(self) -> Source:
        return self.base_source

    def name(self) -> str:
        return f"{self.base_source.name()}.{self.method}()"

    def guard_expr(self, names: GuardNames) -> str:
        return attr_expr(names, names.expr(self.base_source), self.method) + "()"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_source(self.base_source)
        codegen.load_method(self.method)
        codegen.call(0)


@_hashed_once
@dataclasses.dataclass(frozen=True)
class ConstSource(Source):
    """A value the frame never reads from outside: reachable as a constant.

    Used for objects bytegraph treats as immutable library members (e.g.
    ``torch.nn.functional.relu``); holding them strongly is harmless.
    """

    value: Any
    label: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConstSource) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)

    def name(self) -> str:
        return self.label

    def guard_expr(self, names: GuardNames) -> str:
        return names.const(self.value)

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_const(self.value)


@_hashed_once
@dataclasses.dataclass(frozen=True)
class ConvertSource(Source):
    """``convert(base)``: an input in the form the graph takes it, when the value
    read from ``base`` cannot be a graph input as is: ``torch.from_numpy(array)``,
    or a tensor-subclass instance seen as a plain tensor. Guards check the
    converted value (after the guards on ``base`` itself); the generated code
    converts on every call."""

    base_source: Source
    convert: Any
    label: str

    @property
    def base(self) -> Source:
        return self.base_source

    def name(self) -> str:
        return f"{self.label}({self.base_source.name()})"

    def guard_expr(self, names: GuardNames) -> str:
        return f"{names.const(self.convert)}({names.expr(self.base_source)})"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_callable(self.convert)
        codegen.load_source(self.base_source)
        codegen.call(1)


def module_attr_source(base: Source, module: Any, attr: str) -> Source:
    """Source of ``module.attr`` for an ``nn.Module``, read through the dict that
    holds it (``_parameters``, ``_buffers``, ``_modules``) to skip the slow
    ``Module.__getattr__`` in guards and in the transformed code."""
    for dict_name in _MODULE_DICTS:
        holder = module.__dict__.get(dict_name)
        if holder is not None and attr in holder:
            return GetItemSource(AttrSource(base, dict_name), attr)
    return AttrSource(base, attr)


#: what guards on process-wide state (grad mode, default dtype...) are listed under
GLOBAL_STATE = "global state"
_MODULE_DICTS = ("_parameters", "_buffers", "_modules")


def user_name(source: Source | None, names: Mapping[Source, str] | None = None) -> str:
    """``source`` as the user's code would spell it: ``x``, ``self.fc.weight``,
    ``cfg['lr']``; a global by its name in the frame's module. ``names`` gives
    sources (and so the paths under them) names of the caller's choosing: the
    compile report names a resume function's stack values by the expression
    that made them, and a compiled module's entry frame's ``module`` ``self``."""
    if names and source in names:
        return names[source]
    if source is None:
        return GLOBAL_STATE
    if isinstance(source, LocalSource):
        stack = source.local_name.removeprefix("___stack")  # a resume function's stack values
        return f"<stack value {stack}>" if stack.isdigit() else source.local_name
    if isinstance(source, ClosureSource):
        return source.var_name
    if isinstance(source, GlobalSource):
        module = source.f_globals.get("__name__", "?")  # a global of the script by its name, others qualified
        return source.var_name if module == "__main__" else f"{module}.{source.var_name}"
    if isinstance(source, GetItemSource):
        base = source.base_source
        if isinstance(base, AttrSource) and base.attr in _MODULE_DICTS and isinstance(source.key, str):
            return f"{user_name(base.base_source, names)}.{source.key}"  # module.attr, read through its dict
        return f"{user_name(base, names)}[{source.key!r}]"
    if isinstance(source, AttrSource):
        return f"{user_name(source.base_source, names)}.{source.attr}"
    if isinstance(source, ConvertSource):
        return f"{source.label}({user_name(source.base_source, names)})"
    if isinstance(source, ConstSource):
        return source.label
    base = source.base
    return source.name() if base is None else source.name().replace(base.name(), user_name(base, names), 1)
