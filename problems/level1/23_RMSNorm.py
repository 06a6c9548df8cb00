"""RMSNorm over the channel dim of a 4D tensor, x / sqrt(mean(x^2, dim=1) + eps) * weight, written out in torch."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """RMS normalization across dim 1 with a learned per-channel weight (randomly initialized)."""

    def __init__(self, num_features, eps):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(num_features))
        self.eps = eps

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x * x, dim=1, keepdim=True) + self.eps)
        return x / rms * self.weight.view(1, -1, 1, 1)


batch_size = 16
features = 64
dim1 = 256
dim2 = 256
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features, eps]
