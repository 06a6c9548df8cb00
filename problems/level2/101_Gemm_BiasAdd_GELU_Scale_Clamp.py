"""Linear (GEMM + bias), then a learnable per-feature bias add, exact GELU, multiplication by a constant, and clamp to [min, max]."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear, + bias of shape (out_features,), GELU (erf form), * scale, clamp."""

    def __init__(self, in_features, out_features, bias_shape, scale, clamp_min, clamp_max):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.linear(x)
        x = x + self.bias
        x = torch.nn.functional.gelu(x)
        x = x * self.scale
        x = torch.clamp(x, min=self.clamp_min, max=self.clamp_max)
        return x


batch_size = 8192
in_features = 512
out_features = 4096
scale = 0.5
clamp_min = -0.05
clamp_max = 1.0


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, (out_features,), scale, clamp_min, clamp_max]
