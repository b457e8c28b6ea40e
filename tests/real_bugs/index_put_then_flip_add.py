# Report: https://github.com/pytorch/pytorch/issues/198270
# What went wrong: after an index_put_ into the argument, an in-place add that reads the same tensor at
# other positions (`x.add_(x.flip(0))`) is fused with the copy back into x: silently wrong values.
# Reporter's shape: f(x): x.index_put_((arange,), x * 2.0); x.add_(x.flip(0)); return x; torch.compile(f).
import torch


def mirror_update(x):
    x.index_put_((torch.arange(x.size(0), device=x.device),), x * 2.0)  # expect: TL103
    x.add_(x.flip(0))  # expect: TL103
    return x


if __name__ == "__main__":
    compiled = torch.compile(mirror_update)
    x = torch.rand(1024, 2048)
    want = mirror_update(x.clone())
    print(int((compiled(x.clone()) != want).sum()))
