"""A small GPT block (causal self-attention + MLP) with a KV cache, compiled with dynamic shapes."""

import math

import torch
import torch.nn.functional as F
from torch import nn

BLOCK_SIZE = 256
attn_dropout = 0.1  # a module-level knob someone tunes at runtime: a hidden input of the compiled forward


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x, k_cache=None, v_cache=None, pos=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if k_cache is not None:
            # Write the new keys into the caller's cache through a reshape: whether the caller's
            # k_cache sees the write depends on its strides.
            flat = k_cache.reshape(B, self.n_head, -1, C // self.n_head)
            flat[:, :, pos : pos + T] = k
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=attn_dropout if self.training else 0.0)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, n_embd: int = 64, n_head: int = 4):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        if x.shape[1] > BLOCK_SIZE:  # with dynamic=True the sequence length is symbolic
            x = x[:, -BLOCK_SIZE:]
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x / math.sqrt(2.0)


def build(compile_model: bool = True):
    model = Block()
    if compile_model:
        return torch.compile(model, dynamic=True)
    return model
