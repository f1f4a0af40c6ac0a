"""The model corpus: real programs, built from code with random weights.

Each entry of :data:`MODELS` is an :class:`Entry` whose ``build()`` returns a
:class:`Case`: the model, example inputs, a second input of a different shape
(for the recompile measurement) and, for training entries, how to get the loss
from the output. No downloads: HuggingFace and x-transformers models are built
from small configs. Sizes are chosen so one eager call takes milliseconds on
one CPU core.

Used by ``python -m benchmarks.compare`` and ``tests/test_corpus.py``::

    from benchmarks.models import MODELS, run_step
    case = MODELS["gpt2"].build()
    out = run_step(case, case.model, case.inputs)
"""
from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any, Callable

import torch


@dataclasses.dataclass
class Inputs:
    """Arguments of one call: ``model(*args, **kwargs)``."""

    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        """Shapes, e.g. ``"(2, 16) input_ids=(2, 16)"``."""
        parts = [_shape(a) for a in self.args] + [f"{k}={_shape(v)}" for k, v in self.kwargs.items()]
        return " ".join(parts)


@dataclasses.dataclass
class Case:
    """One built corpus model, ready to run.

    Attributes:
        model: the ``nn.Module`` (in eval mode for inference entries, train
            mode for training entries).
        inputs: example inputs of the first calls.
        inputs2: inputs of another shape (the recompile measurement).
        loss: training entries only: output -> scalar loss (``.backward()`` is
            called on it); None for inference entries.
        atol / rtol: tolerances of the comparison with eager.
    """

    model: torch.nn.Module
    inputs: Inputs
    inputs2: Inputs
    loss: Callable[[Any], torch.Tensor] | None = None
    atol: float = 1e-5
    rtol: float = 1e-4

    @property
    def training(self) -> bool:
        return self.loss is not None


@dataclasses.dataclass(frozen=True)
class Entry:
    """A corpus entry: ``build()`` makes a fresh :class:`Case` (seeded).

    Attributes:
        name: registry key.
        build: the builder.
        description: one line for tables.
        quick: part of the ``--quick`` subset of the benchmark.
        requires: importable modules the builder needs (``transformers``...).
    """

    name: str
    builder: Callable[[], Case]
    description: str
    quick: bool = False
    requires: tuple[str, ...] = ()

    def build(self, seed: int = 0) -> Case:
        torch.manual_seed(seed)
        return self.builder()

    def missing(self) -> list[str]:
        """Required modules that are not installed."""
        return [m for m in self.requires if importlib.util.find_spec(m) is None]


class WithLoss(torch.nn.Module):
    """``forward(*inputs, target) -> loss_fn(model(*inputs), target)``: the
    compiled region of a training step (``backward`` runs on its result)."""

    def __init__(self, model: torch.nn.Module, loss_fn: Callable[[Any, torch.Tensor], torch.Tensor]):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, *args: Any) -> torch.Tensor:
        *inputs, target = args
        return self.loss_fn(self.model(*inputs), target)


def train_case(model: torch.nn.Module, loss_fn: Callable, inputs: Inputs, inputs2: Inputs,
               atol: float = 1e-4, rtol: float = 1e-4) -> Case:
    """A training-step :class:`Case`: ``WithLoss(model, loss_fn)`` in train
    mode, called with ``(*inputs, target)`` (the last argument of each
    :class:`Inputs` is the target)."""
    return Case(WithLoss(model, loss_fn).train(), inputs, inputs2, loss=lambda out: out, atol=atol, rtol=rtol)


def run_step(case: Case, model: Callable, inputs: Inputs) -> Any:
    """One call of ``model`` as the entry uses it.

    Inference: ``model(*args, **kwargs)`` under ``torch.no_grad()``; returns the
    output. Training: zero the gradients, forward, loss, ``backward()``;
    returns ``(loss, {parameter name: grad})``.
    """
    if not case.training:
        with torch.no_grad():
            return model(*inputs.args, **inputs.kwargs)
    case.model.zero_grad(set_to_none=True)
    loss = case.loss(model(*inputs.args, **inputs.kwargs))
    loss.backward()
    grads = {name: p.grad for name, p in case.model.named_parameters() if p.grad is not None}
    return loss.detach(), grads


def tensor_leaves(value: Any, _depth: int = 0) -> list[torch.Tensor]:
    """The tensors inside an output, in a stable order: tensors, lists/tuples,
    dicts (HF ``ModelOutput`` included), and plain objects such as HF ``Cache``
    (through their attributes)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if _depth > 6 or value is None or isinstance(value, (int, float, bool, str, torch.dtype, torch.device)):
        return []
    if isinstance(value, dict) or (hasattr(value, "keys") and hasattr(value, "__getitem__")):
        return [t for k in value.keys() for t in tensor_leaves(value[k], _depth + 1)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensor_leaves(v, _depth + 1)]
    if hasattr(value, "__dict__") and not isinstance(value, torch.nn.Module):
        return [t for v in vars(value).values() for t in tensor_leaves(v, _depth + 1)]
    return []


def max_abs_diff(actual: Any, expected: Any) -> float:
    """Max absolute difference over all tensor leaves.

    Raises:
        AssertionError: when the outputs differ in structure, shape or dtype.
    """
    a, e = tensor_leaves(actual), tensor_leaves(expected)
    if len(a) != len(e):
        raise AssertionError(f"output has {len(a)} tensors, eager has {len(e)}")
    worst = 0.0
    for i, (x, y) in enumerate(zip(a, e)):
        if x.shape != y.shape or x.dtype != y.dtype:
            raise AssertionError(f"output tensor {i}: {x.dtype}{tuple(x.shape)} vs eager {y.dtype}{tuple(y.shape)}")
        if x.numel():
            diff = (x.detach().double() - y.detach().double()).abs()
            worst = max(worst, float(diff.nan_to_num(nan=0.0).max()))
            if bool((x.isnan() != y.isnan()).any()):
                worst = float("inf")
    return worst


def all_close(actual: Any, expected: Any, atol: float, rtol: float) -> bool:
    """Every tensor leaf allclose (NaNs equal) with the same shape and dtype."""
    a, e = tensor_leaves(actual), tensor_leaves(expected)
    return len(a) == len(e) and all(
        x.shape == y.shape and x.dtype == y.dtype
        and torch.allclose(x.detach(), y.detach(), atol=atol, rtol=rtol, equal_nan=True)
        for x, y in zip(a, e)
    )


def _shape(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return str(tuple(value.shape))
    return type(value).__name__


MODELS: dict[str, Entry] = {}


def register(entry: Entry) -> Entry:
    if entry.name in MODELS:
        raise ValueError(f"duplicate corpus entry {entry.name!r}")
    MODELS[entry.name] = entry
    return entry


def quick_names() -> list[str]:
    """The ``--quick`` subset, in registry order."""
    return [name for name, e in MODELS.items() if e.quick]


# One module per library (imports at the bottom: they use Entry).
from benchmarks.models import (  # noqa: E402,F401  (register the entries)
    classic, hf, xtransformers, lucidrains, diffusers_models, pyg, mamba, gpytorch_models, pyro_models,
    zuko_models, peft_models, kornia_models, torchdiffeq_models,
)
