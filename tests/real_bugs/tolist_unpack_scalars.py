# Report: https://github.com/pytorch/pytorch/issues/163798
# What went wrong: `a.tolist()` unpacked into Python scalars in a compiled function did not graph-break with
# capture_scalar_outputs=False (unlike `.item()`), leaving item() calls in the graph that a later retrace
# cannot handle. Reporter's shape: @torch.compile(fullgraph=False, backend="eager") def func(a): u0, u1 =
# a.tolist(); return a * u0 * u1; func(torch.tensor([1, 2])).
# torch 2.13 on CPU (this file run): runs and matches eager.
import torch


@torch.compile(fullgraph=False, backend="eager")
def scale_by_entries(a):
    u0, u1 = a.tolist()  # expect: TL302
    return a * u0 * u1


if __name__ == "__main__":
    print(scale_by_entries(torch.tensor([1, 2])))
