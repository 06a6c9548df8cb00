"""Conv2d (padding 1), then InstanceNorm2d, HardTanh to [-1, 1], and 2x2 average pooling."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolution, instance normalization (no affine), HardTanh, AvgPool2d(2)."""

    def __init__(self, in_channels, out_channels, kernel_size, padding):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)
        self.instance_norm = nn.InstanceNorm2d(out_channels)
        self.hardtanh = nn.Hardtanh(min_val=-1.0, max_val=1.0)
        self.pool = nn.AvgPool2d(kernel_size=2)

    def forward(self, x):
        x = self.conv(x)
        x = self.instance_norm(x)
        x = self.hardtanh(x)
        x = self.pool(x)
        return x


batch_size = 64
in_channels = 8
out_channels = 32
height, width = 128, 128
kernel_size = 3
padding = 1


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, padding]
