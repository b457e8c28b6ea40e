# Report: https://github.com/pytorch/pytorch/issues/113875
# What went wrong: with dynamic=True, a branch on the whole size tuple (`if x.size() != (5, 1, 2, 3):`)
# installed a guard that did not fail for the other shape: the second call reused the first branch
# (cos instead of sin). Reporter's shape: fn(x): if x.size() != (5, 1, 2, 3): return x.cos(); return x.sin();
# torch.compile(fn, backend="eager", dynamic=True) called with (5, 1, 3, 4) then (5, 1, 2, 3).
# torch 2.13 on CPU (this file run): matches eager for both shapes (fixed since).
import torch


def shape_switch(x):
    if x.size() != (5, 1, 2, 3):  # expect: TL301
        return x.cos()
    return x.sin()


if __name__ == "__main__":
    compiled = torch.compile(shape_switch, backend="eager", dynamic=True)
    for shape in ((5, 1, 3, 4), (5, 1, 2, 3)):
        x = torch.ones(shape)
        print(shape, torch.allclose(compiled(x), shape_switch(x)))
