# Report: https://github.com/pytorch/pytorch/issues/104020
# What went wrong: forward resized a permuted view of its input in place (`v1 = x1.permute(0, 2, 1);
# v1.resize_(1, 1, 2)`); inductor's permute-linear fusion ignored the in-place resize and returned a tensor of
# the wrong shape. Reporter's shape: Model with a Linear(2, 2); forward: v1 = x1.permute(0, 2, 1);
# v1.resize_(1, 1, 2); return F.linear(v1, self.linear.weight, self.linear.bias); torch.compile(func) under no_grad.
# torch 2.13 on CPU (this file run): both shapes (1, 1, 2); the report needed TORCHINDUCTOR_PERMUTE_FUSION=1 on
# CUDA.
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 2)

    def forward(self, x1):
        v1 = x1.permute(0, 2, 1)
        v1.resize_(1, 1, 2)  # expect: TL102
        return torch.nn.functional.linear(v1, self.linear.weight, self.linear.bias)


if __name__ == "__main__":
    func = Model()
    with torch.no_grad():
        func.train(False)
        jit_func = torch.compile(func)
        x = torch.randn(1, 2, 2)
        print(func(x.clone()).shape, jit_func(x.clone()).shape)
