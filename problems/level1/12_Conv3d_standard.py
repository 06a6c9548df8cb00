"""Standard 3D convolution (cubic 3x3x3 kernel, stride 1, no padding, with bias)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """A single nn.Conv3d."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return self.conv(x)


batch_size = 8
in_channels = 16
out_channels = 32
depth, height, width = 32, 32, 32
kernel_size = 3


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
