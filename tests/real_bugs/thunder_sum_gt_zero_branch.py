# Report: https://github.com/Lightning-AI/lightning-thunder/issues/1247
# What went wrong: a jitted function that branches on a tensor's value (`if a.sum() > 0:`) failed under
# thunder.jit with an error about `bool` not being implemented; thunder cannot trace control flow on data.
# Reporter's shape: foo(a, b): if a.sum() > 0: return b; return a + b; jfoo = thunder.jit(foo).
import thunder
import torch


def choose(a, b):
    if a.sum() > 0:  # expect: TL302
        return b
    return a + b


if __name__ == "__main__":
    jchoose = thunder.jit(choose)
    print(jchoose(torch.full((2, 2), 1), torch.full((2, 2), 3)))
