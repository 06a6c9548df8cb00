"""Mean reduction over one dimension (given to the constructor), keepdim=False."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.mean over self.dim."""

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.mean(x, dim=self.dim)


batch_size = 64
dim1 = 1024
dim2 = 1024
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
