"""Linear (GEMM + bias), then GroupNorm over feature groups, Softplus, and multiplication by a learnable per-feature weight."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear, GroupNorm(num_groups, out_features) on (N, C), Softplus, * weight of shape (out_features,)."""

    def __init__(self, in_features, out_features, num_groups, multiplier_shape):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.group_norm = nn.GroupNorm(num_groups, out_features)
        self.multiplier = nn.Parameter(torch.randn(multiplier_shape))

    def forward(self, x):
        x = self.linear(x)
        x = self.group_norm(x)
        x = torch.nn.functional.softplus(x)
        x = x * self.multiplier
        return x


batch_size = 8192
in_features = 1024
out_features = 2048
num_groups = 16


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, num_groups, (out_features,)]
