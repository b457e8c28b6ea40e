# Report: https://github.com/pytorch/pytorch/pull/189027 (problem statement and repro)
# What went wrong: `os.getenv` read inside a compiled function is baked into the graph with no guard:
# after the variable changes, the compiled function keeps taking the old branch forever.
# Reporter's shape: @torch.compile(fullgraph=True) fn branching on int(os.getenv("FLAG", "0")).
import os

import torch


@torch.compile(fullgraph=True)
def shift(x):
    if int(os.getenv("SHIFT_UP", "0")):  # expect: TL204
        return x + 1
    return x - 1


if __name__ == "__main__":
    os.environ["SHIFT_UP"] = "1"
    x = torch.zeros(3)
    shift(x)
    os.environ["SHIFT_UP"] = "0"
    print(shift(x))  # still x + 1
