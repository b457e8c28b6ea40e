# Report: https://github.com/pytorch/pytorch/issues/115774
# What went wrong: a compiled forward writes into a tensor attribute (`self.cache[pos] = x`); after the
# caller replaced the attribute with a fresh tensor, the compiled code kept using the one it traced
# (expected [0, 1], got [2, 1]) - silently.
# Reporter's shape: @torch.compile(backend="eager") on forward; `model.cache = torch.tensor([0, 0])` between calls.
import torch


class PositionCache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.slots = torch.tensor([0, 0])

    @torch.compile(backend="eager")
    def forward(self, x, pos):
        self.slots[pos] = x  # expect: TL205
        return self.slots  # expect: TL205


if __name__ == "__main__":
    model = PositionCache()
    print(model(torch.tensor([2]), torch.tensor([0])))
    model.slots = torch.tensor([0, 0])
    print(model(torch.tensor([1]), torch.tensor([1])))  # [2, 1] under compile
