# Report: https://github.com/pytorch/pytorch/issues/124357
# What went wrong: an int attribute changed by a setter method between calls was baked into the
# compiled forward as a constant: outputs stayed at the first value (7, 7, 7 instead of 7, 9, 11).
# Reporter's shape: `self.value` set by `change_value()`, read in forward; torch.compile(model, backend="inductor").
import torch


class OffsetModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.offset = -1
        self.base = torch.ones([2, 3])

    def set_offset(self, offset):
        self.offset = offset

    def forward(self, value):
        return self.base + self.offset  # expect: TL205


if __name__ == "__main__":
    model = OffsetModel()
    compiled = torch.compile(model, backend="inductor")
    for v in [6, 8, 10]:
        model.set_offset(v)
        print(compiled(v))
