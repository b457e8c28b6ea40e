# Report: https://github.com/kornia/kornia/pull/3788
# What went wrong: the distance transform's iteration loop stopped early when no pixel was left
# (`if not mask.any(): break`): a branch on tensor data, so torch.compile broke the graph inside the loop
# (fullgraph=True failed). Reporter's shape: distance_transform(image, kernel_size, h) iterating `for i in
# range(n_iters)`: cdt = ...; mask = cdt > 0; if not mask.any(): break; out = out + (offset + cdt) * mask.
# torch 2.13 on CPU (this file run): still fails under fullgraph=True (Unsupported: data-dependent branching).
import torch
import torch.nn.functional as F


def distance_transform(image, kernel_size=3, h=0.35):
    n_iters = image.shape[-1] // 2 + 1
    out = torch.zeros_like(image)
    boundary = image.clone()
    kernel = torch.ones(1, 1, kernel_size, kernel_size) * h
    for i in range(n_iters):  # also: TL301
        cdt = F.conv2d(boundary, kernel, padding=kernel_size // 2)
        mask = cdt > 0
        if not mask.any():  # expect: TL302
            break
        offset = i * h
        out = out + (offset + cdt) * mask.to(image.dtype)
        boundary = torch.where(mask, torch.ones_like(boundary), boundary)
    return out


if __name__ == "__main__":
    compiled = torch.compile(distance_transform, fullgraph=True)
    try:
        print(compiled(torch.rand(1, 1, 8, 8)).shape)
    except Exception as e:  # the reported graph break under fullgraph=True
        print(type(e).__name__, str(e).splitlines()[0][:100])
