"""The nvFuser executor (CUDA): claims fusion regions for `nvfuser_direct` FusionDefinitions.

Only the refusal is here so far: naming "nvfuser" without the `nvfuser_direct` package or without CUDA is a
clear error at `compiler.jit` time, never a silent fallback. The FusionDefinition builder (a translator per
prim, `add_output(..., alias_input=...)` for write-backs) is not written yet: it needs a CUDA machine and
the nvfuser-cu128-torch210 wheel (Python 3.10/3.12, torch 2.10), neither of which this project's CI has.
"""
from __future__ import annotations

import importlib.util

from ..errors import ExecutorError


def nvfuser_executor():
    if importlib.util.find_spec("nvfuser_direct") is None:
        raise ExecutorError('executor "nvfuser" needs the nvfuser_direct package (pip install nvfuser-cu128-torch210, '
                            'Python 3.10/3.12 with torch 2.10) and a CUDA device; use executors=("inductor", "torch") '
                            'or ("torch",) here')
    import torch

    if not torch.cuda.is_available():
        raise ExecutorError('executor "nvfuser" needs a CUDA device; none is available')
    raise ExecutorError('executor "nvfuser": the FusionDefinition builder is not implemented yet; '
                        'use executors=("inductor", "torch")')
