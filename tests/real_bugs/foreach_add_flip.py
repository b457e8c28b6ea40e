# Report: https://github.com/pytorch/pytorch/issues/198033
# What went wrong: an in-place foreach add whose operand is the same tensor read at other positions
# (`torch._foreach_add_([x], [x.flip(0)])`): inductor's kernel read the mirrored row while writing it, silently
# wrong on CPU at any size. Reporter's shape: f(x): torch._foreach_add_([x], [x.flip(0)]); return x;
# torch.compile(f) compared with eager on x.clone().
# torch 2.13 on CPU (this file run): still wrong (32 of 64 elements differ from eager).
import torch


def add_mirror(x):
    torch._foreach_add_([x], [x.flip(0)])  # expect: TL103
    return x


if __name__ == "__main__":
    compiled = torch.compile(add_mirror)
    x = torch.rand(8, 8)
    want = add_mirror(x.clone())
    print("elements differing from eager:", int((compiled(x.clone()) != want).sum()))
