# Report: https://github.com/pytorch/pytorch/issues/138908
# What went wrong: `y[idx] += y[idx]` on an argument doubled the rows twice under inductor with
# dynamic=True (4x instead of 2x), so the caller's tensor differed from eager.
# Reporter's shape: @torch.compile(backend="inductor", dynamic=True) fn(x, y): x = x + 10; y[x] += y[x].
import torch


@torch.compile(backend="inductor", dynamic=True)
def double_rows(idx, y):
    idx = idx + 10
    y[idx] += y[idx]  # expect: TL103


if __name__ == "__main__":
    idx = torch.randint(-10, -9, (1, 2), dtype=torch.int64)
    y = torch.randn((2, 32), dtype=torch.float32)
    expected = y.clone()
    expected[idx + 10] += expected[idx + 10]
    with torch.no_grad():
        double_rows(idx, y)
    assert torch.allclose(expected, y)
