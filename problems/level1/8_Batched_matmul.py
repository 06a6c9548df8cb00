"""Batched matrix multiplication C[b] = A[b] @ B[b] via torch.bmm (batch x M x K times batch x K x N)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Single torch.bmm."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.bmm(A, B)


batch_size = 64
M = 512
K = 256
N = 512


def get_inputs():
    A = torch.rand(batch_size, M, K)
    B = torch.rand(batch_size, K, N)
    return [A, B]


def get_init_inputs():
    return []
