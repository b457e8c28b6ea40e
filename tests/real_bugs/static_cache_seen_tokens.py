# Report: https://github.com/huggingface/transformers/pull/29114 (review thread on cache_utils.py)
# What went wrong: the static KV cache kept its position as a Python int (`self.seen_tokens += ...`);
# under torch.compile the int was not updated between decoding steps ("torch.compile is BUGGED in case
# this variable is an int"), so the compiled forward wrote every step at the same position.
# Reporter's shape: a cache object held by the model, updated from the compiled forward;
# model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True).
import torch


class StaticKVCache:
    def __init__(self, batch, heads, max_len, head_dim):
        shape = (batch, heads, max_len, head_dim)
        self.key_cache = torch.zeros(shape)
        self.value_cache = torch.zeros(shape)
        self.seen_tokens = 0

    def update(self, key_states, value_states, positions):
        k_out = self.key_cache
        v_out = self.value_cache
        k_out[:, :, positions] = key_states
        v_out[:, :, positions] = value_states
        self.seen_tokens += key_states.shape[2]  # expect: TL205
        return k_out, v_out


class TinyDecoder(torch.nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.cache = StaticKVCache(1, heads, 32, dim // heads)

    def forward(self, hidden, positions):
        b, t, d = hidden.shape
        q, k, v = self.qkv(hidden).split(d, dim=-1)
        q = q.view(b, t, self.heads, -1).transpose(1, 2)
        k = k.view(b, t, self.heads, -1).transpose(1, 2)
        v = v.view(b, t, self.heads, -1).transpose(1, 2)
        k, v = self.cache.update(k, v, positions)  # also: TL205
        att = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return att.transpose(1, 2).reshape(b, t, d)


if __name__ == "__main__":
    model = TinyDecoder()
    model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
    for step in range(4):
        model(torch.randn(1, 1, 16), torch.tensor([step]))
