"""Linear (GEMM + bias), then LayerNorm over the features, Swish, and a residual add of the Linear output."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = nn.Linear(x); return silu(LayerNorm(y)) + y."""

    def __init__(self, in_features, out_features, eps):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features, eps=eps)

    def forward(self, x):
        y = self.linear(x)
        z = self.norm(y)
        z = torch.nn.functional.silu(z)
        return z + y


batch_size = 16384
in_features = 256
out_features = 2048
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, eps]
