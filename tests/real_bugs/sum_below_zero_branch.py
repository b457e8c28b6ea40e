# Report: https://github.com/pytorch/torchdynamo/issues/1883
# What went wrong: the reporter expected `allow_in_graph` to keep a comparison in the graph, but the graph broke
# at `if y < 0:` because `y = x.sum()` is a tensor: branching on its value is data-dependent control flow.
# Reporter's shape: toy_example(a, b): x = torch.add(a, 33); y = x.sum(); if y < 0: x = torch.add(x, 55);
# x = torch.add(x, b); return x; explained with dynamo.explain.
# torch 2.13 on CPU (this file run): one graph break, at `if y < 0:`.
import torch


def toy_example(a, b):
    x = torch.add(a, 33)
    y = x.sum()
    if y < 0:  # expect: TL302
        x = torch.add(x, 55)
    x = torch.add(x, b)
    return x


if __name__ == "__main__":
    compiled = torch.compile(toy_example, backend="eager")
    print(compiled(torch.randn(10), torch.randn(10)).shape)
    print(torch._dynamo.explain(toy_example)(torch.randn(10), torch.randn(10)).graph_break_count, "graph break(s)")
