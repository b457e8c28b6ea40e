"""The inductor executor: each fusion region becomes a Python function of torch ops (the region's prims,
printed as a trace), compiled with `torch.compile` (inductor; CPU or CUDA).

Compiled regions are shared by every jitted function: the key is the region's printed code plus the
layout of its inputs (shape, strides, dtype, device, requires_grad), so a region seen again costs no
compile. torch.compile compiles on the first call, so tracing stays fast and the first call pays it.
Autograd: a region called with inputs that require grad is differentiated by torch.compile's own
AOTAutograd (its backward is compiled by inductor too); this executor does not build per-prim VJPs.
"""
from __future__ import annotations

import torch

from ..symbols import BoundSymbol
from ..trace import Trace

_COMPILED: dict = {}


def _signature(inputs) -> tuple:
    return tuple((tuple(p.meta.shape), tuple(p.meta.stride()), p.meta.dtype, str(p.device), p.meta.requires_grad)
                 for p in inputs)


def region_function(bsym: BoundSymbol, name: str = "region"):
    """The region as plain Python over torch (uncompiled), and its printed source."""
    region = bsym.symbol.region
    sub = Trace(name)
    sub.args = list(region.inputs)
    sub.bsyms = list(region.bsyms)
    sub.output = tuple(region.outputs)
    return sub


class _Region:
    """A region's compiled function. If torch.compile cannot capture it whole (an op dynamo does not
    support), the region runs as its plain torch ops instead, which computes the same values."""

    def __init__(self, fn, backend, options):
        self.plain = fn
        self.compiled = torch.compile(fn, backend=backend, fullgraph=True, dynamic=False, options=options)
        self.failure = None

    def __call__(self, *inputs):
        if self.failure is None:
            try:
                return self.compiled(*inputs)
            except (torch._dynamo.exc.Unsupported, torch._dynamo.exc.BackendCompilerFailed) as e:
                self.failure = e
        return self.plain(*inputs)


class InductorExecutor:
    """`backend`: torch.compile's backend ("inductor"; "aot_eager" runs the same graph capture and autograd
    without code generation, which the tests use for breadth)."""

    fuses = True

    def __init__(self, backend: str = "inductor", options: dict | None = None):
        self.backend = backend
        self.options = options
        self.name = "inductor" if backend == "inductor" else f"torch_compile_{backend}"

    def can_execute(self, bsym: BoundSymbol) -> bool:
        return getattr(bsym.symbol, "executor", None) is self

    def callee(self, bsym: BoundSymbol, trace: Trace) -> str:
        sub = region_function(bsym)
        source = sub.python_source(with_comments=False)
        key = (self.backend, source, tuple((k, repr(v)) for k, v in sub.python_ctx().items() if k.startswith("_k")),
               _signature(bsym.symbol.region.inputs))
        fn = _COMPILED.get(key)
        if fn is None:
            fn = _Region(sub.python_callable(), self.backend, self.options)
            _COMPILED[key] = fn
        name = bsym.symbol.name
        trace.constants[name] = fn
        return name


inductor_executor = InductorExecutor()
