# Report: https://github.com/pytorch/pytorch/issues/128319
# What went wrong: an int counter bumped inside the compiled forward is guarded on, so torch.compile
# compiles the module again on each of the first calls (4 compilations for 10 calls).
# Reporter's shape: nn.Module with `self.counter += 1` in forward; torch.compile(mod, backend="eager").
import torch


class CountingLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.proj = torch.nn.Linear(1, 1)

    def forward(self, x):
        self.calls += 1  # expect: TL205
        return self.proj(x)


if __name__ == "__main__":
    net = CountingLinear()
    compiled_net = torch.compile(net, backend="eager")
    for _ in range(10):
        compiled_net(torch.randn(1, 1))
