"""Elementwise ReLU on a 2D tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies torch.relu."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 256
dim = 131072


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
