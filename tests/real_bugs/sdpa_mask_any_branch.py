# Report: https://github.com/huggingface/transformers/pull/29211
# What went wrong: Llama's causal-mask update branched on the mask's values (`torch.any(attention_mask != 1)`)
# inside the compiled forward: with fullgraph=True and an attention_mask passed, compilation failed on the
# data-dependent branch. Reporter's shape: _update_causal_mask with `if self.config._attn_implementation == "sdpa"
# and not is_tracing and attention_mask is not None and torch.any(attention_mask != 1): causal_mask = ...`;
# torch.compile(model, fullgraph=True) called with input_ids and attention_mask.
# torch 2.13 on CPU (this file run): still fails under fullgraph=True (Unsupported: data-dependent branching).
import torch
from torch import nn


class TinyLlama(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn_implementation = "sdpa"
        self.proj = nn.Linear(8, 8)

    def _update_causal_mask(self, attention_mask, input_tensor):
        seq = input_tensor.shape[1]
        causal_mask = torch.full((seq, seq), torch.finfo(input_tensor.dtype).min).triu(1)
        causal_mask = causal_mask[None, None].expand(input_tensor.shape[0], 1, -1, -1).clone()
        causal_mask = causal_mask.masked_fill(attention_mask[:, None, None, :] == 0, torch.finfo(input_tensor.dtype).min)
        if self.attn_implementation == "sdpa" and attention_mask is not None and torch.any(attention_mask != 1):  # expect: TL302
            causal_mask = causal_mask.mul(~torch.all(causal_mask == causal_mask.min(), dim=-1)[..., None])
        return causal_mask

    def forward(self, hidden, attention_mask):
        mask = self._update_causal_mask(attention_mask, hidden)
        return self.proj(hidden) + mask.sum()


if __name__ == "__main__":
    model = torch.compile(TinyLlama(), fullgraph=True)
    try:
        print(model(torch.randn(2, 4, 8), torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])).shape)
    except Exception as e:  # the reported failure under fullgraph=True
        print(type(e).__name__, str(e).splitlines()[0][:100])
