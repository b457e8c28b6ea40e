# Report: https://github.com/Lightning-AI/lightning-thunder/issues/1525
# What went wrong: with cache="symbolic values", a Python branch on the input's shape was not turned into a
# prologue check; a call with another shape hit the cached trace and took the first call's branch.
# Reporter's shape: foo(a, b): if tuple(a.shape) == tuple((2, 2)): return a / else: return b;
# jfoo = thunder.jit(foo, cache="symbolic values"), called with a (2, 2) then a (2, 1) tensor.
import thunder
import torch


def pick_by_shape(a, b):
    if tuple(a.shape) == tuple((2, 2)):  # expect: TL301
        return a
    else:
        return b


if __name__ == "__main__":
    jfoo = thunder.jit(pick_by_shape, cache="symbolic values")
    print(jfoo(torch.randn(2, 2), torch.randn(1)).shape)
    print(jfoo(torch.randn(2, 1), torch.randn(8)).shape)  # returns a, shape (2, 1); eager returns b
    print("cache hits:", thunder.cache_hits(jfoo))
