"""Multi-layer perceptron: Linear+ReLU for each hidden layer size, then a final Linear, on a batch of one (matrix-vector products)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Sequential of Linear and ReLU per hidden layer, then a Linear to output_size."""

    def __init__(self, input_size, layer_sizes, output_size):
        super(Model, self).__init__()
        layers = []
        current = input_size
        for size in layer_sizes:
            layers.append(nn.Linear(current, size))
            layers.append(nn.ReLU())
            current = size
        layers.append(nn.Linear(current, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


batch_size = 1
input_size = 4096
layer_sizes = [4096, 4096, 2048]
output_size = 1024


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, layer_sizes, output_size]
