# Report: https://github.com/huggingface/transformers/pull/45816
# What went wrong: compiling Qwen2.5-Omni's vision encoder broke the graph in every block: attention split the
# packed sequence with `lengths.tolist()` and the rotary setup looped over `grid_thw.tolist()` (data read back
# to Python). Reporter's shape: torch.compile(model.thinker.visual); VisionAttention.forward computes
# lengths = cu_seqlens[1:] - cu_seqlens[:-1]; splits q/k/v with torch.split(x, lengths.tolist()); rot_pos_emb
# loops `for t, h, w in grid_thw.tolist()`.
# torch 2.13 on CPU (this file run): compiles and runs (not fullgraph: the .tolist() reads are not errors).
import torch
from torch import nn


class VisionAttention(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, cu_seqlens):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        lengths = cu_seqlens[1:] - cu_seqlens[:-1]
        outs = []
        for qs, ks, vs in zip(*(torch.split(t, lengths.tolist()) for t in (q, k, v))):  # expect: TL302
            outs.append(torch.softmax(qs @ ks.T, -1) @ vs)
        return torch.cat(outs)


class VisionEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = VisionAttention()

    def rot_pos_emb(self, grid_thw):
        ids = []
        for t, h, w in grid_thw.tolist():  # expect: TL302
            ids.append(torch.arange(t * h * w))
        return torch.cat(ids)

    def forward(self, x, grid_thw, cu_seqlens):
        pos = self.rot_pos_emb(grid_thw)
        return self.block(x + pos[:, None], cu_seqlens)


if __name__ == "__main__":
    enc = torch.compile(VisionEncoder())
    print(enc(torch.randn(6, 8), torch.tensor([[1, 2, 3]]), torch.tensor([0, 2, 6])).shape)
