"""Cross-entropy loss of logits against integer class targets (mean reduction, scalar output)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies torch.nn.functional.cross_entropy."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.cross_entropy(predictions, targets)


batch_size = 8192
num_classes = 4096


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
