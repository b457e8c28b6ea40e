# Report: https://github.com/meta-pytorch/torchtune/pull/1663 ("Fixing recompiles in KV-cache + compile")
# What went wrong: the KV cache tracked its fill level as a Python int attribute; every generated token
# changed it, and torch.compile recompiled the model on each step
# (guard failure: L['args'][1]._modules['layers']._modules['0']._modules['attn']._modules['kv_cache'].size == 4).
# Reporter's shape: KVCache nn.Module held by the attention layer, `self.size += seq_len` in update;
# the model is compiled with torch.compile.
import torch
from torch import nn


class KVCache(nn.Module):
    def __init__(self, batch_size, max_seq_len, num_heads, head_dim):
        super().__init__()
        shape = (batch_size, num_heads, max_seq_len, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape), persistent=False)
        self.size = 0

    def update(self, k_val, v_val):
        seq_len = k_val.shape[2]
        self.k_cache[:, :, self.size : self.size + seq_len] = k_val
        self.v_cache[:, :, self.size : self.size + seq_len] = v_val
        self.size += seq_len  # expect: TL205
        return self.k_cache, self.v_cache


class Attention(nn.Module):
    def __init__(self, dim=32, heads=4, max_seq_len=64):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.kv_cache = KVCache(1, max_seq_len, heads, dim // heads)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        k, v = self.kv_cache.update(k, v)  # also: TL205
        out = nn.functional.scaled_dot_product_attention(q, k, v)
        return out.transpose(1, 2).reshape(b, t, d)


class Decoder(nn.Module):
    def __init__(self, n_layers=2):
        super().__init__()
        self.layers = nn.ModuleList([Attention() for _ in range(n_layers)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


if __name__ == "__main__":
    model = torch.compile(Decoder())
    for _ in range(6):
        model(torch.randn(1, 1, 32))
