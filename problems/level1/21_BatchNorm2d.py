"""BatchNorm2d in training mode (batch statistics, affine) on a 4D tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """A single nn.BatchNorm2d; the module is in training mode, so it normalizes with batch statistics."""

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x):
        return self.bn(x)


batch_size = 16
features = 64
dim1 = 256
dim2 = 256


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
