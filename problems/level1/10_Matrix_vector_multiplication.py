"""Matrix-vector multiplication C = A @ B with A (M x K) and B a column vector (K x 1)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Single matmul of a matrix by a K x 1 vector."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 4096
K = 16384


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, 1)
    return [A, B]


def get_init_inputs():
    return []
