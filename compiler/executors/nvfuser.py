"""The nvFuser executor (CUDA): each fusion region becomes an `nvfuser_direct.FusionDefinition`.

A translator per prim (TRANSLATORS) maps the region's prims to `fd.ops.*`; inputs are defined with symbolic
sizes (-1, 1 for broadcast dims), the input's contiguity and stride order. A region with a prim, argument
or dtype the table does not map is refused as a whole (`Refused`, with the reason): the executor does not
claim it and its prims run on the next executor (torch), so a region never half-runs on nvFuser. After each
op the translator checks rank and dtype against the traced meta tensor (casting where nvFuser's type
promotion differs from torch's: Half * 0.5 is Float in nvFuser, Half in torch), so a definition it builds
computes what the traced prims compute. Definitions are cached per region code and input signature.

Requirements, measured: the `nvfuser-cu128-torch210` wheel (Python 3.10/3.12, torch 2.10). Without CUDA,
`import nvfuser_direct` works and definitions build and print (the tests do that), but `execute` needs CUDA
tensors, so `executors=("nvfuser", ...)` without CUDA is a clear ExecutorError at `compiler.jit` time.
Autograd: a region whose outputs autograd records runs as one `torch.autograd.Function`: its forward is the
region's definition, its backward a second definition built from the region's vector-Jacobian product
(passes/vjp.py, per-prim rules; it recomputes the region from the saved inputs), so both directions run on
nvFuser. A region whose VJP cannot be built or translated is not claimed (torch runs it, autograd records it).
Not claimed either: regions with inputs that are not CUDA tensors (0-dim CPU tensors are passed as CPU
scalars). Write-backs (`prims.copy_to_out_`) are region barriers, so definitions need no aliased outputs.
"""
from __future__ import annotations

import importlib.util
import types
import warnings

import torch

from ..torchlang import prims
from ..core import tree as pytree
from ..core.errors import ExecutorError
from ..core.proxies import TensorProxy
from ..core.symbols import BoundSymbol
from ..core.trace import Trace
from ..passes.vjp import NoVJP, RegionGradients, backward_trace
from .layouts import in_layout


class Refused(Exception):
    """This region (or prim) has no nvFuser translation; the region runs on the next executor."""


def _datatype(dtype: torch.dtype):
    from nvfuser_direct import DataType

    table = {torch.float32: DataType.Float, torch.float64: DataType.Double, torch.float16: DataType.Half,
             torch.bfloat16: DataType.BFloat16, torch.int64: DataType.Int, torch.int32: DataType.Int32,
             torch.bool: DataType.Bool}
    if dtype not in table:
        raise Refused(f"dtype {dtype} has no nvFuser DataType mapped here")
    return table[dtype]


# ---- translators: (fd, bsym, values) -> the fd value of the prim's output ----
# `values(x)`: the fd value of a proxy argument, Python numbers as they are.

def _op(fd_op):
    """Marks a translator with the fd.ops name it emits (the tests check the mapping table by it)."""
    def mark(fn):
        fn.fd_op = fd_op
        return fn
    return mark


def _unary(name):
    return _op(name)(lambda fd, b, v: getattr(fd.ops, name)(v(b.args[0])))


def _binary(name):
    return _op(name)(lambda fd, b, v: getattr(fd.ops, name)(v(b.args[0]), v(b.args[1])))


@_op("truediv")
def _div(fd, b, v):
    if b.kwargs.get("rounding_mode") is not None or len(b.args) > 2:
        raise Refused("div with a rounding mode")
    return fd.ops.truediv(v(b.args[0]), v(b.args[1]))


def _dims(b, nd):
    """The reduced dims, non-negative; () or None as every dim where the traced output shows torch reduced
    every dim (its output has one element)."""
    dims = b.args[1] if len(b.args) > 1 else b.kwargs.get("dim")
    if dims is None or isinstance(dims, (tuple, list)) and not dims:
        if b.output.meta.numel() != 1:
            raise Refused(f"{b.symbol.name} with dims {dims!r} that did not reduce every dim")
        return list(range(nd))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return [d % max(nd, 1) for d in dims]


