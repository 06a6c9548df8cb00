"""Small CNN classifier: three conv3x3+ReLU+maxpool2 stages (32, 64, 128 channels), flatten, Linear+ReLU, Linear to class logits."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Three convolution stages, each halving the image, then a two-layer classifier head."""

    def __init__(self, in_channels, image_size, hidden_features, num_classes):
        super(Model, self).__init__()
        assert image_size % 8 == 0
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 128, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        side = image_size // 8
        self.fc1 = nn.Linear(128 * side * side, hidden_features)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(hidden_features, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        x = self.relu(self.fc1(x))
        return self.fc2(x)


batch_size = 64
in_channels = 3
image_size = 64
hidden_features = 256
num_classes = 10


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, image_size, hidden_features, num_classes]
