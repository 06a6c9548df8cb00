"""GroupNorm (channels split into groups, affine) on a 4D tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """A single nn.GroupNorm."""

    def __init__(self, num_groups, num_channels):
        super(Model, self).__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_channels)

    def forward(self, x):
        return self.gn(x)


batch_size = 16
features = 64
num_groups = 8
dim1 = 256
dim2 = 256


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [num_groups, features]
