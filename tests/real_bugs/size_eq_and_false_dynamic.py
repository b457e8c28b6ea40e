# Report: https://github.com/pytorch/pytorch/issues/137513
# What went wrong: with dynamic=True, `if x.size()[0] == 10 and False:` still evaluated the size comparison
# and guarded on it, so inputs of another first size recompiled although the branch can never be taken.
# Reporter's shape: @torch.compile(fullgraph=True, dynamic=True) def f(x): if (x.size()[0] == 10 and False):
# return x; return x * 2; called on (10, 10), (100, 100), (10, 2), (1000, 1000).
# torch 2.13 on CPU (this file run): still recompiles on the guard `x.size()[0] != 10` from that line.
import torch


@torch.compile(fullgraph=True, dynamic=True)
def double(x):
    if x.size()[0] == 10 and False:  # expect: TL301
        return x
    return x * 2


if __name__ == "__main__":
    torch._logging.set_logs(recompiles=True)
    for shape in ((10, 10), (100, 100), (10, 2), (1000, 1000)):
        double(torch.rand(*shape))
