"""Conv2d, then multiplication by a constant, a learnable per-channel bias add, and Mish."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolution, * scale, + bias of shape (out_channels, 1, 1), Mish (x * tanh(softplus(x)))."""

    def __init__(self, in_channels, out_channels, kernel_size, scale, bias_shape):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv(x)
        x = x * self.scale
        x = x + self.bias
        x = torch.nn.functional.mish(x)
        return x


batch_size = 64
in_channels = 16
out_channels = 32
height, width = 128, 128
kernel_size = 3
scale = 1.5


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scale, (out_channels, 1, 1)]
