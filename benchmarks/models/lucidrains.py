"""Single-architecture packages in the lucidrains style (einops-heavy,
small ``nn.Module`` trees with keyword-only configs): Perceiver, MLP-Mixer,
a speech Conformer, a local-attention LM and a vector quantizer. Each is
built from keyword arguments; one table registers them."""
from __future__ import annotations

import importlib
from typing import Callable

import torch

from benchmarks.models import Case, Entry, Inputs, register


def _tokens(b: int, s: int) -> Inputs:
    return Inputs((torch.randint(0, 256, (b, s)),))


def _randn(*shape: int) -> Inputs:
    return Inputs((torch.randn(*shape),))


# name, module, class, constructor kwargs, first inputs, second inputs, description
TABLE: list[tuple[str, str, str, dict, Callable[[], Inputs], Callable[[], Inputs], str]] = [
    ("perceiver", "perceiver_pytorch", "Perceiver",
     dict(input_channels=3, input_axis=2, num_freq_bands=4, max_freq=10.0, depth=2, num_latents=16, latent_dim=32,
          cross_dim_head=16, latent_dim_head=16, latent_heads=2, num_classes=10),
     lambda: _randn(2, 16, 16, 3), lambda: _randn(2, 20, 20, 3),
     "perceiver-pytorch Perceiver, Fourier features, 2 blocks, 16 latents"),
    ("mlp_mixer", "mlp_mixer_pytorch", "MLPMixer",
     dict(image_size=32, channels=3, patch_size=8, dim=64, depth=2, num_classes=10),
     lambda: _randn(2, 3, 32, 32), lambda: _randn(5, 3, 32, 32), "mlp-mixer-pytorch MLPMixer, 2 layers, patch 8"),
    ("conformer", "conformer", "Conformer",
     dict(dim=64, depth=2, dim_head=16, heads=4, conv_kernel_size=7),
     lambda: _randn(2, 20, 64), lambda: _randn(2, 28, 64), "conformer (speech) Conformer, 2 blocks, d=64"),
    ("local_transformer", "local_attention", "LocalTransformer",
     dict(num_tokens=256, max_seq_len=64, dim=64, depth=2, local_attn_window_size=8, dim_head=16, heads=4),
     lambda: _tokens(2, 32), lambda: _tokens(2, 48), "local-attention LocalTransformer LM, window 8, 2 layers"),
    ("vector_quantize", "vector_quantize_pytorch", "VectorQuantize",
     dict(dim=32, codebook_size=64, codebook_dim=16),
     lambda: _randn(2, 16, 32), lambda: _randn(2, 24, 32),
     "vector-quantize-pytorch VectorQuantize (eval), codebook 64"),
]


def _builder(module: str, cls: str, kwargs: dict, first: Callable[[], Inputs],
             second: Callable[[], Inputs]) -> Callable[[], Case]:
    def build() -> Case:
        model = getattr(importlib.import_module(module), cls)(**kwargs).eval()
        return Case(model, first(), second())

    return build


for _name, _module, _cls, _kwargs, _first, _second, _description in TABLE:
    register(Entry(_name, _builder(_module, _cls, _kwargs, _first, _second), _description, requires=(_module,)))
