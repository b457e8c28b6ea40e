# Report: https://github.com/pytorch/pytorch/issues/198102
# What went wrong: an in-place update through a gapped `unfold` view of the argument zeroes, under
# torch.compile, every element of the caller's tensor that no window covers (eager leaves them alone).
# Reporter's shape: fn(x): v = x.unfold(1, 1, 5); v.add_(v); return x; torch.compile(fn, backend="aot_eager").
import torch


def double_every_fifth(x):
    windows = x.unfold(1, 1, 5)
    windows.add_(windows)  # expect: TL102
    return x


if __name__ == "__main__":
    x = torch.arange(1, 25, dtype=torch.int64).reshape(4, 6)
    print(double_every_fifth(x.clone()).tolist())
    print(torch.compile(double_every_fifth, backend="aot_eager")(x.clone()).tolist())
