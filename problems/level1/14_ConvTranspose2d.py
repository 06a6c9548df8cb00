"""Transposed 2D convolution (3x3 kernel, stride 2, padding 1, output_padding 1: doubles height and width)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """A single nn.ConvTranspose2d."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding, output_padding=output_padding)

    def forward(self, x):
        return self.conv_transpose(x)


batch_size = 16
in_channels = 128
out_channels = 64
height, width = 64, 64
kernel_size = 3
stride = 2
padding = 1
output_padding = 1


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding]
