"""Gaussian processes with ``gpytorch`` (lazy ``linear_operator`` algebra,
kernels that override ``Module.__call__``): a kernel matrix, an exact GP
training step on the marginal log likelihood, and posterior prediction."""
from __future__ import annotations

import torch
import torch.nn as nn

from benchmarks.models import Case, Entry, Inputs, register

GPYTORCH = ("gpytorch",)


def _points(n: int) -> torch.Tensor:
    return torch.rand(n, 2)


def _target(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(3 * x[:, 0]) + torch.cos(2 * x[:, 1]) + 0.05 * torch.randn(len(x))


class KernelMatrix(nn.Module):
    """``forward(x1, x2)``: a sum of scaled RBF and Matern kernels, densified."""

    def __init__(self):
        super().__init__()
        import gpytorch

        k = gpytorch.kernels
        self.kernel = k.ScaleKernel(k.RBFKernel(ard_num_dims=2)) + k.ScaleKernel(k.MaternKernel(nu=2.5))

    def forward(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        return self.kernel(x1, x2).to_dense()


def _exact_gp(x: torch.Tensor, y: torch.Tensor):
    import gpytorch

    class ExactGP(gpytorch.models.ExactGP):
        def __init__(self, likelihood):
            super().__init__(x, y, likelihood)
            self.mean = gpytorch.means.ConstantMean()
            self.covar = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, inputs):
            return gpytorch.distributions.MultivariateNormal(self.mean(inputs), self.covar(inputs))

    return ExactGP(gpytorch.likelihoods.GaussianLikelihood())


class NegativeMLL(nn.Module):
    """``forward(x, y)``: the exact GP's negative marginal log likelihood on
    ``(x, y)`` (set as its training data first, as a training loop over
    mini-batches does)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor):
        super().__init__()
        import gpytorch

        self.gp = _exact_gp(x, y)
        self.mll = gpytorch.mlls.ExactMarginalLogLikelihood(self.gp.likelihood, self.gp)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.gp.set_train_data(x, y, strict=False)
        return -self.mll(self.gp(x), y)


class Posterior(nn.Module):
    """``forward(x) -> (mean, variance)`` of the predictive distribution."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor):
        super().__init__()
        self.gp = _exact_gp(x, y)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        predictive = self.gp.likelihood(self.gp(x))
        return predictive.mean, predictive.variance


def gp_kernel() -> Case:
    return Case(KernelMatrix().eval(), Inputs((_points(12), _points(10))), Inputs((_points(20), _points(16))))


def gp_exact_train() -> Case:
    def batch(n: int) -> Inputs:
        x = _points(n)
        return Inputs((x, _target(x)))

    first = batch(24)
    model = NegativeMLL(*first.args).train()
    return Case(model, first, batch(32), loss=lambda out: out, atol=1e-4)


def gp_posterior() -> Case:
    x = _points(24)
    return Case(Posterior(x, _target(x)).eval(), Inputs((_points(10),)), Inputs((_points(16),)))


register(Entry("gp_kernel", gp_kernel, "gpytorch ScaleKernel(RBF, ARD) + ScaleKernel(Matern 5/2) matrix",
               requires=GPYTORCH))
register(Entry("gp_exact_train", gp_exact_train, "gpytorch exact GP marginal-log-likelihood training step",
               requires=GPYTORCH))
register(Entry("gp_posterior", gp_posterior, "gpytorch exact GP posterior mean and variance", requires=GPYTORCH))
