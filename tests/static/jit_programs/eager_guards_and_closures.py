import torch
import torch.nn as nn


def build(dim):
    def helper(t):
        return t * 2

    class Local(nn.Module):
        def forward(self, x):
            return x

    @torch.compile
    def f(x):
        y = helper(x)
        return Local()(y)

    return f


@torch.compile
def g(x):
    if not torch.compiler.is_compiling():
        print("eager only")
    return x + 1


@torch.compile
def k(x, layers: nn.ModuleList):
    for i in range(len(layers)):
        x = layers[i](x)
    if torch.is_tensor(x) and x.numel() == 0:
        return x
    while not torch.isfinite(x).all():
        x = torch.nan_to_num(x)
    return x
