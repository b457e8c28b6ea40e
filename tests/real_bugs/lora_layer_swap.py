# Report: https://github.com/pytorch/pytorch/issues/120958
# What went wrong: diffusers' LoRA-compatible layer changes behaviour when `set_lora_layer` stores a
# new sub-layer; the compiled module was not recompiled and kept running the plain Linear.
# Reporter's shape: nn.Linear subclass with `self.lora_layer = None`, a setter, and
# `if self.lora_layer is None:` in forward; torch.compile(net) called before and after the setter.
from typing import Optional

import torch
import torch.nn as nn


class LoraCompatibleLinear(nn.Linear):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lora_layer = None

    def set_lora_layer(self, lora_layer: Optional[nn.Module]):
        self.lora_layer = lora_layer

    def forward(self, x):
        if self.lora_layer is None:  # expect: TL205
            return super().forward(x)
        return super().forward(x) + self.lora_layer(x)


if __name__ == "__main__":
    net = LoraCompatibleLinear(1, 1)
    compiled = torch.compile(net)
    x = torch.ones(1, 1)
    before = compiled(x)
    net.set_lora_layer(nn.Linear(1, 1))
    after = compiled(x)
    print(before, after, net(x))
