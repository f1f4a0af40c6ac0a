"""State-space models: ``mambapy``'s pure-PyTorch Mamba (selective scan as a
parallel scan written in Python loops over log2 of the length)."""
from __future__ import annotations

import torch
import torch.nn as nn

from benchmarks.models import Case, Entry, Inputs, register, train_case

DIM = 32


def _mamba() -> nn.Module:
    from mambapy.mamba import Mamba, MambaConfig

    return Mamba(MambaConfig(d_model=DIM, n_layers=2, d_state=8))


def mamba() -> Case:
    return Case(_mamba().eval(), Inputs((torch.randn(2, 16, DIM),)), Inputs((torch.randn(2, 32, DIM),)))


def mamba_train() -> Case:
    """Sequence regression training step: Mamba -> linear head -> MSE."""
    model = nn.Sequential(_mamba(), nn.Linear(DIM, 1))

    def batch(b: int, s: int) -> Inputs:
        return Inputs((torch.randn(b, s, DIM), torch.randn(b, s, 1)))

    return train_case(model, nn.MSELoss(), batch(2, 16), batch(2, 32))


register(Entry("mamba", mamba, "mambapy Mamba, 2 layers, d=32, parallel scan", requires=("mambapy",)))
register(Entry("mamba_train", mamba_train, "mambapy Mamba regression training step (MSE, backward)",
               requires=("mambapy",)))
