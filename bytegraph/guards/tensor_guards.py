"""Tensor guards: :class:`TensorMatch` (the metadata a trace specialised on:
type, dtype, device, sizes and strides, ``requires_grad``, dispatch keys...)
and :class:`SameStorage` (whether two tensor inputs share one storage)."""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import torch

from bytegraph.guards.guards import Guard, Names, describe_source
from bytegraph.guards.source import Source
from bytegraph.guards.words import Words


#: tensor types whose ``requires_grad`` is torch's own getter, which returns a bool
_BOOL_REQUIRES_GRAD = (torch.Tensor, torch.nn.Parameter)


@dataclasses.dataclass(frozen=True, eq=False)
class TensorMatch(Guard):
    """Tensor metadata the trace specialised on.

    ``sizes``/``strides`` hold ``None`` for dynamic dimensions (checked by the
    ShapeEnv's guards instead). Stride checks collapse to ``is_contiguous()``
    when the example was contiguous: equal sizes plus contiguity imply equal
    strides except on size-1 dimensions, whose stride is never used. Strides of
    non-contiguous dynamic tensors are guarded by the ShapeEnv.
    """

    tensor_type: type = torch.Tensor
    dtype: torch.dtype = torch.float32
    device: torch.device = torch.device("cpu")
    requires_grad: bool = False
    sizes: tuple = ()
    strides: tuple = ()
    contiguous: bool = True
    order: ClassVar[int] = 3

    @staticmethod
    def of(source: Source, t: torch.Tensor, dynamic_dims: frozenset = frozenset()) -> "TensorMatch":
        """The guard for ``t``; ``dynamic_dims`` are dims the ShapeEnv made
        symbolic (their sizes are guarded by ShapeEnv guards instead)."""
        sizes = tuple(None if i in dynamic_dims else int(s) for i, s in enumerate(t.size()))
        strides = tuple(None if dynamic_dims else int(s) for s in t.stride())
        return TensorMatch(
            source,
            type(t),
            t.dtype,
            t.device,
            t.requires_grad,
            sizes,
            strides,
            t.is_contiguous(),
        )

    checks_tensor: ClassVar[bool] = True

    def checked_type(self) -> type | None:
        return self.tensor_type

    def dynamic_dims(self) -> list[int]:
        """The dims whose sizes the ShapeEnv guards (numbered ``s0, s1, ...`` in words)."""
        return [dim for dim, size in enumerate(self.sizes) if size is None]

    def describe(self, words: Words) -> tuple[str, str]:
        sizes = ", ".join(
            (words.symbol(self.source, d) or "?") if s is None else str(s) for d, s in enumerate(self.sizes)
        )
        kind = "tensor" if self.tensor_type is torch.Tensor else self.tensor_type.__name__
        dtype = str(self.dtype).removeprefix("torch.")
        text = f"{dtype} {kind} of shape ({sizes}{',' if len(self.sizes) == 1 else ''})"
        if self.device.type != "cpu":
            text += f" on {self.device}"
        if self.requires_grad:
            text += ", requires_grad"
        if not self.contiguous:
            strides = ", ".join("?" if s is None else str(s) for s in self.strides)
            text += f", strides ({strides})"
        return words.name(self.source), text

    def check(self, names: Names, value: str) -> str:
        v = value
        # (each tensor attribute read costs ~0.1 µs from Python: the cheapest reads that decide)
        device = f"{v}.is_cpu" if self.device.type == "cpu" else f"{v}.device == {names.const(self.device)}"
        if self.tensor_type in _BOOL_REQUIRES_GRAD:  # their requires_grad is a bool: its truth decides
            requires_grad = f"{v}.requires_grad" if self.requires_grad else f"not {v}.requires_grad"
        else:
            requires_grad = f"{v}.requires_grad is {self.requires_grad}"
        parts = [
            f"type({v}) is {names.const(self.tensor_type)}",
            f"{v}.dtype is {names.const(self.dtype)}",
            device,
            requires_grad,
        ]
        if None not in self.sizes:
            parts.append(f"{v}.shape == {names.const(torch.Size(self.sizes))}")
        else:
            parts.append(f"{v}.dim() == {len(self.sizes)}")
            shape = f"{v}.shape"
            parts += [f"{shape}[{i}] == {s}" for i, s in enumerate(self.sizes) if s is not None]
        if self.contiguous:
            parts.append(f"{v}.is_contiguous()")
        elif None not in self.strides:
            parts.append(f"{v}.stride() == {names.const(self.strides)}")
        return " and ".join(parts)

    def explain(self, actual: Any) -> str:
        name = f"tensor {describe_source(self.source)}"
        if not isinstance(actual, torch.Tensor):
            return f"{describe_source(self.source)} is no longer a tensor (got {type(actual).__qualname__})"
        if type(actual) is not self.tensor_type:
            return f"{name} type mismatch: expected {self.tensor_type.__qualname__}, got {type(actual).__qualname__}"
        if actual.dtype != self.dtype:
            return f"{name} dtype mismatch: expected {self.dtype}, got {actual.dtype}"
        if actual.device != self.device:
            return f"{name} device mismatch: expected {self.device}, got {actual.device}"
        if actual.requires_grad != self.requires_grad:
            return f"{name} requires_grad mismatch: expected {self.requires_grad}, got {actual.requires_grad}"
        if actual.dim() != len(self.sizes):
            return f"{name} rank mismatch: expected {len(self.sizes)}, got {actual.dim()}"
        for i, (want, got) in enumerate(zip(self.sizes, actual.size())):
            if want is not None and want != got:
                return f"{name} size mismatch at index {i}: expected {want}, got {got}"
        if self.contiguous and not actual.is_contiguous():
            return f"{name} is no longer contiguous"
        for i, (want, got) in enumerate(zip(self.strides, actual.stride())):
            if want is not None and want != got:
                return f"{name} stride mismatch at index {i}: expected {want}, got {got}"
        return f"{name} metadata changed"


@dataclasses.dataclass(frozen=True, eq=False)
class SameStorage(Guard):
    """Two tensor inputs share one storage (``same``) or do not:
    ``a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()``.
    Installed when a trace compared data pointers of their tensors."""

    other: Source | None = None
    same: bool = True
    order: ClassVar[int] = 4

    def key(self) -> tuple:
        return ("SameStorage", self.source, self.other)

    def describe(self, words: Words) -> tuple[str, str]:
        verb = "shares" if self.same else "does not share"
        return words.name(self.source), f"{verb} its storage with {words.name(self.other)}"

    def check(self, names: Names, value: str) -> str:
        raise AssertionError("rendered by the code builder, which knows each source's expression")

    def explain(self, actual: Any) -> str:
        now = "no longer shares" if self.same else "now shares"
        return f"{describe_source(self.source)} {now} its storage with {describe_source(self.other)}"
