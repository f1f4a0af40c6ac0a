"""``kornia`` differentiable computer vision: colour and filter pipelines,
geometric warps built from per-sample angles, and the SIFT descriptor
module. Pure functions of the images (no parameters, no randomness)."""
from __future__ import annotations

import torch
import torch.nn as nn

from benchmarks.models import Case, Entry, Inputs, register

KORNIA = ("kornia",)


class Filters(nn.Module):
    """grayscale -> Gaussian blur -> Sobel edges; HSV; brightness; Canny."""

    def forward(self, img: torch.Tensor) -> dict[str, torch.Tensor]:
        import kornia as K

        gray = K.color.rgb_to_grayscale(img)
        blurred = K.filters.gaussian_blur2d(gray, (5, 5), (1.5, 1.5))
        magnitude, edges = K.filters.canny(img)
        return {"sobel": K.filters.sobel(blurred), "hsv": K.color.rgb_to_hsv(img),
                "bright": K.enhance.adjust_brightness(img, 0.1), "canny": edges, "magnitude": magnitude}


class Warps(nn.Module):
    """Rotate each image by its own angle about its centre, then a fixed
    perspective warp (``get_perspective_transform`` solves for the matrix)."""

    def forward(self, img: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
        import kornia as K

        b, _, h, w = img.shape
        rotated = K.geometry.transform.rotate(img, angle)
        src = torch.tensor([[[0.0, 0.0], [w - 1.0, 0.0], [w - 1.0, h - 1.0], [0.0, h - 1.0]]]).expand(b, 4, 2)
        dst = src * torch.tensor([0.9, 1.0]) + torch.tensor([1.0, 0.5])
        matrix = K.geometry.transform.get_perspective_transform(src, dst)
        return K.geometry.transform.warp_perspective(rotated, matrix, (h, w))


def _images(b: int, size: int, channels: int = 3) -> torch.Tensor:
    return torch.rand(b, channels, size, size)


def kornia_filters() -> Case:
    return Case(Filters().eval(), Inputs((_images(2, 32),)), Inputs((_images(2, 40),)), atol=1e-4)


def kornia_warps() -> Case:
    return Case(Warps().eval(), Inputs((_images(2, 32), torch.tensor([15.0, -30.0]))),
                Inputs((_images(3, 40), torch.tensor([10.0, 45.0, 90.0]))), atol=1e-4)


def kornia_sift() -> Case:
    from kornia.feature import SIFTDescriptor

    return Case(SIFTDescriptor(patch_size=32).eval(), Inputs((_images(8, 32, channels=1),)),
                Inputs((_images(12, 32, channels=1),)), atol=1e-4)


register(Entry("kornia_filters", kornia_filters, "kornia colour, blur, Sobel and Canny pipeline", requires=KORNIA))
register(Entry("kornia_warps", kornia_warps, "kornia per-sample rotation + perspective warp", requires=KORNIA))
register(Entry("kornia_sift", kornia_sift, "kornia SIFTDescriptor on 32x32 patches", requires=KORNIA))
