"""Elementwise a * b + c with broadcasting: a is (B, N), b is a row (1, N), c is a column (B, 1)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiply by a broadcast row, then add a broadcast column."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, a, b, c):
        return a * b + c


batch_size = 8192
dim = 8192


def get_inputs():
    a = torch.randn(batch_size, dim)
    b = torch.randn(1, dim)
    c = torch.randn(batch_size, 1)
    return [a, b, c]


def get_init_inputs():
    return []
