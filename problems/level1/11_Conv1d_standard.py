"""Standard 1D convolution (kernel size 3, stride 1, no padding, with bias)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """A single nn.Conv1d."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return self.conv(x)


batch_size = 32
in_channels = 64
out_channels = 128
length = 4096
kernel_size = 3


def get_inputs():
    return [torch.rand(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
