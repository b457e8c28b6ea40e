# Report: https://github.com/pytorch/pytorch/issues/118961
# What went wrong: an unused in-place `relu6(inplace=True)` on the input changed, under torch.compile, the
# result of ops taken from the input before it (fliplr/resolve_conj/diagflat): "Tensors are different".
# Reporter's shape: forward(i): t1 = torch.fliplr(i); ...; t3 = F.relu6(inplace=True, input=i); return r1;
# torch.compile(model)(inp).
import torch
import torch.nn as nn


class FlipDiag(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, i):
        t1 = torch.fliplr(input=i)
        t2 = torch.resolve_conj(input=t1)
        r1 = torch.diagflat(input=t2, offset=100)
        t3 = torch.nn.functional.relu6(inplace=True, input=i)  # expect: TL103
        return r1


if __name__ == "__main__":
    model = FlipDiag()
    inp = torch.randint(-100, 100, [4, 5], dtype=torch.int32).float()
    ret_eager = model(inp)
    ret_compiled = torch.compile(model)(inp)
    print(torch.allclose(ret_eager, ret_compiled))
