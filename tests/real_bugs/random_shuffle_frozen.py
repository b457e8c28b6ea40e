# Report: https://github.com/pytorch/pytorch/issues/197085
# What went wrong: `random.shuffle` inside a compiled training step returned the permutation computed
# while tracing on every later call (eager draws a fresh one), without error or graph break.
# Reporter's shape: module-level `random.shuffle(lst)` / `random.sample(...)` inside a torch.compile'd fn.
import random

import torch


def pick_rows(x):
    order = list(range(x.shape[0]))
    random.shuffle(order)  # expect: TL204
    return x[order]


if __name__ == "__main__":
    compiled_pick = torch.compile(pick_rows, backend="eager")
    x = torch.arange(8.0).unsqueeze(1)
    print([compiled_pick(x).flatten().tolist() for _ in range(3)])
