"""The inductor executor: each fusion region becomes a Python function of torch ops (the region's prims,
printed as a trace), compiled with `torch.compile` (inductor; CPU or CUDA).

Compiled regions are shared by every jitted function: the key is the region's printed code plus the
layout of its inputs (shape, strides, dtype, device, requires_grad), so a region seen again costs no
compile. For a function jitted with cache="symbolic values" (`shape_generic`), the key leaves out sizes and
strides and the region is compiled with dynamic shapes: the traces of other sizes print the same region code
(their sizes are not in it), and one compiled kernel serves them all (dynamo guards what it assumed). torch.compile compiles on the first call, so tracing stays fast and the first call pays it.
Autograd: a region called with inputs that require grad is differentiated by torch.compile's own
AOTAutograd (its backward is compiled by inductor too); this executor does not build per-prim VJPs.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

import torch

from .. import autocast
from ..symbols import BoundSymbol
from ..trace import Trace

_COMPILED: dict = {}
_LOCAL = threading.local()


@contextmanager
def shape_generic(on: bool):
    """While a jitted function with cache="symbolic values" plans its execution."""
    before = getattr(_LOCAL, "generic", False)
    _LOCAL.generic = on
    try:
        yield
    finally:
        _LOCAL.generic = before


def _generic_signature(inputs) -> tuple:
    return tuple((p.meta.ndim, p.meta.dtype, str(p.device), p.meta.requires_grad) for p in inputs)


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
    """A region's compiled function. The region's FX graph (symbolic_trace of its straight-line torch code)
    goes to torch.compile's backend directly, once per grad mode and autocast state: the prologue of every
    jitted function using the region already guards its inputs' layouts (they are part of the cache key), so
    dynamo's frame capture and guard checks on every call (~0.1-0.5 ms a call, most of a small region's
    time) are not needed. If that fails, torch.compile of the function is used; if dynamo cannot capture it
    whole either (an op it does not support), the region runs as its plain torch ops, which compute the
    same values."""

    def __init__(self, fn, backend, options, direct=True, dynamic=False):
        self.plain = fn
        self.backend, self.options, self.use_direct, self.dynamic = backend, options, direct, dynamic
        self.direct: dict = {}  # (grad mode, autocast state) -> the backend's compiled graph
        self.compiled = None
        self.failure = None

    def _direct(self, inputs):
        if self.options or not self.use_direct or self.dynamic:  # (direct compiles for these sizes only)
            return None  # options patch inductor's config inside torch.compile
        try:
            gm = torch.fx.symbolic_trace(self.plain)
            compiled = torch._dynamo.lookup_backend(self.backend)(gm, list(inputs))
        except Exception:  # noqa: BLE001 - any failure: torch.compile of the function instead
            return None
        return lambda *args: tuple(compiled(*args))

    def __call__(self, *inputs):
        if self.failure is None:
            key = (torch.is_grad_enabled(), autocast.current())
            if key not in self.direct:
                self.direct[key] = self._direct(inputs)
            fn = self.direct[key]
            if fn is not None:
                return fn(*inputs)
            if self.compiled is None:
                self.compiled = torch.compile(self.plain, backend=self.backend, fullgraph=True,
                                              dynamic=self.dynamic, options=self.options)
            try:
                return self.compiled(*inputs)
            except (torch._dynamo.exc.Unsupported, torch._dynamo.exc.BackendCompilerFailed) as e:
                self.failure = e
        return self.plain(*inputs)


class InductorExecutor:
    """`backend`: torch.compile's backend ("inductor"; "aot_eager" runs the same graph capture and autograd
    without code generation, which the tests use for breadth)."""

    fuses = True

    def __init__(self, backend: str = "inductor", options: dict | None = None, direct: bool = True):
        self.backend = backend
        self.options = options
        self.direct = direct  # False: every region call goes through torch.compile's dynamo (bench baseline)
        self.name = "inductor" if backend == "inductor" else f"torch_compile_{backend}"

    def can_execute(self, bsym: BoundSymbol) -> bool:
        return getattr(bsym.symbol, "executor", None) is self

    def callee(self, bsym: BoundSymbol, trace: Trace) -> str:
        sub = region_function(bsym)
        source = sub.python_source(with_comments=False)
        generic = getattr(_LOCAL, "generic", False)
        inputs = bsym.symbol.region.inputs
        key = (self.backend, self.direct, source, tuple((k, repr(v)) for k, v in sub.python_ctx().items() if k.startswith("_k")),
               ("any size",) + _generic_signature(inputs) if generic else _signature(inputs))
        fn = _COMPILED.get(key)
        if fn is None:
            fn = _Region(sub.python_callable(), self.backend, self.options, self.direct, dynamic=generic)
            _COMPILED[key] = fn
        name = bsym.symbol.name
        trace.constants[name] = fn
        return name


inductor_executor = InductorExecutor()
