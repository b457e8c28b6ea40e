# Report: https://github.com/mit-han-lab/distrifuser/issues/26
# What went wrong: compiling the patch-parallel UNet wrapper graph-breaks on `Tensor.item()` in its
# forward ("Graph break from `Tensor.item()`"), and the wrapper's step counter changes every call.
# Reporter's shape: `pipeline.pipeline.unet = torch.compile(pipeline.pipeline.unet)` where the unet is
# a wrapper nn.Module whose forward copies the timestep into static buffers with `.item()`.
import torch
from torch import nn


class PatchParallelUNet(nn.Module):
    def __init__(self, model: nn.Module, warmup_steps: int = 4):
        super().__init__()
        self.model = model
        self.warmup_steps = warmup_steps
        self.counter = 0
        self.static_timestep = torch.zeros(2)

    def forward(self, sample, timestep, encoder_hidden_states):
        if torch.is_tensor(timestep) and timestep.ndim == 0:
            for b in range(self.static_timestep.shape[0]):
                self.static_timestep[b] = timestep.item()  # expect: TL302
        if self.counter <= self.warmup_steps:  # also: TL205
            out = self.model(sample + encoder_hidden_states.mean())
        else:
            out = self.model(sample)
        self.counter += 1  # also: TL205
        return out


class PipelineHolder:
    def __init__(self, unet):
        self.unet = unet


class DistriPipeline:
    def __init__(self, unet):
        self.pipeline = PipelineHolder(unet)


if __name__ == "__main__":
    pipeline = DistriPipeline(PatchParallelUNet(nn.Conv2d(4, 4, 3, padding=1)))
    pipeline.pipeline.unet = torch.compile(pipeline.pipeline.unet)
    for t in range(3):
        pipeline.pipeline.unet(torch.randn(1, 4, 8, 8), torch.tensor(float(t)), torch.randn(1, 77, 8))
