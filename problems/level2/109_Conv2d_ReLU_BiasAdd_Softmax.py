"""Conv2d, then ReLU, a learnable per-channel bias add, and softmax over the channels."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolution, ReLU, + bias of shape (out_channels, 1, 1), softmax over dim 1."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x)
        x = x + self.bias
        x = torch.softmax(x, dim=1)
        return x


batch_size = 64
in_channels = 16
out_channels = 32
height, width = 128, 128
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, (out_channels, 1, 1)]
