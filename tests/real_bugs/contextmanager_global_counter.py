# Report: https://github.com/pytorch/pytorch/issues/133483
# What went wrong: a @contextlib.contextmanager that bumps a module global (`global counter; counter += 1`) used
# inside a compiled function broke the graph (fullgraph=True raised); the compiled body also reads the global.
# Reporter's shape: counter = 0; @contextmanager increment_counter() with global counter, += 1 / -= 1;
# @torch.compile(backend="eager", fullgraph=True) def f(x): with increment_counter(): y = x + counter.
# torch 2.13 on CPU (this file run): compiles with fullgraph=True and matches eager (fixed since).
import contextlib

import torch

depth = 0


@contextlib.contextmanager
def nested_depth():
    global depth
    try:
        depth += 1  # expect: TL203
        yield
    finally:
        depth -= 1  # expect: TL203


@torch.compile(backend="eager", fullgraph=True)
def shift(x):
    with nested_depth():
        y = x + depth  # expect: TL201
    return y


if __name__ == "__main__":
    print(shift(torch.randn(3)))