def _keepdim(b):
    return bool(b.args[2] if len(b.args) > 2 else b.kwargs.get("keepdim", False))


_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _accumulated(fd, x, v):
    """A reduction's operand: half and bfloat16 in float32, as eager accumulates them (the cast back to the
    traced dtype follows the op); nvFuser's runtime has no `+` of two bfloat16 values."""
    return fd.ops.cast(v(x), _datatype(torch.float32)) if x.meta.dtype in _LOW_PRECISION else v(x)


def _accumulator(dtype):
    return _datatype(torch.float32 if dtype in _LOW_PRECISION else dtype)


@_op("sum")
def _sum(fd, b, v):
    x = b.args[0]
    if x.meta.ndim == 0:  # sum/amax/amin of a 0-dim tensor (dim 0, -1 or none) is its value
        return fd.ops.set(v(x))  # (the dtype check after the op casts where torch's sum promotes)
    return fd.ops.sum(_accumulated(fd, x, v), _dims(b, x.meta.ndim), _keepdim(b), _accumulator(b.output.meta.dtype))


@_op("prod")
def _prod(fd, b, v):  # torch.prod: one int dim or none (every dim)
    x = b.args[0]
    if x.meta.ndim == 0:
        return fd.ops.set(v(x))
    return fd.ops.prod(_accumulated(fd, x, v), _dims(b, x.meta.ndim), _keepdim(b), _accumulator(b.output.meta.dtype))


def _reduction(name):
    @_op(name)
    def translate(fd, b, v):
        x = b.args[0]
        if x.meta.ndim == 0:
            return fd.ops.set(v(x))
        return getattr(fd.ops, name)(_accumulated(fd, x, v), _dims(b, x.meta.ndim), _keepdim(b))
    return translate


@_op("var")
def _var(fd, b, v):
    x = b.args[0]
    if x.meta.ndim == 0:
        raise Refused("prims.var of a 0-dim tensor")
    if len(b.args) > 2:
        raise Refused("var with positional options")
    correction = b.kwargs.get("correction", 1)
    if correction != int(correction):
        raise Refused("var with a fractional correction")
    return fd.ops.var(_accumulated(fd, x, v), _dims(b, x.meta.ndim), int(correction), bool(b.kwargs.get("keepdim", False)))


@_op("cast")
def _convert(fd, b, v):
    return fd.ops.cast(v(b.args[0]), _datatype(b.args[1]))


@_op("full")
def _full(fd, b, v):
    out = b.output
    return fd.ops.full(list(out.meta.shape), b.args[1], _datatype(out.meta.dtype))


@_op("reshape")
def _reshape(fd, b, v):
    return fd.ops.reshape(v(b.args[0]), list(b.output.meta.shape))


@_op("permute")
def _permute(fd, b, v):
    return fd.ops.permute(v(b.args[0]), [d % b.args[0].meta.ndim for d in b.args[1]])


@_op("broadcast_in_dim")
def _broadcast_to(fd, b, v):
    shape = list(b.output.meta.shape)
    nd_in = b.args[0].meta.ndim
    return fd.ops.broadcast_in_dim(v(b.args[0]), shape, list(range(len(shape) - nd_in, len(shape))))


@_op("broadcast_in_dim")
def _unsqueeze(fd, b, v):
    shape = list(b.output.meta.shape)
    new = b.args[1] % len(shape)
    return fd.ops.broadcast_in_dim(v(b.args[0]), shape, [i for i in range(len(shape)) if i != new])


@_op("squeeze")
def _squeeze(fd, b, v):
    x = b.args[0]
    dims = b.args[1] if len(b.args) > 1 else b.kwargs.get("dim", tuple(range(x.meta.ndim)))
    if x.meta.ndim == 0:
        return fd.ops.set(v(x))
    dims = [dims] if isinstance(dims, int) else list(dims)
    ones = [d % x.meta.ndim for d in dims if x.meta.shape[d] == 1]
    return fd.ops.squeeze(v(x), ones) if ones else fd.ops.set(v(x))


