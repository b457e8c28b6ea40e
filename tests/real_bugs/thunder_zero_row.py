# Report: https://github.com/Lightning-AI/lightning-thunder/issues/1986
# What went wrong: a jitted function that zeroes a row of its argument in place (`x[0].zero_()`) did
# not work under thunder.jit; examine() then blamed the unmodified function.
# Reporter's shape: fn(x): x[0].zero_(); jfn = thunder.jit(fn); called with torch.ones(2, 2).
import thunder
import torch


def clear_first_row(x):
    x[0].zero_()  # expect: TL102


if __name__ == "__main__":
    jfn = thunder.jit(clear_first_row)
    x = torch.ones(2, 2)
    jfn(x)
