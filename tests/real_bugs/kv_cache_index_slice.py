# Report: https://github.com/google-research/timesfm/issues/457
# What went wrong: the decode step wrote the KV cache at a position read from a tensor
# (`start = decode_cache.next_index[0]; decode_cache.key[:, start:end] = key`): the slice bound is tensor data, and
# the compiled decode broke the graph there in every layer (10 subgraphs, 3 breaks). Reporter's shape:
# MultiHeadAttention.forward with decode_cache holding key/value tensors and a next_index tensor; the model's
# decode compiled with torch.compile.
# torch 2.13 on CPU (this file run): runs with no graph break (explain counts 0): the tensor slice bound is
# captured now.
import torch
from torch import nn


class DecodeCache:
    def __init__(self, n=16, d=8):
        self.key = torch.zeros(1, n, d)
        self.next_index = torch.zeros(1, dtype=torch.long)


class MultiHeadAttention(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.k_proj = nn.Linear(d, d)

    def forward(self, x, decode_cache):
        key = self.k_proj(x)
        n_patches = x.shape[1]
        start = decode_cache.next_index[0]
        end = start + n_patches
        decode_cache.key[:, start:end] = key  # expect: TL302
        return decode_cache.key.sum(1)


if __name__ == "__main__":
    attn = torch.compile(MultiHeadAttention())
    cache = DecodeCache()
    print(attn(torch.randn(1, 2, 8), cache).shape)
    print(torch._dynamo.explain(MultiHeadAttention())(torch.randn(1, 2, 8), cache).graph_break_count, "graph break(s)")
