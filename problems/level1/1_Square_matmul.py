"""Square matrix multiplication C = A @ B (N x N times N x N)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Single square matrix multiplication."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


N = 2048


def get_inputs():
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]


def get_init_inputs():
    return []