@_op("slice")
def _slice_in_dim(fd, b, v):  # torch.narrow(x, dim, start, length)
    x, dim, start, length = b.args[:4]
    shape = list(x.meta.shape)
    dim %= len(shape)
    start %= max(shape[dim], 1)
    starts = [start if i == dim else 0 for i in range(len(shape))]
    ends = [start + length if i == dim else n for i, n in enumerate(shape)]
    return fd.ops.slice(v(x), starts, ends, [1] * len(shape))


@_op("cat")
def _cat(fd, b, v):
    tensors, dim = b.args[0], (b.args[1] if len(b.args) > 1 else b.kwargs.get("dim", 0))
    return fd.ops.cat([v(t) for t in tensors], dim % b.output.meta.ndim)


@_op("where")
def _where(fd, b, v):
    return fd.ops.where(v(b.args[0]), v(b.args[1]), v(b.args[2]))


TRANSLATORS = {
    **{getattr(prims, n): _unary(n) for n in (
        "abs neg exp log log1p tanh erf sqrt rsqrt sin cos reciprocal sigmoid floor ceil sign logical_not").split()},
    **{getattr(prims, n): _binary(n) for n in "add sub mul pow maximum minimum eq ne lt le gt ge".split()},
    prims.logical_and: _binary("logical_and"), prims.logical_or: _binary("logical_or"),
    prims.div: _div, prims.where: _where,
    prims.sum: _sum, prims.amax: _reduction("max"), prims.amin: _reduction("min"), prims.var: _var,
    prims.prod: _prod,
    prims.convert_element_type: _convert, prims.full: _full, prims.clone: _op("set")(lambda fd, b, v: fd.ops.set(v(b.args[0]))),
    prims.reshape: _reshape, prims.permute: _permute, prims.broadcast_to: _broadcast_to,
    prims.unsqueeze: _unsqueeze, prims.squeeze: _squeeze, prims.slice_in_dim: _slice_in_dim, prims.cat: _cat,
}
# Not mapped, so refused: prims.remainder (torch's floor-mod; nvFuser's remainder is documented as the IEEE
# one, and a composition from fmod could not be checked against eager without a GPU), index_select/matmul
# (not fusible here), random ops (region barriers anyway).


def _input_descriptor(p: TensorProxy):
    from nvfuser_direct import compute_tensor_descriptor

    shape, stride = list(p.meta.shape), list(p.meta.stride())
    contiguity, stride_order = compute_tensor_descriptor(shape, stride)
    return [1 if n == 1 else -1 for n in shape], contiguity, stride_order


def build_definition(region_bsym: BoundSymbol):
    """(FusionDefinition, [(prim name, fd op names it emitted)]) for a fusion region; raises Refused."""
    return _build(region_bsym.symbol.region)


