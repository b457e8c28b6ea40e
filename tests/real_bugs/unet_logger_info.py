# Report: https://github.com/huggingface/diffusers/issues/3933
# What went wrong: compiling a UNet whose forward calls `logger.info(...)` (when the sample size is not a
# multiple of the upsampling factor) failed with "inline in skipfiles: Logger.info"; removing the log line fixed it.
# Reporter's shape: pipeline.unet = torch.compile(pipeline.unet); UNet2DConditionModel.forward with
# `if any(s % default_overall_up_factor != 0 for s in sample.shape[-2:]): logger.info(...); forward_upsample_size = True`.
# torch 2.13 on CPU (this file run): compiles and runs (the logger call no longer raises).
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_upsamplers = 2
        self.conv = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, sample):
        default_overall_up_factor = 2**self.num_upsamplers
        forward_upsample_size = False
        if any(s % default_overall_up_factor != 0 for s in sample.shape[-2:]):
            logger.info("Forward upsample size to force interpolation output size.")  # expect: TL204
            forward_upsample_size = True
        out = self.conv(sample)
        if forward_upsample_size:
            out = nn.functional.interpolate(out, size=sample.shape[-2:])
        return out


if __name__ == "__main__":
    unet = torch.compile(TinyUNet())
    print(unet(torch.randn(1, 4, 6, 6)).shape)
