"""2D average pooling (3x3 window, stride 1, padding 1, zero padding counted) on a 4D tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """A single nn.AvgPool2d."""

    def __init__(self, kernel_size, stride, padding):
        super(Model, self).__init__()
        self.pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


batch_size = 16
channels = 64
height, width = 256, 256
kernel_size = 3
stride = 1
padding = 1


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
