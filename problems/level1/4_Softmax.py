"""Softmax over dim 1 of a 2D tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies torch.softmax along dim=1."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 256
dim = 65536


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
