"""A training step compiled with thunder, and a gradient utility."""

import time

import thunder
import torch

step_count = 0
loss_scale = 1024.0


def clip_grad_(grad, max_norm: float):
    """Scale a gradient in place so that its norm is at most max_norm."""
    flat = grad.flatten()
    norm = flat.norm()
    if norm > max_norm:
        flat.mul_(max_norm / norm)  # reaches `grad` only when flatten returned a view
    return grad


@thunder.jit
def train_step(model, x, y, lr):
    global step_count
    step_count += 1
    start = time.time()
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y) * loss_scale
    if loss.item() > 1e4:
        print("loss is exploding", start)
    return loss


@thunder.jit
def sgd_update(param, grad, lr: float):
    param.sub_(grad, alpha=lr)
    return param.norm()


def evaluate(model, batches):
    """Plain eager code: nothing here is compiled, so nothing here is a sharp edge."""
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in batches:
            total += torch.nn.functional.cross_entropy(model(x), y).item()
    return total / max(1, len(batches))


@thunder.jit
def apply_rotary_(q, cos, sin):
    """Rotates the first half of q in place: the caller's q changes through a view."""
    half = q[..., : q.shape[-1] // 2]
    half.mul_(cos)
    return q * sin
