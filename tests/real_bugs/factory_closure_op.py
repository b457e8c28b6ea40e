# Report: https://github.com/pytorch/pytorch/issues/197811
# What went wrong: two closures made by one factory share a code object but capture different ops;
# torch.compile did not guard the captured cell, so the second compiled closure reused the first one's
# graph (add where mul was asked: 9 instead of 18).
# Reporter's shape: `def make(op): def fn(x, y): return op(x, y)`; torch.compile(add), torch.compile(mul).
import torch


def make_binary(op):
    def apply(x, y):
        return op(x, y)  # expect: TL202
    return apply


add = make_binary(torch.Tensor.__add__)
mul = make_binary(torch.Tensor.__mul__)

if __name__ == "__main__":
    x = torch.tensor(6.0)
    y = torch.tensor(3.0)
    print(torch.compile(add, dynamic=True)(x, y), torch.compile(mul, dynamic=True)(x, y))
