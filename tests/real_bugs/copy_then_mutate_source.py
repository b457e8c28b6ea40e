# Report: https://github.com/pytorch/pytorch/issues/198131
# What went wrong: `dst[:] = src[:]` followed by `src.add_(1)`: inductor performed the copy after the
# in-place add, so the destination received the updated source values (aot_eager and eager were right).
# Reporter's shape: fn(dst, src): dst[0:, :] = src[0:, :]; src.add_(1); return src; torch.compile(fn, backend=backend).
import torch


def snapshot_then_bump(dst, src):
    dst[0:, :] = src[0:, :]  # also: TL103
    src.add_(1)  # expect: TL103
    return src


if __name__ == "__main__":
    for backend in ("aot_eager", "inductor"):
        torch._dynamo.reset()
        dst_e = torch.zeros(3, 4)
        src_e = torch.arange(12.0).view(3, 4)
        dst_c, src_c = dst_e.clone(), src_e.clone()
        snapshot_then_bump(dst_e, src_e)
        torch.compile(snapshot_then_bump, backend=backend)(dst_c, src_c)
        print(backend, torch.equal(dst_c, dst_e))
