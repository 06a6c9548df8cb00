"""ConvTranspose2d (stride 2, doubles height and width), then BatchNorm2d (training mode, batch statistics), Tanh, and 2x2 max pooling."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Transposed convolution, batch normalization, Tanh, MaxPool2d(2)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.bn = nn.BatchNorm2d(out_channels)
        self.pool = nn.MaxPool2d(kernel_size=2)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.bn(x)
        x = torch.tanh(x)
        x = self.pool(x)
        return x


batch_size = 128
in_channels = 32
out_channels = 16
height, width = 64, 64
kernel_size = 4
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