def _build(region):
    """`region`: inputs (proxies), bsyms (prims), outputs (proxies), as a fusion region or a VJP trace has them."""
    from nvfuser_direct import FusionDefinition

    for b in region.bsyms:
        if b.symbol not in TRANSLATORS:
            raise Refused(f"{b.symbol.name} has no nvFuser translation")
    devices = {p.device.type for p in region.inputs if p.meta.ndim > 0}
    values: dict[str, object] = {}
    mapping = []
    with FusionDefinition() as fd:
        for p in region.inputs:
            shape, contiguity, stride_order = _input_descriptor(p)
            values[p.name] = fd.define_tensor(shape=shape, contiguity=contiguity, dtype=_datatype(p.meta.dtype),
                                              is_cpu=p.meta.ndim == 0 and p.device.type == "cpu" and "cpu" not in devices,
                                              stride_order=stride_order)

        def value(x):
            if isinstance(x, TensorProxy):
                return values[x.name]
            if isinstance(x, (bool, int, float)):
                return x
            raise Refused(f"argument {x!r} of type {type(x).__name__}")

        for b in region.bsyms:
            if not isinstance(b.output, TensorProxy):
                raise Refused(f"{b.symbol.name} with several outputs")
            if any(isinstance(a, TensorProxy) and a.name not in values for a in pytree.tree_leaves((b.args, b.kwargs))):
                raise Refused(f"{b.symbol.name} reads a value defined outside the region")
            try:
                out = TRANSLATORS[b.symbol](fd, b, value)
            except RuntimeError as e:  # nvFuser's own check of the op's arguments
                raise Refused(f"{b.symbol.name}: nvFuser rejected it: {str(e).splitlines()[0]}") from e
            emitted = [TRANSLATORS[b.symbol].fd_op]
            want = b.output.meta
            if out.ndim != want.ndim:
                raise Refused(f"{b.symbol.name}: nvFuser gave rank {out.ndim}, the trace has {want.ndim}")
            if out.dtype() != _datatype(want.dtype):
                out = fd.ops.cast(out, _datatype(want.dtype))  # nvFuser's promotion differs from torch's here
                emitted.append("cast")
            mapping.append((b.symbol.name, emitted))
            values[b.output.name] = out
        for o in region.outputs:
            fd.add_output(values[o.name])
    return fd, mapping


# What ran where, for the CUDA tests' report (`statistics()`): executed definitions, and every execution failure
# (the region or backward then runs on torch) with its reason.
_EXECUTED = {"forward": 0, "backward": 0}
_EXECUTION_FAILURES: list[str] = []


def _first_line(e: Exception) -> str:
    """The error's first line that says something; for an NVRTC compile error (its message holds the whole
    kernel source), the compiler's log instead."""
    text = str(e)
    if "NVRTC compile error" in text:
        return f"{type(e).__name__}: NVRTC compile error: {text.split('NVRTC compile error', 1)[1][:300].strip(': ')}"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return f"{type(e).__name__}: {' / '.join(lines[:3])[:400]}"


def _as_traced(outs, inputs, layouts, fresh) -> list:
    """nvFuser's outputs as the traced ones are: in the traced layout (so later view ops behave as they did
    when traced), and in memory of their own where the traced result is no view (nvFuser may return an input's
    memory for an output equal to it, such as a reduction over size-1 dims, or one buffer for two equal
    outputs; eager returns new tensors, and a later in-place write into one must not reach the other)."""
    taken = {t.untyped_storage().data_ptr() for t in inputs if isinstance(t, torch.Tensor) and t.numel()}
    result = []
    for t, (shape, stride), own in zip(outs, layouts, fresh):
        if t.numel():
            if own and t.untyped_storage().data_ptr() in taken:
                t = in_layout(t, shape, stride)
            elif t.numel() > 1 and t.stride() != stride:
                t = in_layout(t, shape, stride)
            taken.add(t.untyped_storage().data_ptr())
        result.append(t)
    return result


class _NvRegion:
    """Runs a built definition; outputs whose strides differ from eager's (the traced meta) are laid out as
    eager's, so later view ops behave as they did when traced. If nvFuser fails to execute it (its own
    compile or launch error), the region runs as its plain torch ops from then on, with a warning: the same
    values, never a failed call that eager would have run."""

    def __init__(self, fd, outputs, plain=None, backward=None):
        self.fd = fd
        self.plain = plain
        self.failure: Exception | None = None
        self.layouts = [(tuple(o.meta.shape), tuple(o.meta.stride())) for o in outputs]
        self.fresh = [o.meta._base is None for o in outputs]  # (not a view when traced: memory of its own)
        self.backward = backward  # _NvBackward where autograd records the region's outputs

    def __call__(self, *inputs):
        if self.backward is not None and torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
            return _NvRegionFunction.apply(self, *inputs)
        return self.run(*inputs)

    def run(self, *inputs):
        if self.failure is None:
            try:
                outs = self.fd.execute(list(inputs))
                _EXECUTED["forward"] += 1
            except Exception as e:  # noqa: BLE001 - nvFuser's errors are RuntimeErrors of many kinds
                if self.plain is None:
                    raise
                self.failure = e
                _EXECUTION_FAILURES.append(f"region: {_first_line(e)}")
                warnings.warn(f"nvFuser could not execute a fusion region ({_first_line(e)}); it runs on torch "
                              "instead", RuntimeWarning, stacklevel=2)
        if self.failure is not None:
            return tuple(self.plain(*inputs))
        return tuple(_as_traced(outs, inputs, self.layouts, self.fresh))


