"""A small model of a user's own, compiled with ``torch.compile``: inlined
helpers (``rms_norm``, ``Attention``, ``MLP``), a gate whose ``__call__``
reads a tensor's value and branches on it (a graph break), a ``print`` (a
graph break), and calls with a second sequence length (a recompile with the
length dynamic). Compared with eager.

Run it through bytegraph with ``bytegraph run --report report.html examples/gated_mlp.py``.
"""
import sys

import torch
from torch import nn


def rms_norm(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (y.transpose(1, 2) for y in (q, k, v))
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.down(nn.functional.gelu(self.up(x)))


class Gate:
    """Scales its input down when its mean is large: a branch on a tensor's value."""

    def __init__(self, limit):
        self.limit = limit

    def __call__(self, x):
        level = x.abs().mean().item()
        if level > self.limit:
            x = x * (self.limit / level)
        return x


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.Parameter(torch.ones(dim))
        self.norm2 = nn.Parameter(torch.ones(dim))
        self.attn = Attention(dim, heads)
        self.mlp = MLP(dim)
        self.gate = Gate(limit=0.5)

    def forward(self, x):
        x = x + self.attn(rms_norm(x, self.norm1))
        x = self.gate(x)
        return x + self.mlp(rms_norm(x, self.norm2))


class GatedModel(nn.Module):
    def __init__(self, vocab=100, dim=32, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        print(f"hidden norm {x.norm():.3f}", file=sys.stderr)
        return self.head(rms_norm(x, 1.0))


def main():
    torch.manual_seed(0)
    model = GatedModel().eval()
    compiled = torch.compile(model, backend="eager")
    worst = 0.0
    for length in (8, 12, 16):  # the second length recompiles with the length dynamic
        tokens = torch.randint(0, 100, (2, length))
        worst = max(worst, (compiled(tokens) - model(tokens)).abs().max().item())
    print(f"gated model (2 blocks), backend=eager: max abs diff vs eager {worst:.2e}")
    assert worst < 1e-5, worst


if __name__ == "__main__":
    main()
