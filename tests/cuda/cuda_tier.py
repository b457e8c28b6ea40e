"""What every module of the CUDA tier needs before it imports its cases."""
from __future__ import annotations

import pytest
import torch

EXECUTORS = ("nvfuser", "torch")


def skip_without_cuda_and_nvfuser() -> None:
    """Skip the calling test module where nvFuser cannot execute (CPU CI), saying why."""
    if not torch.cuda.is_available():
        pytest.skip("the CUDA tier needs a CUDA device (nvFuser executes only on CUDA); CPU CI skips it, "
                    "bench/gpu_run.sh runs it on the GPU machine", allow_module_level=True)
    pytest.importorskip("nvfuser_direct", reason="nvfuser_direct is not installed (the nvFuser wheel; "
                        "bench/gpu_run.sh installs it on the GPU machine)")
