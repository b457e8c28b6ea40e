# Report: https://github.com/Lightning-AI/lightning-thunder/issues/1951
# What went wrong: a buffer created lazily on the first call (`if self.buf is None: self.buf = ...`)
# is never stored by the jitted module; thunder re-draws it on every call (eager keeps the first one).
# Reporter's shape: register_buffer("buf", None); conditional assignment in forward; thunder.jit(model).
import thunder
import torch


class LazyBias(torch.nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fc = torch.nn.Linear(2, 2)
        self.register_buffer("bias_buf", None, False)

    def forward(self, x):
        if self.bias_buf is None:  # expect: TL205
            self.bias_buf = torch.randn(1, 2, device=x.device)  # expect: TL205
        return self.fc(x) + self.bias_buf


if __name__ == "__main__":
    model = LazyBias()
    jmodel = thunder.jit(model)
    x = torch.randn(2, 2)
    jmodel(x)
    print(model.bias_buf)
