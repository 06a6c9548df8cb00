"""Conv3d, then multiplication by a constant, clamp to [min, max], and the max over the channels."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """3D convolution, * scale, clamp, amax over dim 1: (N, C, D, H, W) -> (N, D, H, W)."""

    def __init__(self, in_channels, out_channels, kernel_size, scale, clamp_min, clamp_max):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.conv(x)
        x = x * self.scale
        x = torch.clamp(x, min=self.clamp_min, max=self.clamp_max)
        x = torch.amax(x, dim=1)
        return x


batch_size = 32
in_channels = 4
out_channels = 16
depth, height, width = 16, 64, 64
kernel_size = 3
scale = 0.5
clamp_min = -0.6
clamp_max = 0.6


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scale, clamp_min, clamp_max]
