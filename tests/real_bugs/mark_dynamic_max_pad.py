# Report: https://github.com/pytorch/pytorch/issues/149635
# What went wrong: `max(x.shape[0], 16)` on a dimension marked dynamic specializes on which side wins,
# so the compiled function recompiles between sizes below and above 16 (vLLM had to turn padding off).
# Reporter's shape: @torch.compile(backend="eager") fn padding to max(x.shape[0], 16);
# torch._dynamo.mark_dynamic(x, 0) before each call.
import torch


@torch.compile(backend="eager")
def pad_to_min16(x):
    padded_size = max(x.shape[0], 16)  # expect: TL301
    padded = torch.ones(padded_size, *x.shape[1:])
    return padded + x.sum()


if __name__ == "__main__":
    x = torch.arange(15)
    torch._dynamo.mark_dynamic(x, 0)
    pad_to_min16(x)
    x = torch.arange(17)
    torch._dynamo.mark_dynamic(x, 0)
    pad_to_min16(x)
