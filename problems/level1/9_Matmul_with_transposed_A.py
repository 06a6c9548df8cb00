"""Matrix multiplication with transposed A: C = A.T @ B with A given as (K x M) and B as (K x N)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Single matmul of A transposed by B."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.matmul(A.T, B)


M = 1024
K = 4096
N = 1024


def get_inputs():
    A = torch.rand(K, M)
    B = torch.rand(K, N)
    return [A, B]


def get_init_inputs():
    return []
