"""Multi-layer LSTM (batch_first, zero initial state) over a sequence, then a linear head on the last time step's output."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Stacked nn.LSTM followed by nn.Linear applied to the final time step."""

    def __init__(self, input_size, hidden_size, num_layers, output_size):
        super(Model, self).__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1, :])


batch_size = 32
seq_len = 128
input_size = 128
hidden_size = 256
num_layers = 2
output_size = 10


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size]
