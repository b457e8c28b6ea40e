import logging
import warnings
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)
ACT2FN = {"gelu": F.gelu, "relu": F.relu}


class Config:
    hidden_size = 64
    num_heads = 4
    use_cache = True
    attn_implementation = "sdpa"


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.head_dim = config.hidden_size // config.num_heads
        self.scaling = self.head_dim ** -0.5
        self.is_causal = True

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: Optional[torch.Tensor] = None,
        past_key_value=None,
        output_attentions: bool = False,
        position_ids=None,
        num_logits_to_keep: int = 0,
    ):
        bsz, q_len, _ = hidden_states.size()
        q, k, v = self.qkv(hidden_states).chunk(3, dim=-1)
        q = q.view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = k.view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        v = v.view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        if past_key_value is not None:
            k = torch.cat([past_key_value[0], k], dim=2)
            v = torch.cat([past_key_value[1], v], dim=2)
        if self.config.attn_implementation == "sdpa" and not output_attentions:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, is_causal=attention_mask is None)
            weights = None
        else:
            weights = (q @ k.transpose(-1, -2)) * self.scaling
            if attention_mask is not None:
                weights = weights + attention_mask
            weights = weights.softmax(-1)
            if self.training:
                weights = F.dropout(weights, 0.1)
            out = weights @ v
        if output_attentions and q_len > 1:
            logger.warning_once("returning attention weights")
        out = out.transpose(1, 2).reshape(bsz, q_len, -1)
        if num_logits_to_keep > 0:
            out = out[:, -num_logits_to_keep:]
        if hidden_states.dtype == torch.float16:
            out = out.clamp(-65504, 65504)
        if hidden_states.dim() == 4:
            warnings.warn("4D input")
        return out, weights, (k, v) if self.config.use_cache else None


def _expand_mask(mask: torch.Tensor, dtype: torch.dtype, tgt_len: Optional[int] = None):
    bsz, src_len = mask.size()
    tgt_len = tgt_len if tgt_len is not None else src_len
    expanded = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted = 1.0 - expanded
    return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)


config = Config()
attn = torch.compile(Attention(config), dynamic=True)


@torch.compile(dynamic=True)
def build_causal_mask(seq_len: int, device=None, sliding_window: Optional[int] = None):
    mask = torch.full((seq_len, seq_len), float("-inf"), device=device).triu(1)
    if sliding_window is not None:
        mask = mask + torch.full_like(mask, float("-inf")).tril(-sliding_window)
    return mask


@torch.compile(dynamic=True)
def act(x, name: str = "gelu"):
    return ACT2FN[name](x)


@torch.compile(dynamic=True)
def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


@torch.compile
def normalize_boxes_(boxes: torch.Tensor, size):
    h, w = size
    boxes = boxes.reshape(-1, 4)
    boxes[:, 0::2] /= w
    boxes[:, 1::2] /= h
    return boxes


@torch.compile
def scale_logits(logits, temperature: float = 1.0):
    logits = logits.float()
    logits /= temperature
    return logits
