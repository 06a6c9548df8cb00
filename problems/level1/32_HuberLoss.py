"""Smooth L1 (Huber) loss between predictions and targets, beta 1.0, mean reduction (scalar output)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies torch.nn.functional.smooth_l1_loss with self.beta."""

    def __init__(self, beta):
        super(Model, self).__init__()
        self.beta = beta

    def forward(self, predictions, targets):
        return torch.nn.functional.smooth_l1_loss(predictions, targets, beta=self.beta)


batch_size = 4096
dim = 16384
beta = 1.0


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [beta]
