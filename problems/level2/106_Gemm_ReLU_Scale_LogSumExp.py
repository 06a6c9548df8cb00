"""Linear (GEMM + bias), then ReLU, multiplication by a constant, and logsumexp over the features."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear, ReLU, * scale, logsumexp over dim 1 (keepdim): (N, in) -> (N, 1)."""

    def __init__(self, in_features, out_features, scale):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        x = self.linear(x)
        x = torch.relu(x)
        x = x * self.scale
        x = torch.logsumexp(x, dim=1, keepdim=True)
        return x


batch_size = 4096
in_features = 2048
out_features = 4096
scale = 4.0


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
