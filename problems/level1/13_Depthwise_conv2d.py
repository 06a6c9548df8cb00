"""Depthwise 2D convolution (groups = channels, 3x3 kernel, stride 1, padding 1, with bias)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """A single nn.Conv2d with one filter per input channel."""

    def __init__(self, channels, kernel_size, padding):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=padding, groups=channels)

    def forward(self, x):
        return self.conv(x)


batch_size = 16
channels = 64
height, width = 256, 256
kernel_size = 3
padding = 1


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size, padding]
