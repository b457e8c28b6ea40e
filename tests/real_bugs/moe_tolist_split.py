# Report: https://github.com/PrimeIntellect-ai/prime-rl/issues/996
# What went wrong: the MoE layer's per-expert loop turns the token counts into a Python list with
# `.tolist()` inside the compiled model (moe.py:76 in _run_experts_for_loop), a graph break / an
# unbacked-symint failure under --model.compile.
# Reporter's shape: MoE module whose forward calls a helper that splits tokens by
# `num_tokens_per_expert.tolist()`; the model is compiled with torch.compile.
import torch
from torch import nn


class Experts(nn.Module):
    def __init__(self, num_experts=4, dim=16, hidden=32):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(num_experts, dim, hidden) * 0.02)
        self.w2 = nn.Parameter(torch.randn(num_experts, hidden, dim) * 0.02)

    def forward(self, x, num_tokens_per_expert):
        return _run_experts_for_loop(self.w1, self.w2, x, num_tokens_per_expert)


def _run_experts_for_loop(w1, w2, x, num_tokens_per_expert):
    num_tokens_per_expert = num_tokens_per_expert.tolist()  # expect: TL302
    chunks = torch.split(x, num_tokens_per_expert, dim=0)
    outs = []
    for expert_idx, chunk in enumerate(chunks):
        h = torch.relu(chunk @ w1[expert_idx])
        outs.append(h @ w2[expert_idx])
    return torch.cat(outs, dim=0)


class MoE(nn.Module):
    def __init__(self, num_experts=4, dim=16):
        super().__init__()
        self.router = nn.Linear(dim, num_experts)
        self.experts = Experts(num_experts, dim)
        self.num_experts = num_experts

    def forward(self, x):
        choice = self.router(x).argmax(-1)
        order = choice.argsort()
        counts = torch.bincount(choice, minlength=self.num_experts)
        out = self.experts(x[order], counts)
        return out[order.argsort()]


if __name__ == "__main__":
    model = torch.compile(MoE())
    model(torch.randn(10, 16))
