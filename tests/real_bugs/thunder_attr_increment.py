# Report: https://github.com/Lightning-AI/lightning-thunder/issues/137
# What went wrong: a Python int attribute updated inside the jitted forward is checked by thunder's
# prologue as a constant, so the second call fails ("Expected 2 to be equal to ... 1").
# Reporter's shape: `self.bar = self.bar + 1` in forward; thunder.jit(module).
import thunder
import torch


class StepModule(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 1

    def forward(self, x):
        self.step = self.step + 1  # expect: TL205
        return x


if __name__ == "__main__":
    m = StepModule()
    jm = thunder.jit(m)
    x = torch.randn(16, 16)
    jm(x)
    jm(x)
