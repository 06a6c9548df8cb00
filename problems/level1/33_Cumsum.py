"""Cumulative sum (inclusive prefix sum) along dim 1 of a 2D tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies torch.cumsum along self.dim."""

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)


batch_size = 4096
dim = 16384
scan_dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scan_dim]
