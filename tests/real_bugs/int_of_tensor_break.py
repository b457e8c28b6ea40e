# Report: https://github.com/pytorch/pytorch/issues/111652
# What went wrong: converting a tensor to a Python int with `int(x)` inside a compiled function broke the
# graph (unlike `len(x)`), because it reads the tensor's value back to Python.
# Reporter's shape: fn(x): return int(x); torch.compile(fn) called with torch.empty(1).
# torch 2.13 on CPU (this file run): still a graph break (dynamo warns at `int(x)`); the value is right.
import torch


def as_int(x):
    return int(x)  # expect: TL302


if __name__ == "__main__":
    compiled = torch.compile(as_int, backend="eager")
    print(compiled(torch.ones(1)))
    print(torch._dynamo.explain(as_int)(torch.ones(1)).graph_break_count, "graph break(s)")
