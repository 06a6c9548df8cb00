"""Elementwise LeakyReLU (negative slope given to the constructor) on a 2D tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies torch.nn.functional.leaky_relu with self.negative_slope."""

    def __init__(self, negative_slope):
        super(Model, self).__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 4096
dim = 16384
negative_slope = 0.01


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [negative_slope]
