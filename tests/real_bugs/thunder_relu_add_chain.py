# Report: https://github.com/Lightning-AI/lightning-thunder/issues/720
# What went wrong: two in-place ops on the argument followed by a read; thunder copied the first
# intermediate (after relu_) back into the argument instead of the final one (after add_).
# Reporter's shape: foo(a): a.relu_(); a.add_(1.0); c = a + 1; return c; thunder.jit(foo).
import thunder
import torch


def relu_then_shift(a):
    a.relu_()  # expect: TL103
    a.add_(1.0)  # expect: TL103
    c = a + 1
    return c


if __name__ == "__main__":
    a = torch.randn(4, 8, 6)
    a_ref = a.clone()
    out_ref = relu_then_shift(a_ref)
    out = thunder.jit(relu_then_shift)(a)
    assert out.allclose(out_ref)
    assert a.allclose(a_ref)
