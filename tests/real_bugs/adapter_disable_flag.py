# Report: https://github.com/pytorch/pytorch/issues/124717
# What went wrong: a bool attribute of the compiled module, flipped by a context manager between calls
# (torchtune's disable-adapter switch), was not guarded: the compiled module kept the first branch.
# Reporter's shape: `if self.disabled:` in forward; mod = torch.compile(mod); `with disable_adapter(mod):`.
import contextlib

import torch


class LoraLikeBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.adapter_off = False

    def forward(self, x):
        out = x * x
        if self.adapter_off:  # expect: TL205
            return out
        out = out + 1
        return out


@contextlib.contextmanager
def without_adapter(block):
    block.adapter_off = True
    try:
        yield
    finally:
        block.adapter_off = False


if __name__ == "__main__":
    block = LoraLikeBlock()
    block = torch.compile(block)
    x = torch.randn(4, 4)
    with_adapter = block(x)
    with without_adapter(block):
        plain = block(x)
    assert torch.allclose(plain, x * x)
