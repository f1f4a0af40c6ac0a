"""Plain-PyTorch corpus entries: MLP, ResNet-style CNN, TransformerEncoder,
LSTM, Python control flow on shapes, data-dependent ops."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from benchmarks.models import Case, Entry, Inputs, register, train_case


def mlp() -> Case:
    model = nn.Sequential(
        nn.Linear(128, 256), nn.GELU(), nn.LayerNorm(256),
        nn.Linear(256, 256), nn.ReLU(), nn.Dropout(0.1),
        nn.Linear(256, 10),
    ).eval()
    return Case(model, Inputs((torch.randn(32, 128),)), Inputs((torch.randn(48, 128),)))


class BasicBlock(nn.Module):
    """conv-bn-relu-conv-bn plus a (projected) shortcut, as in torchvision's ResNet."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.shortcut is None else self.shortcut(x)
        return F.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, widths: tuple[int, ...] = (16, 32, 64), num_classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            blocks += [BasicBlock(cin, w, 1 if i == 0 else 2), BasicBlock(w, w, 1)]
            cin = w
        self.layers = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(self.pool(x), 1))


def resnet() -> Case:
    return Case(ResNet().eval(), Inputs((torch.randn(4, 3, 32, 32),)), Inputs((torch.randn(4, 3, 40, 40),)))


def resnet_train() -> Case:
    """A training step: forward, cross-entropy, backward (BatchNorm in train
    mode updates its running statistics: a buffer mutation)."""
    model = ResNet().train()

    def batch(n: int, size: int) -> Inputs:
        return Inputs((torch.randn(n, 3, size, size), torch.randint(0, 10, (n,))))

    return train_case(model, nn.CrossEntropyLoss(), batch(4, 32), batch(6, 32))


def transformer_encoder() -> Case:
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    return Case(model, Inputs((torch.randn(4, 16, 64),)), Inputs((torch.randn(4, 24, 64),)))


class LSTMTagger(nn.Module):
    """Embedding -> 2-layer bidirectional LSTM -> per-token linear."""

    def __init__(self, vocab: int = 500, dim: int = 64, hidden: int = 64, tags: int = 12):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, tags)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, (h, c) = self.lstm(self.embed(tokens))
        return self.head(out).log_softmax(-1) + h.mean(0, keepdim=True).mean(-1, keepdim=True).transpose(0, 1)


def lstm() -> Case:
    return Case(LSTMTagger().eval(), Inputs((torch.randint(0, 500, (4, 20)),)), Inputs((torch.randint(0, 500, (4, 28)),)))


class ShapeControlFlow(nn.Module):
    """Python control flow on shapes and a dict output: branches on sizes, a loop
    whose trip count is a size, integer arithmetic on sizes, an optional key."""

    def __init__(self, dim: int = 32):
        super().__init__()
        self.short = nn.Linear(dim, dim)
        self.long = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, dim))
        self.dim = dim

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        b, t, d = x.shape
        h = self.long(x) if t > 8 else self.short(x)
        window = max(2, t // 4)
        pooled = [h[:, i:i + window].mean(1) for i in range(0, t, window)]
        out = {"pooled": torch.stack(pooled, 1), "scaled": h * (d ** -0.5)}
        if b % 2 == 0:
            out["pairs"] = h.reshape(b // 2, 2, t, d).sum(1)
        if x.size(-1) == self.dim:
            out["norm"] = h.norm(dim=-1)
        out["sizes"] = torch.tensor([b, t, len(pooled)])
        return out


def shape_control_flow() -> Case:
    return Case(ShapeControlFlow().eval(), Inputs((torch.randn(4, 12, 32),)), Inputs((torch.randn(4, 20, 32),)))


class DataDependent(nn.Module):
    """Data-dependent operations: ``.item()`` feeding Python arithmetic, a Python
    branch on a tensor value, ``tolist()``, and ``nonzero`` (an output whose size
    depends on the data)."""

    def __init__(self, dim: int = 32):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = self.proj(x)
        scale = h.abs().max().item()
        h = h / (1.0 + scale)
        if h.sum() > 0:
            h = h.relu()
        else:
            h = -h
        counts = (h > 0).sum(0).tolist()
        busiest = counts.index(max(counts))
        rows = (h[:, busiest] > 0).nonzero().squeeze(-1)
        picked = self.out(h[rows])
        return {"picked": picked, "rows": rows, "mean": picked.mean(0) * len(counts)}


def data_dependent() -> Case:
    return Case(DataDependent().eval(), Inputs((torch.randn(16, 32),)), Inputs((torch.randn(24, 32),)))


register(Entry("mlp", mlp, "MLP 128-256-256-10, batch 32", quick=True))
register(Entry("resnet", resnet, "ResNet-style CNN (6 basic blocks), 4x3x32x32"))
register(Entry("resnet_train", resnet_train, "ResNet-style CNN training step (BatchNorm train mode)", quick=True))
register(Entry("transformer_encoder", transformer_encoder, "nn.TransformerEncoder, 2 layers, d=64"))
register(Entry("lstm", lstm, "Embedding + 2-layer bidirectional nn.LSTM tagger"))
register(Entry("shape_control_flow", shape_control_flow, "Python branches/loops on shapes, dict output"))
register(Entry("data_dependent", data_dependent, ".item(), tensor-valued if, tolist(), nonzero", quick=True))
