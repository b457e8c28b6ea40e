# Report: https://github.com/pytorch/pytorch/issues/169253
# What went wrong: a compiled forward appends to a list that is a class attribute; torch.compile dropped
# the mutation (0 items recorded instead of 2), silently.
# Reporter's shape: `class Model(nn.Module): items = []`; forward does `Model.items.append(x)`;
# m.forward = torch.compile(m.forward).
import torch
import torch.nn as nn


class Recorder(nn.Module):
    seen = []

    def __init__(self):
        super().__init__()

    def forward(self, x):
        Recorder.seen.append(x)  # expect: TL203


if __name__ == "__main__":
    Recorder.seen.clear()
    m = Recorder()
    m.forward = torch.compile(m.forward)
    m(torch.randn(2, 4))
    m(torch.randn(2, 4))
    print(len(Recorder.seen))
