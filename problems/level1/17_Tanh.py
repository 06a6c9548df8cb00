"""Elementwise tanh on a 2D tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies torch.tanh."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.tanh(x)


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
