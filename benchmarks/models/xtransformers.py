"""x-transformers (lucidrains) decoder: ``TransformerWrapper`` + ``Decoder``,
a library with heavy Python-level configurability (einops, many feature flags)."""
from __future__ import annotations

import torch

from benchmarks.models import Case, Entry, Inputs, register


def x_transformers_decoder() -> Case:
    from x_transformers import Decoder, TransformerWrapper

    model = TransformerWrapper(
        num_tokens=1000, max_seq_len=128,
        attn_layers=Decoder(dim=64, depth=2, heads=4, rotary_pos_emb=True, ff_glu=True),
    ).eval()
    return Case(model, Inputs((torch.randint(0, 1000, (2, 16)),)), Inputs((torch.randint(0, 1000, (2, 24)),)))


register(Entry("x_transformers", x_transformers_decoder, "x-transformers Decoder, 2 layers, rotary, GLU",
               requires=("x_transformers",)))
