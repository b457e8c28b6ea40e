# Report: https://github.com/pytorch/pytorch/issues/111133
# What went wrong: `index_add_` into a permuted view of the argument gave different values in the
# caller's tensor under the inductor backend than in eager.
# Reporter's shape: fn(x, a, index): y = x.permute(1, 0); y.index_add_(0, index, a); return y; torch.compile(fn).
import torch


def transposed_index_add(x, updates, index):
    y = x.permute(1, 0)
    y.index_add_(0, index, updates)  # expect: TL102
    return y


if __name__ == "__main__":
    updates = torch.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=torch.float)
    index = torch.tensor([0, 4, 2])
    x_eager = torch.ones(3, 5)
    transposed_index_add(x_eager, updates, index)
    x_compiled = torch.ones(3, 5)
    torch.compile(transposed_index_add)(x_compiled, updates, index)
    print(torch.equal(x_eager, x_compiled))
