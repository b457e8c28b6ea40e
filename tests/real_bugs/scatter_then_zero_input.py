# Report: https://github.com/pytorch/pytorch/issues/198094
# What went wrong: inductor reinplaced a functional slice_scatter of the argument into the argument's own
# buffer; a later `x.zero_()` then overwrote the returned result (eager [0, 1, 2, ...], compiled all zeros).
# Reporter's shape: fn(x, src): y = torch.slice_scatter(x, src[1:3], dim=0, start=1, end=3); x.zero_(); return y;
# torch.compile(fn, backend="inductor").
import torch


def scatter_rows_then_clear(x, src):
    y = torch.slice_scatter(x, src[1:3], dim=0, start=1, end=3)
    x.zero_()  # expect: TL103
    return y


if __name__ == "__main__":
    x = torch.arange(24, dtype=torch.int64).reshape(4, 6)
    src = torch.arange(-12, 12, dtype=torch.int64).reshape(4, 6)
    print(scatter_rows_then_clear(x.clone(), src.clone()).flatten().tolist()[:8])
    print(torch.compile(scatter_rows_then_clear, backend="inductor")(x.clone(), src.clone()).flatten().tolist()[:8])
