# Report: https://github.com/pytorch/pytorch/issues/93457
# What went wrong: `int(...)` of tensor elements read the data back to Python; each new box value was
# specialized on, so the function recompiled for every input until the cache size limit was hit.
# Reporter's shape: (case 1, from vision_maskrcnn) fn(box): w = int(box[2] + box[0]); h = int(box[3] - box[1]);
# return w + h; dynamo.optimize("eager")(fn) called on 10 random integer boxes with cache_size_limit = 2.
# torch 2.13 on CPU (this file run): `int(...)` is still a graph break (dynamo warns at that line); results match
# eager.
import torch


def box_extent(box):
    w = int(box[2] + box[0])  # expect: TL302
    h = int(box[3] - box[1])  # expect: TL302
    return w + h


if __name__ == "__main__":
    torch._dynamo.config.cache_size_limit = 2
    torch.manual_seed(0)
    boxes = [torch.randint(0, 10000, size=(4,), dtype=torch.int64) for _ in range(10)]
    compiled = torch.compile(box_extent, backend="eager")
    print([compiled(b) for b in boxes] == [box_extent(b) for b in boxes])
