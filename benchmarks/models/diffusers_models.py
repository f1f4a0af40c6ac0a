"""HuggingFace ``diffusers`` networks built from config objects (random
weights, no hub access): a pixel-space UNet, a text-conditioned
(cross-attention) UNet, a KL autoencoder, and a denoising training step."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from benchmarks.models import Case, Entry, Inputs, register, train_case

DIFFUSERS = ("diffusers",)


def _unet2d() -> nn.Module:
    from diffusers import UNet2DModel

    return UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                       block_out_channels=(8, 16), down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                       up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=4, attention_head_dim=8)


def _noisy(b: int, size: int, channels: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(b, channels, size, size), torch.randint(0, 1000, (b,))


def unet2d() -> Case:
    return Case(_unet2d().eval(), Inputs(_noisy(2, 16)), Inputs(_noisy(2, 24)))


class NoisePrediction(nn.Module):
    """``forward(noisy, timestep) -> unet(noisy, timestep).sample``: the
    diffusers output dataclass unwrapped for the loss."""

    def __init__(self, unet: nn.Module):
        super().__init__()
        self.unet = unet

    def forward(self, sample: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
        return self.unet(sample, timestep).sample


def unet2d_train() -> Case:
    """Denoising training step: predict the noise, MSE against it, backward."""
    def batch(b: int, size: int) -> Inputs:
        return Inputs((*_noisy(b, size), torch.randn(b, 3, size, size)))

    return train_case(NoisePrediction(_unet2d()), F.mse_loss, batch(2, 16), batch(2, 24))


def unet2d_condition() -> Case:
    """Stable-Diffusion-style UNet on 4-channel latents, cross-attending to
    'text' embeddings (batch 2, 7 then 9 tokens)."""
    from diffusers import UNet2DConditionModel

    model = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, norm_num_groups=4, attention_head_dim=8).eval()

    def batch(size: int, tokens: int) -> Inputs:
        sample, t = _noisy(2, size, channels=4)
        return Inputs((sample, t), {"encoder_hidden_states": torch.randn(2, tokens, 32)})

    return Case(model, batch(8, 7), batch(16, 9))


def vae() -> Case:
    """KL autoencoder (encode, posterior mode, decode)."""
    from diffusers import AutoencoderKL

    model = AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                          up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(16, 32),
                          latent_channels=4, norm_num_groups=8, sample_size=16).eval()
    return Case(model, Inputs((torch.randn(2, 3, 16, 16),)), Inputs((torch.randn(2, 3, 24, 24),)))


register(Entry("unet2d", unet2d, "diffusers UNet2DModel, 2 levels, attention, 16x16", requires=DIFFUSERS))
register(Entry("unet2d_train", unet2d_train, "diffusers UNet2DModel noise-prediction training step (MSE)",
               requires=DIFFUSERS))
register(Entry("unet2d_condition", unet2d_condition, "diffusers UNet2DConditionModel, cross-attention, latents 8x8",
               requires=DIFFUSERS))
register(Entry("vae", vae, "diffusers AutoencoderKL, 2 levels, 16x16", requires=DIFFUSERS))