class _NvBackward(RegionGradients):
    """A region's backward on nvFuser: the VJP trace's definition (the VJP trace itself runs as torch ops for
    create_graph=True, or if nvFuser fails to execute it)."""

    def __init__(self, region, trace: Trace):
        super().__init__(region, trace)
        self.results = [i for i, o in enumerate(trace.output) if o is not None]  # inputs that get a gradient
        outputs = [trace.output[i] for i in self.results]
        self.fd = _build(types.SimpleNamespace(inputs=list(trace.args), bsyms=list(trace.bsyms), outputs=outputs))[0]
        self.layouts = [(tuple(o.meta.shape), tuple(o.meta.stride())) for o in outputs]
        self.fresh = [o.meta._base is None for o in outputs]
        self.failure: Exception | None = None

    def __call__(self, saved, grads) -> tuple:
        n = len(self.trace.output)
        if torch.is_grad_enabled():  # create_graph=True: torch ops that autograd records
            return tuple(self.trace.python_callable()(*saved, *grads))
        if self.failure is None:
            try:
                outs = self.fd.execute([*saved, *grads])
                _EXECUTED["backward"] += 1
            except Exception as e:  # noqa: BLE001 - nvFuser's errors are RuntimeErrors of many kinds
                self.failure = e
                _EXECUTION_FAILURES.append(f"backward: {_first_line(e)}")
                warnings.warn(f"nvFuser could not execute a region's backward ({_first_line(e)}); it runs on "
                              "torch instead", RuntimeWarning, stacklevel=3)
        if self.failure is not None:
            return tuple(self.trace.python_callable()(*saved, *grads))
        result = [None] * n
        for i, t in zip(self.results, _as_traced(outs, [*saved, *grads], self.layouts, self.fresh)):
            result[i] = t
        return tuple(result)


class _NvRegionFunction(torch.autograd.Function):
    """One region, one autograd node: forward is the region's definition, backward its VJP's definition."""

    @staticmethod
    def forward(ctx, runner, *inputs):
        outs = runner.run(*inputs)  # (grad mode is off inside an autograd.Function's forward)
        bw = runner.backward
        ctx.backward_of = bw
        # inputs the trace writes back later are saved as their old value (the VJP reads that value)
        ctx.save_for_backward(*(inputs[i].clone() if i in bw.written_later else inputs[i] for i in bw.trace.saved))
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(*[o for o, d in zip(outs, bw.diff) if not d])
        return outs

    @staticmethod
    def backward(ctx, *grads):
        bw = ctx.backward_of
        got, gargs = bw.gradient_args(grads)
        result = bw(ctx.saved_tensors, gargs)
        return (None, *(r if i in got and ctx.needs_input_grad[i + 1] else None for i, r in enumerate(result)))


_BUILT: dict = {}
_BACKWARDS: dict = {}


def _signature(inputs) -> tuple:
    return tuple((tuple(p.meta.shape), tuple(p.meta.stride()), p.meta.dtype, str(p.device)) for p in inputs)


