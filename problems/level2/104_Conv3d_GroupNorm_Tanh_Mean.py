"""Conv3d, then GroupNorm, Tanh, and the mean over the depth dimension."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """3D convolution, GroupNorm, Tanh, mean over dim 2 (depth): (N, C, D, H, W) -> (N, C, H, W)."""

    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x):
        x = self.conv(x)
        x = self.group_norm(x)
        x = torch.tanh(x)
        x = torch.mean(x, dim=2)
        return x


batch_size = 16
in_channels = 3
out_channels = 16
depth, height, width = 32, 64, 64
kernel_size = 3
num_groups = 4


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
