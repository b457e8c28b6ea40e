# Report: https://github.com/pytorch/pytorch/pull/116981
# What went wrong: a `print` inside a loop of a compiled function broke the graph, and because the break was
# inside a for loop dynamo skipped the frame and the break reason was lost from the logs.
# Reporter's shape: foo(x, y): z = x * y; for i in range(10): z = z * y; print(z); return z;
# torch._dynamo.optimize("eager")(foo).
# torch 2.13 on CPU (this file run): runs, printing from the graph-broken loop.
import torch


def repeat_mul(x, y):
    z = x * y
    for _ in range(10):
        z = z * y
        print(z)  # expect: TL204
    return z


if __name__ == "__main__":
    compiled = torch.compile(repeat_mul, backend="eager")
    compiled(torch.randn(2, 2), torch.randn(2, 2))
