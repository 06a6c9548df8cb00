"""Max reduction over one dimension (given to the constructor), values only."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.max over self.dim, returning the values."""

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.max(x, dim=self.dim)[0]


batch_size = 64
dim1 = 1024
dim2 = 1024
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
