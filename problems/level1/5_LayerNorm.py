"""LayerNorm over the last three dims (features, dim1, dim2) of a 4D tensor, with elementwise affine."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """A single nn.LayerNorm with normalized_shape = (features, dim1, dim2)."""

    def __init__(self, normalized_shape):
        super(Model, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        return self.ln(x)


batch_size = 64
features = 64
dim1 = 64
dim2 = 128


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [(features, dim1, dim2)]
