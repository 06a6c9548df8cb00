"""Conv2d, then Softplus, 2x2 max pooling, and the sum over the channels."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolution, Softplus, MaxPool2d(2), sum over dim 1 (keepdim): (N, C, H, W) -> (N, 1, H', W')."""

    def __init__(self, in_channels, out_channels, kernel_size, pool_size):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.pool = nn.MaxPool2d(pool_size)

    def forward(self, x):
        x = self.conv(x)
        x = torch.nn.functional.softplus(x)
        x = self.pool(x)
        x = torch.sum(x, dim=1, keepdim=True)
        return x


batch_size = 128
in_channels = 4
out_channels = 24
height, width = 128, 128
kernel_size = 3
pool_size = 2


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, pool_size]
