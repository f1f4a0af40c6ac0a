"""Neural ODEs with ``torchdiffeq``: ``odeint`` drives a small vector field
through a fixed-grid solver (a training step) and through the adaptive
Dormand-Prince solver (step-size control on tensor values)."""
from __future__ import annotations

import torch
import torch.nn as nn

from benchmarks.models import Case, Entry, Inputs, register, train_case

DIM = 8


class VectorField(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, 32), nn.Tanh(), nn.Linear(32, DIM))

    def forward(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.net(y) * torch.cos(t)


class NeuralODE(nn.Module):
    """``forward(y0) -> y(1)`` for ``dy/dt = f(t, y)``."""

    def __init__(self, method: str, **options):
        super().__init__()
        self.field = VectorField()
        self.method, self.options = method, options
        self.register_buffer("times", torch.tensor([0.0, 1.0]))

    def forward(self, y0: torch.Tensor) -> torch.Tensor:
        from torchdiffeq import odeint

        return odeint(self.field, y0, self.times, method=self.method, **self.options)[-1]


def _states(n: int) -> torch.Tensor:
    return torch.randn(n, DIM)


def neural_ode_train() -> Case:
    """rk4 on a fixed grid of 4 steps, MSE to a target state, backward."""
    def batch(n: int) -> Inputs:
        return Inputs((_states(n), _states(n)))

    return train_case(NeuralODE("rk4", options={"step_size": 0.25}), nn.MSELoss(), batch(16), batch(24))


def ode_dopri5() -> Case:
    model = NeuralODE("dopri5", rtol=1e-3, atol=1e-4).eval()
    return Case(model, Inputs((_states(16),)), Inputs((_states(24),)))


register(Entry("neural_ode_train", neural_ode_train, "torchdiffeq odeint rk4 (4 steps) training step",
               requires=("torchdiffeq",)))
register(Entry("ode_dopri5", ode_dopri5, "torchdiffeq odeint adaptive dopri5 (rtol 1e-3)", requires=("torchdiffeq",)))
