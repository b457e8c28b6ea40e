import torch
import torch.nn as nn
import torch.nn.functional as F

grad_clip = 1.0
LABEL_SMOOTHING = 0.1


def build(model: nn.Module, optimizer, scaler, accum_steps: int):
    @torch.compile
    def loss_fn(logits, labels):
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), label_smoothing=LABEL_SMOOTHING)

    def train_step(batch):
        model.train()
        total = 0.0
        for micro in batch.chunk(accum_steps):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(micro[:, :-1])
                loss = loss_fn(logits, micro[:, 1:]) / accum_steps
            scaler.scale(loss).backward()
            total += loss.detach()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return total

    return train_step


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x * self.weight).to(dtype)


@torch.compile(dynamic=True)
def pad_to_multiple(x: torch.Tensor, multiple: int = 8, value: float = 0.0):
    n = x.shape[-1]
    rem = n % multiple
    if rem == 0:
        return x
    return F.pad(x, (0, multiple - rem), value=value)


@torch.compile(dynamic=True)
def apply_rotary(x, cos, sin, interleaved: bool = False):
    if interleaved:
        x1, x2 = x[..., ::2], x[..., 1::2]
    else:
        x1, x2 = x.chunk(2, dim=-1)
    rotated = torch.cat((-x2, x1), dim=-1)
    return x * cos + rotated * sin


@torch.compile(mode="max-autotune")
def masked_mean(x, mask=None, dim: int = -1):
    if mask is None:
        return x.mean(dim)
    return (x * mask).sum(dim) / mask.sum(dim).clamp(min=1)


@torch.compile(dynamic=True)
def topk_accuracy(logits, labels, k: int = 5):
    top = logits.topk(k, dim=-1).indices
    correct = (top == labels.unsqueeze(-1)).any(-1).float()
    return correct.mean()


@torch.compile(dynamic=True)
def chunked_ce(h, w, labels, chunk_size: int = 1024):
    total = h.new_zeros(())
    for start in range(0, h.shape[0], chunk_size):
        logits = h[start : start + chunk_size] @ w.t()
        total = total + F.cross_entropy(logits, labels[start : start + chunk_size], reduction="sum")
    return total / max(h.shape[0], 1)


@torch.compile
def ema_update(ema_params, params, decay: float):
    for e, p in zip(ema_params, params):
        e.mul_(decay).add_(p.detach(), alpha=1 - decay)


@torch.compile
def clip_and_normalize(x, eps=1e-6):
    norm = x.norm(dim=-1, keepdim=True)
    if (norm < eps).any():
        norm = norm.clamp(min=eps)
    return x / norm
