# Report: https://github.com/pytorch/pytorch/issues/94777
# What went wrong: an in-place op on the argument changed the result of an op computed from it before
# (eager log(3) = 1.0986, compiled 0.0940: the log was read after the in-place log_).
# Reporter's shape: func(x): y = torch.log(x); x.log_(); return y; torch.compile(func).
import torch


def log_twice(x):
    y = torch.log(x)
    x.log_()  # expect: TL103
    return y


if __name__ == "__main__":
    x = torch.tensor(3.0)
    print(log_twice(x.clone()), torch.compile(log_twice)(x.clone()))