class NvFuserExecutor:
    fuses = True
    name = "nvfuser"

    def _key(self, bsym: BoundSymbol) -> tuple:
        from .inductor import region_function

        sub = region_function(bsym)
        return (sub.python_source(with_comments=False),
                tuple((k, repr(v)) for k, v in sub.python_ctx().items() if k.startswith("_k")),
                _signature(bsym.symbol.region.inputs))

    def definition(self, bsym: BoundSymbol):
        """The region's built definition (cached), or the Refused explaining why there is none."""
        key = self._key(bsym)
        if key not in _BUILT:
            try:
                _BUILT[key] = build_definition(bsym)[0]
            except Refused as e:
                _BUILT[key] = e
        return _BUILT[key]

    def backward(self, bsym: BoundSymbol):
        """The region's backward on nvFuser (cached like its definition), or the reason it has none."""
        # (which inputs require grad decides which gradients the VJP computes: part of the key)
        key = self._key(bsym) + (tuple(p.meta.requires_grad for p in bsym.symbol.region.inputs),)
        if key not in _BACKWARDS:
            region = bsym.symbol.region
            try:
                _BACKWARDS[key] = _NvBackward(region, backward_trace(region, f"backward_{bsym.symbol.name}"))
            except NoVJP as e:
                _BACKWARDS[key] = Refused(f"no backward: {e}")
            except Refused as e:
                _BACKWARDS[key] = Refused(f"its backward has no nvFuser definition: {e}")
        return _BACKWARDS[key]

    def can_execute(self, bsym: BoundSymbol) -> bool:
        region = getattr(bsym.symbol, "region", None)
        if getattr(bsym.symbol, "executor", None) is not self or region is None:
            return False
        if any(p.device.type != "cuda" and not (p.meta.ndim == 0 and p.device.type == "cpu") for p in region.inputs):
            return False
        if isinstance(self.definition(bsym), Refused):
            return False
        if any(o.meta.requires_grad for o in region.outputs):  # autograd records it: a backward is needed
            return not isinstance(self.backward(bsym), Refused)
        return True

    def callee(self, bsym: BoundSymbol, trace: Trace) -> str:
        from .inductor import region_function

        name = bsym.symbol.name
        backward = self.backward(bsym) if any(o.meta.requires_grad for o in bsym.symbol.region.outputs) else None
        trace.constants[name] = _NvRegion(self.definition(bsym), bsym.symbol.region.outputs,
                                          region_function(bsym).python_callable(), backward)
        bsym.symbol.backward = backward.trace if backward is not None else None  # (compiler.last_backward_traces)
        return name


def statistics() -> dict:
    """This process's nvFuser work so far: definitions built and refused (by reason), backwards built and
    refused, executions, and execution failures (each region or backward then ran on torch)."""
    def reasons(values):
        out: dict[str, int] = {}
        for v in values:
            if isinstance(v, Refused):
                why = str(v)
                out[why] = out.get(why, 0) + 1
        return out

    return {"definitions built": sum(not isinstance(v, Refused) for v in _BUILT.values()),
            "definitions refused": reasons(_BUILT.values()),
            "backwards built": sum(not isinstance(v, Refused) for v in _BACKWARDS.values()),
            "backwards refused": reasons(_BACKWARDS.values()),
            "executed": dict(_EXECUTED), "execution failures": list(_EXECUTION_FAILURES)}


def nvfuser_executor():
    """The executor for `executors=("nvfuser", ...)`: a clear error where it cannot run."""
    if importlib.util.find_spec("nvfuser_direct") is None:
        raise ExecutorError('executor "nvfuser" needs the nvfuser_direct package (pip install nvfuser-cu128-torch210, '
                            'Python 3.10/3.12 with torch 2.10) and a CUDA device; use executors=("inductor", "torch") '
                            'or ("torch",) here')
    if not torch.cuda.is_available():
        raise ExecutorError('executor "nvfuser" needs a CUDA device; none is available (nvfuser_direct builds '
                            'definitions without one but cannot execute them)')
    return _EXECUTOR


_EXECUTOR = NvFuserExecutor()
nvfuser_default = _EXECUTOR  # what compiler.executors.default_executors puts first for CUDA inputs
