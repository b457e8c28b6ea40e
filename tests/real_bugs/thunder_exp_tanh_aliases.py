# Report: https://github.com/Lightning-AI/lightning-thunder/issues/2766
# What went wrong: two inputs that alias (b is a[0, 0]) are both written in place and read in one expression;
# thunder's alias handling did not resolve them and the jitted result differed from eager.
# Reporter's shape: f(a, b): return a.exp_() * b.tanh_(); jf = thunder.jit(f); jf(x, x[0, 0]) compared with
# eager on a clone.
import thunder
import torch


def exp_times_tanh(a, b):
    return a.exp_() * b.tanh_()  # expect: TL103


if __name__ == "__main__":
    jf = thunder.jit(exp_times_tanh)
    x = torch.randn(5, 5)
    x_ = x.detach().clone()
    torch.testing.assert_close(jf(x, x[0, 0]), exp_times_tanh(x_, x_[0, 0]))
