# Report: https://github.com/pytorch/pytorch/issues/191821
# What went wrong: the compiled function rebinds a module global that a helper it calls reads; the
# compiled result reused the first iteration's value (expected 2, got 1).
# Reporter's shape: dataclass global `region_input`, rebound under `global` inside fn, read by a
# @torch.compiler.nested_compile_region helper; torch.compile(fn, backend="eager", fullgraph=True).
from dataclasses import dataclass

import torch


@dataclass
class Carry:
    hidden: torch.Tensor


carry = Carry(torch.tensor(0))


@torch.compiler.nested_compile_region
def step():
    return carry.hidden + 1  # expect: TL201


def unrolled(hidden):
    global carry
    for _ in range(2):
        carry = Carry(hidden)  # expect: TL203
        hidden = step()
    return hidden


if __name__ == "__main__":
    hidden = torch.tensor(0)
    expected = unrolled(hidden)
    actual = torch.compile(unrolled, backend="eager", fullgraph=True)(hidden)
    torch.testing.assert_close(actual, expected)
