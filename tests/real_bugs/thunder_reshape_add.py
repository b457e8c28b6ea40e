# Report: https://github.com/Lightning-AI/lightning-thunder/issues/957 (test shape from its fix, PR #958)
# What went wrong: `reshape` may return a view or a copy; with functionalization thunder silently
# produced results that differ from PyTorch for an in-place op on a reshape result, so thunder now
# raises for reshape/flatten followed by an in-place op.
# Reporter's shape: jitted f(x): y = x.reshape(6, 4); y.add_(1); return y.
import thunder
import torch


def bump_reshaped(x):
    y = x.reshape(6, 4)
    y.add_(1)  # expect: TL101
    return y


if __name__ == "__main__":
    x = torch.randn((4, 6))
    jf = thunder.jit(bump_reshaped)
    jf(x)
