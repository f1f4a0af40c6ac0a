"""``zuko`` conditional normalizing flows: ``flow(context)`` builds a
``torch.distributions`` object whose ``log_prob`` runs the transforms."""
from __future__ import annotations

import torch
import torch.nn as nn

from benchmarks.models import Case, Entry, Inputs, register

FEATURES, CONTEXT = 3, 2


class ConditionalLogProb(nn.Module):
    """``forward(x, c) -> flow(c).log_prob(x)``."""

    def __init__(self, flow: nn.Module):
        super().__init__()
        self.flow = flow

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return self.flow(c).log_prob(x)


def _batch(n: int) -> Inputs:
    return Inputs((torch.randn(n, FEATURES), torch.randn(n, CONTEXT)))


def _flow(cls: str) -> nn.Module:
    import zuko

    return ConditionalLogProb(getattr(zuko.flows, cls)(FEATURES, CONTEXT, transforms=2, hidden_features=[32, 32]))


def zuko_nsf() -> Case:
    return Case(_flow("NSF").eval(), _batch(16), _batch(24))


def zuko_maf_train() -> Case:
    """Masked autoregressive flow, negative mean log likelihood, backward."""
    return Case(_flow("MAF").train(), _batch(16), _batch(24), loss=lambda out: -out.mean(), atol=1e-4)


register(Entry("zuko_nsf", zuko_nsf, "zuko conditional neural spline flow log_prob, 2 transforms",
               requires=("zuko",)))
register(Entry("zuko_maf_train", zuko_maf_train, "zuko conditional MAF max-likelihood training step",
               requires=("zuko",)))
