# Report: https://github.com/Lightning-AI/lightning-thunder/issues/2756
# What went wrong: the jitted function writes in place into two inputs where the second is a view of the first
# (y = x[:2]); thunder grouped each input's aliases separately, so reordering the writes could silently give
# wrong values. Reporter's shape: f(x, y): x.add_(1); y.mul_(2); return x, y; jf = thunder.jit(f);
# jf(x, x[:2]).
import thunder
import torch


def bump_and_scale(x, y):
    x.add_(1)  # expect: TL103
    y.mul_(2)  # expect: TL103
    return x, y


if __name__ == "__main__":
    jf = thunder.jit(bump_and_scale)
    x = torch.randn(5)
    jf(x, x[:2])
    print(thunder.last_traces(jf)[-1])
