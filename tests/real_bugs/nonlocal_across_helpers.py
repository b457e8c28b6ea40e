# Report: https://github.com/pytorch/pytorch/issues/138112
# What went wrong: two nested helpers called from a compiled function share `nonlocal` variables; an
# update made by one was not seen by the other under torch.compile (k stayed 1 instead of 3).
# Reporter's shape: enclosing function with z, k; helpers writing them via `nonlocal`;
# @torch.compile(backend="eager", fullgraph=True) on the function that calls them.
import torch


def run_case():
    level = 1
    seen = 2

    def make_reader():
        def reader(x):
            nonlocal seen, level
            seen = level  # expect: TL203
        return reader

    def bump_then_read(reader, x):
        nonlocal level
        level = 3  # expect: TL203
        reader(x)
        return x.cos()

    @torch.compile(backend="eager", fullgraph=True)
    def entry(x):
        reader = make_reader()
        return bump_then_read(reader, x)  # also: TL203

    entry(torch.randn(2, 3))
    assert level == 3
    assert seen == 3


if __name__ == "__main__":
    run_case()
