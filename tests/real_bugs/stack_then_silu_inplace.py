# Report: https://github.com/pytorch/pytorch/issues/93283
# What went wrong: `torch.stack([input])` taken before an in-place SiLU on the same input returned the
# SiLU'd values under torch.compile (0.7311 instead of 1.0).
# Reporter's shape: fn(input): rt = torch.stack([input]); F.silu(input, inplace=True); return rt; torch.compile(fn).
import torch


def stacked_before_silu(inp):
    stacked = torch.stack([inp])
    activated = torch.nn.functional.silu(inp, inplace=True)  # expect: TL103
    return stacked


if __name__ == "__main__":
    x = torch.tensor([1.0, 1.0])
    eager = stacked_before_silu(x.clone())
    compiled = torch.compile(stacked_before_silu)(x.clone())
    assert torch.allclose(eager, compiled), (eager, compiled)
