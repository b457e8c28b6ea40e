"""A fused executor's outputs in the traced layout: the layout eager's ops gave them, which later view ops
(`as_strided`, `.view()`) depend on. nvFuser and inductor may lay a result out like an input instead."""
from __future__ import annotations

import torch


def in_layout(t: torch.Tensor, shape, stride) -> torch.Tensor:
    """A new tensor with t's values in the traced layout; dims of stride 0 (an expanded result) hold one copy."""
    if 0 in stride and t.numel() > 1:
        size = 1 + sum((n - 1) * s for n, s in zip(shape, stride) if n > 0)
        out = torch.empty(size, dtype=t.dtype, device=t.device).as_strided(shape, stride)
        distinct = tuple(0 if s == 0 else slice(None) for s in stride)  # (a non-overlapping view of it)
        out[distinct].copy_(t[distinct])
        return out
    return torch.empty_strided(shape, stride, dtype=t.dtype, device=t.device).copy_(t)
