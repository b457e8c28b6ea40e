# Report: https://github.com/Lightning-AI/lightning-thunder/issues/1109
# What went wrong: two `copy_` write-backs into the same argument inside one fusion; the nvFuser program
# thunder built aliased both outputs to the input, so the argument and the returned values came out wrong.
# Reporter's shape: foo(T0): T1 = sin(T0); T0.copy_(T1); T2 = cos(T1); T0.copy_(T2); return T1, T2;
# thunder.jit(foo, disable_inplace_copy_check=True).
import thunder
import torch


def sin_then_cos_into(t0):
    t1 = torch.sin(t0)
    t0.copy_(t1)  # expect: TL103
    t2 = torch.cos(t1)
    t0.copy_(t2)  # expect: TL103
    return t1, t2


if __name__ == "__main__":
    jfoo = thunder.jit(sin_then_cos_into, disable_inplace_copy_check=True)
    a = torch.randn(2, 3, 4)
    a_ref = a.clone()
    out = jfoo(a)
    out_ref = sin_then_cos_into(a_ref)
    assert all(o1.allclose(o2) for o1, o2 in zip(out, out_ref))
    assert a.allclose(a_ref)
