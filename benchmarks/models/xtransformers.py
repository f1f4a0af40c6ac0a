"""x-transformers (lucidrains): a library with heavy Python-level
configurability (einops, many feature flags). A decoder LM, a ViT encoder and
an autoregressive training step (the wrapper computes the loss)."""
from __future__ import annotations

import torch

from benchmarks.models import Case, Entry, Inputs, register

XT = ("x_transformers",)


def _tokens(b: int, s: int) -> Inputs:
    return Inputs((torch.randint(0, 1000, (b, s)),))


def _decoder_lm():
    from x_transformers import Decoder, TransformerWrapper

    return TransformerWrapper(
        num_tokens=1000, max_seq_len=128,
        attn_layers=Decoder(dim=64, depth=2, heads=4, rotary_pos_emb=True, ff_glu=True),
    )


def x_transformers_decoder() -> Case:
    return Case(_decoder_lm().eval(), _tokens(2, 16), _tokens(2, 24))


def x_transformers_vit() -> Case:
    from x_transformers import Encoder, ViTransformerWrapper

    model = ViTransformerWrapper(image_size=32, patch_size=8, num_classes=10,
                                 attn_layers=Encoder(dim=64, depth=2, heads=4)).eval()
    return Case(model, Inputs((torch.randn(2, 3, 32, 32),)), Inputs((torch.randn(5, 3, 32, 32),)))


def x_transformers_train() -> Case:
    """``AutoregressiveWrapper(model)(tokens)`` shifts the tokens and returns
    the cross-entropy: forward, loss, backward."""
    from x_transformers import AutoregressiveWrapper

    model = AutoregressiveWrapper(_decoder_lm()).train()
    return Case(model, _tokens(2, 17), _tokens(2, 25), loss=lambda out: out, atol=1e-4)


register(Entry("x_transformers", x_transformers_decoder, "x-transformers Decoder, 2 layers, rotary, GLU",
               requires=XT))
register(Entry("x_transformers_vit", x_transformers_vit, "x-transformers ViTransformerWrapper, 2 layers",
               requires=XT))
register(Entry("x_transformers_train", x_transformers_train,
               "x-transformers AutoregressiveWrapper training step (loss, backward)", requires=XT))
