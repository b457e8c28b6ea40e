# Report: https://github.com/pytorch/pytorch/issues/180845
# What went wrong: `.item()` on each element, inside a list comprehension, to compute with Python's math
# module: with fullgraph=True dynamo raised "Unsupported Tensor.item() call" (eager runs).
# Reporter's shape: @torch.compile(fullgraph=True) def forward(x): result_list = [math.sqrt(abs(val.item())
# + 1e-8) for val in x.flatten()]; return torch.tensor(result_list).view(x.shape).
# torch 2.13 on CPU (this file run): compiles without error (the .item() calls are captured).
import math

import torch


@torch.compile(fullgraph=True)
def elementwise_root(x):
    roots = [math.sqrt(abs(v.item()) + 1e-8) for v in x.flatten()]  # expect: TL302
    return torch.tensor(roots).view(x.shape)


if __name__ == "__main__":
    try:
        print(elementwise_root(torch.randn(4, 10)).shape)
    except Exception as e:  # the reported failure
        print(type(e).__name__, str(e).splitlines()[0])
