"""Normalizing flows from ``pyro.distributions`` (``TransformModule``s over a
``TransformedDistribution``): log densities and a maximum-likelihood
training step."""
from __future__ import annotations

import torch
import torch.nn as nn

from benchmarks.models import Case, Entry, Inputs, register

PYRO = ("pyro",)
DIM = 4


class FlowLogProb(nn.Module):
    """``forward(x) -> log p(x)`` under a standard normal pushed through
    ``transforms`` (the parameters of those that are modules are this
    module's)."""

    def __init__(self, transforms: list):
        super().__init__()
        for t in transforms:
            # pyro keeps the last (x, y) pair and answers inv(y) from it when y is the same tensor
            # object; the benchmark repeats identical inputs, so every call must really compute
            t._cache_size = 0
        self.transforms = transforms
        self.trainable = nn.ModuleList(t for t in transforms if isinstance(t, nn.Module))
        self.register_buffer("loc", torch.zeros(DIM))
        self.register_buffer("scale", torch.ones(DIM))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import pyro.distributions as dist

        base = dist.Normal(self.loc, self.scale).to_event(1)
        return dist.TransformedDistribution(base, self.transforms).log_prob(x)


def _samples(n: int) -> Inputs:
    return Inputs((torch.randn(n, DIM),))


def pyro_iaf() -> Case:
    """Two affine autoregressive (MADE) transforms with a permutation between."""
    import pyro.distributions.transforms as T

    flow = FlowLogProb([T.affine_autoregressive(DIM, [32]), T.Permute(torch.tensor([3, 2, 1, 0])),
                        T.affine_autoregressive(DIM, [32])])
    return Case(flow.eval(), _samples(16), _samples(24))


def pyro_spline_train() -> Case:
    """Neural spline coupling flow: negative mean log likelihood, backward."""
    import pyro.distributions.transforms as T

    flow = FlowLogProb([T.spline_coupling(DIM, hidden_dims=[32]), T.Permute(torch.tensor([3, 2, 1, 0])),
                        T.spline_coupling(DIM, hidden_dims=[32])]).train()
    return Case(flow, _samples(16), _samples(24), loss=lambda out: -out.mean(), atol=1e-4)


register(Entry("pyro_iaf", pyro_iaf, "pyro affine-autoregressive flow log_prob (2 MADE transforms)", requires=PYRO))
register(Entry("pyro_spline_train", pyro_spline_train, "pyro spline-coupling flow max-likelihood training step",
               requires=PYRO))
