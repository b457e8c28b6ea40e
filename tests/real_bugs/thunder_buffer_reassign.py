# Report: https://github.com/Lightning-AI/lightning-thunder/issues/646
# What went wrong: forward rebinds a registered buffer to a new tensor (`self.buffer = self.buffer + 1`);
# thunder.jit crashes on the state write instead of running the update.
# Reporter's shape: register_buffer in __init__, reassigned in forward; thunder.jit(Module()).
import thunder
import torch


class TickModel(torch.nn.Module):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.register_buffer("ticks", torch.tensor([1]))

    def forward(self, x):
        self.ticks = self.ticks + 1  # expect: TL205
        return x + self.ticks


if __name__ == "__main__":
    x = torch.randn(3)
    print(TickModel()(x))
    jm = thunder.jit(TickModel())
    print(jm(x))
