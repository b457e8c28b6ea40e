# Report: https://github.com/pytorch/pytorch/issues/114293
# What went wrong: a compiled accumulation over `range(start + 1, end)` with Python int bounds
# recompiled at every step of the caller's loop (guards L['start'] == 1, 2, 3, ... and L['end'] == 10).
# Reporter's shape: torch.compile'd function taking a tensor and two ints, indexing X[start] and
# looping over range(start + 1, end); called from a Python loop with a changing start.
import torch


def accumulate(values, start, end):
    total = values[start]
    for i in range(start + 1, end):  # expect: TL301
        total = total + values[i]
    return total


if __name__ == "__main__":
    values = torch.randn(10, 4)
    compiled_accumulate = torch.compile(accumulate)
    for start in range(9):
        compiled_accumulate(values, start, 10)
