"""Tall-skinny matrix multiplication C = A @ B with A (M x K), B (K x N), M much larger than K and N."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Single matmul of a tall, narrow matrix by a small square one."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 65536
K = 256
N = 256


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]


def get_init_inputs():
    return []
