# Report: https://github.com/pytorch/pytorch/issues/95425
# What went wrong: LayerDrop (as in HF MBart) draws `random.uniform(0, 1)` in forward to skip layers;
# dynamo evaluates it once while tracing, so every later step runs the frozen set of layers.
# Reporter's shape: nn.Module forward looping over layers with a Python random draw; torch.compile(model).
import random

import torch
from torch import nn


class DropLayers(nn.Module):
    def __init__(self, width=16, depth=4, layerdrop=0.5):
        super().__init__()
        self.layers = nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(depth))
        self.layerdrop = layerdrop

    def forward(self, x):
        for layer in self.layers:
            dropout_probability = random.uniform(0, 1)  # expect: TL204
            if self.training and dropout_probability < self.layerdrop:
                continue
            x = layer(x)
        return x


if __name__ == "__main__":
    model = DropLayers()
    opt_model = torch.compile(model)
    for _ in range(3):
        opt_model(torch.randn(2, 16, requires_grad=True)).sum().backward()
