# Report: https://github.com/pytorch/pytorch/issues/184542
# What went wrong: a scatter write into a flat view of an argument (a KV-cache store) is not reinplaced:
# inductor clones the whole buffer, scatters into the clone and copies it all back (two full-buffer
# copies for a 34 KiB update).
# Reporter's shape: store(values, buf, indices): buf.view(-1)[indices] = values; return buf;
# torch.compile(store, fullgraph=True).
import torch


def store(values, buf, indices):
    flat = buf.view(-1)
    flat[indices] = values  # expect: TL102
    return buf


if __name__ == "__main__":
    buf = torch.zeros((1024, 1024), dtype=torch.uint8)
    indices = torch.arange(256)
    values = torch.ones(256, dtype=torch.uint8)
    compiled = torch.compile(store, fullgraph=True)
    compiled(values, buf, indices)
