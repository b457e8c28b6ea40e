"""The inductor executor: each fusion region becomes a Python function of torch ops (the region's prims,
printed as a trace), compiled with `torch.compile` (inductor; CPU or CUDA).

Compiled regions are shared by every jitted function: the key is the region's printed code plus the
layout of its inputs (shape, strides, dtype, device, requires_grad), so a region seen again costs no
compile. For a function jitted with cache="symbolic values" (`shape_generic`), the key leaves out sizes and
strides and the region is compiled with dynamic shapes: the traces of other sizes print the same region code
(their sizes are not in it), and one compiled kernel serves them all (dynamo guards what it assumed). torch.compile compiles on the first call, so tracing stays fast and the first call pays it.
Autograd: a region called with inputs that require grad runs as one `torch.autograd.Function` whose
backward is the region's vector-Jacobian product (passes/vjp.py, built from per-prim VJP rules), compiled
by the same backend, so the backward is fused too. Its training forward also returns the matmul and reduction
results the VJP reads (residuals), so the backward does not compute them again. A region with a prim that has no
VJP rule, a shape-generic region (its VJP trace would bake in sizes) and a call under autocast keep torch.compile's
own AOTAutograd; `compiler.last_backward_traces` shows which is which.
Call cost: a CPU graph called TIER_UP_CALLS times is compiled again with inductor's C++ wrapper.
Numerics: regions compile with eager's where inductor's defaults differ (EAGER_NUMERICS); a graph whose
inlined expressions would grow past a bound realizes more values (INLINED_BOUND). torch._dynamo and
the backend are imported in a thread of their own, so their import leaves no reference cycle through the
jitted call's frames (which would keep its tensors until the garbage collector runs).
"""
from __future__ import annotations

import contextlib
import math
import threading
import time
from contextlib import contextmanager

import torch

from ..features import autocast
from ..passes.fusion import MATMUL
from ..passes.vjp import NoVJP, RegionGradients, backward_trace, with_residuals
from ..core.symbols import BoundSymbol
from ..core.trace import Trace
from .layouts import in_layout

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


_IMPORTED: set = set()


def _import_off_the_stack(backend: str) -> None:
    """torch._dynamo and the backend's modules, imported in a thread of their own the first time. Importing them
    leaves reference cycles through the importing frames (torch's import, ~40 frames), which would hold the
    jitted call's frames, and its inputs and intermediates with them, until the garbage collector runs; a
    thread's frames reach nothing of the caller's."""
    if backend in _IMPORTED:
        return

    def load():
        import torch._dynamo

        torch._dynamo.lookup_backend(backend)

    worker = threading.Thread(target=load, name="thunder-lint import of torch._dynamo")
    worker.start()
    worker.join()
    _IMPORTED.add(backend)


def region_function(bsym: BoundSymbol, name: str = "region"):
    """The region as plain Python over torch (uncompiled), and its printed source."""
    region = bsym.symbol.region
    sub = Trace(name)
    sub.args = list(region.inputs)
    sub.bsyms = list(region.bsyms)
    sub.output = tuple(region.outputs)
    return sub


# Where inductor's defaults give other values than eager, regions compile with eager's: inductor elides the
# rounding between fused low-precision ops (bf16/fp16 computed in fp32 across a region; eager rounds after
# each op), and its joint-graph constant folding takes `x * 0` for 0 (eager: nan for inf and nan, -0.0 for
# negative x; a region's VJP multiplies by zero wherever a forward op did).
EAGER_NUMERICS = {"emulate_precision_casts": True, "joint_graph_constant_folding": False}

# Inductor inlines a pointwise value into each of its readers while the value's own expression is small (30
# ops, `realize_opcount_threshold`), so a value read several times is duplicated, and a chain of them grows
# with the product of the read counts: ten `v = torch.where(v > 0, v, -v)` (three reads each) inline into one
# expression 3^10 nodes large, minutes of code generation. A graph whose pointwise expressions, inlined into
# every read, would exceed INLINED_BOUND nodes compiles with values realized past REALIZE_SMALL ops; every
# other graph keeps inductor's default (realizing more costs memory traffic in the graphs that matter).
INLINED_BOUND = 2000
REALIZE_SMALL = 16
_NOT_INLINED = frozenset(("prims.sum", "prims.amax", "prims.amin", "prims.prod", "prims.var", "prims.matmul"))


def inlined_size(bsyms) -> int:
    """The largest expression, in nodes, of a pointwise value of this straight-line code if every pointwise
    value were inlined into each read of it (reductions and matmuls are buffers: they count one). Capped just
    above INLINED_BOUND."""
    size: dict[str, int] = {}
    largest = 0
    for b in bsyms:
        pointwise = b.symbol.name not in _NOT_INLINED
        n = 1 + (sum(size.get(a.name, 1) for a in b.tensor_args()) if pointwise else 0)
        n = min(n, INLINED_BOUND + 1)
        largest = max(largest, n)
        for o in b.tensor_outputs():
            size[o.name] = n if pointwise else 1
    return largest


def _options(backend: str, size: int) -> dict:
    """Inductor's config for a graph of this inlined size: eager's numerics, and the realize bound."""
    if backend != "inductor":
        return {}
    return dict(EAGER_NUMERICS, **({"realize_opcount_threshold": REALIZE_SMALL} if size > INLINED_BOUND else {}))


def _eager_numerics(backend: str, size: int, cpp_wrapper: bool = False):
    if backend != "inductor":
        return contextlib.nullcontext()
    import torch._inductor.config

    return torch._inductor.config.patch(dict(_options(backend, size), **({"cpp_wrapper": True} if cpp_wrapper else {})))


# A graph called this many times is compiled again with inductor's C++ wrapper (`cpp_wrapper`): the same kernels,
# called from C++ instead of a Python function that allocates each buffer and checks each input's layout (~1 us a
# buffer, 10-50 us a call of a small graph: most of a small region's time). Compiling it costs ~1 s a graph,
# which a region called this often pays back; a function called a few times (most tests) never pays it, nor does
# a graph whose calls took TIER_UP_MAX_CALL_S or more on average (the wrapper's cost is under 1% of those).
# TIER_UP_CALLS = 0: never.
TIER_UP_CALLS = 64
TIER_UP_MAX_CALL_S = 0.005


class _TieredGraph:
    """A compiled CPU graph that replaces itself by its C++-wrapped build on its TIER_UP_CALLS-th call (the
    Python-wrapped one stays where that build fails)."""

    __slots__ = ("fn", "calls", "spent", "upgrade", "cpp_wrapped")

    def __init__(self, fn, upgrade):
        self.fn, self.calls, self.spent, self.upgrade, self.cpp_wrapped = fn, 0, 0.0, upgrade, False

    def __call__(self, *args):
        if self.upgrade is None:
            return self.fn(*args)
        start = time.perf_counter()
        out = self.fn(*args)
        self.spent += time.perf_counter() - start
        self.calls += 1
        if self.calls >= TIER_UP_CALLS > 0:
            if self.spent / self.calls < TIER_UP_MAX_CALL_S:
                better = self.upgrade(args)
                if better is not None:
                    self.fn, self.cpp_wrapped = better, True
            self.upgrade = None
        return out


class _Region:
    """A region's compiled function. The region's FX graph (symbolic_trace of its straight-line torch code)
    goes to torch.compile's backend directly, once per grad mode and autocast state: the prologue of every
    jitted function using the region already guards its inputs' layouts (they are part of the cache key), so
    dynamo's frame capture and guard checks on every call (~0.1-0.5 ms a call, most of a small region's
    time) are not needed. If that fails, torch.compile of the function is used; if dynamo cannot capture it
    whole either (an op it does not support), the region runs as its plain torch ops, which compute the
    same values."""

    def __init__(self, fn, backend, options, direct=True, dynamic=False, vjp=None, size=0, out_strides=None,
                 out_orders=None, out_owned=None):
        self.plain = fn
        self.size = size  # inlined_size of its code
        self.backend, self.options, self.use_direct, self.dynamic = backend, options, direct, dynamic
        self.direct: dict = {}  # (grad mode, autocast state) -> the backend's compiled graph
        self.compiled = None
        self.failure = None
        self.vjp = vjp  # _VJP: the region's backward from per-prim rules, or None (AOTAutograd's)
        self.out_strides = out_strides  # each output's traced strides (None: shape-generic, any layout)
        self.restride: dict = {}  # key -> positions of outputs the compiled graph lays out otherwise
        self.out_orders = out_orders  # shape-generic: each output's traced dimension order, innermost first
        self.out_owned = out_owned  # per output: eager's result is no view (its meta has no base)
        self.unview: dict = {}  # key -> positions of outputs the compiled graph returns as views of its own buffers

    def _direct(self, inputs, fn=None, size=None):
        if self.options or not self.use_direct or self.dynamic:  # (direct compiles for these sizes only)
            return None  # options patch inductor's config inside torch.compile
        size = self.size if size is None else size
        call = self._compile(fn or self.plain, inputs, size)
        if call is None or self.backend != "inductor" or \
                not all(t.device.type == "cpu" for t in inputs if isinstance(t, torch.Tensor)):
            return call
        return _TieredGraph(call, lambda args: self._compile(fn or self.plain, args, size, cpp_wrapper=True))

    def _compile(self, fn, inputs, size, cpp_wrapper=False):
        try:
            gm = torch.fx.symbolic_trace(fn)
            with _eager_numerics(self.backend, size, cpp_wrapper):
                compiled = torch._dynamo.lookup_backend(self.backend)(gm, list(inputs))
        except Exception:  # noqa: BLE001 - any failure: torch.compile of the function instead
            return None
        made_once = _outputs_made_at_trace_time(gm)
        if made_once:  # each call returns a new tensor, as eager's ops make one (the caller may write into it)
            return lambda *args: tuple(o.clone() if i in made_once else o for i, o in enumerate(compiled(*args)))
        return lambda *args: tuple(compiled(*args))

    def __call__(self, *inputs):
        if not self.dynamic:
            return self._call(*inputs)
        # torch.compile(dynamic=True) marks tensors for dynamo (its outputs, and inputs it saw as dynamic); eager's
        # results and arguments carry no such mark, so the marks this call made are taken off
        marked = {id(t) for t in inputs if isinstance(t, torch.Tensor) and _DYNAMO_MARK in t.__dict__}
        outs = self._call(*inputs)
        for t in (*inputs, *outs):
            if isinstance(t, torch.Tensor) and _DYNAMO_MARK in t.__dict__ and id(t) not in marked:
                del t.__dict__[_DYNAMO_MARK]
        return outs

    def _call(self, *inputs):
        grad, cast = torch.is_grad_enabled(), autocast.current()  # (read once a call: a region call is ~20 us)
        if self.vjp is not None and grad and not any(e for e, _ in cast) and any(t.requires_grad for t in inputs):
            return _apply_region(self, cast, inputs)
        return self._run(inputs, (grad, cast))

    def _run(self, inputs, key):
        return self._traced_layouts(self._run_graph(inputs, key), key)

    def _run_training(self, inputs, cast):
        """(outputs, residuals) of the region's training forward, which also returns the matmul and reduction
        results its backward reads (vjp.fast); None where that graph is not compiled directly (the backward then
        computes them again from the inputs)."""
        key = ("training", cast)
        if key not in self.direct:
            self.direct[key] = self._direct(inputs, self.vjp.forward_fn) if self.failure is None else None
        fn = self.direct[key]
        if fn is None:
            return None
        outs = fn(*inputs)
        n = len(outs) - len(self.vjp.fast.residuals)
        return self._traced_layouts(outs[:n], key), outs[n:]

    def _traced_layouts(self, outs, key):
        """The compiled graph's outputs, in the traced layouts (`out_strides`): inductor lays a pointwise result out
        like its input (`w * softmax(a.t())` transposed) where eager's op returned it contiguous, and an
        `as_strided` or `.view()` after the region would read other elements. Which outputs differ is found on the
        first call for each key (the region is compiled per input layout), and only those are copied.
        An output eager makes as a tensor of its own that the graph returns as a view of a buffer of its own
        (aot_eager's batched matmul: a view of the bmm result) is taken as its detached alias, no view, as eager's
        (a later view of it has it as base); not one autograd records (torch.compile's own backward)."""
        unview = self.unview.get(key)
        if unview is None:
            unview = self.unview[key] = () if self.out_owned is None else tuple(
                i for i, (o, owned) in enumerate(zip(outs, self.out_owned))
                if owned and isinstance(o, torch.Tensor) and o._is_view() and not o.requires_grad)
        if unview:
            outs = list(outs)
            for i in unview:
                outs[i] = outs[i].detach()
            outs = tuple(outs)
        if self.out_strides is None:
            return outs if self.out_orders is None else self._in_traced_order(outs)
        redo = self.restride.get(key)
        if redo is None:
            redo = self.restride[key] = tuple(
                i for i, (o, want) in enumerate(zip(outs, self.out_strides))
                if want is not None and isinstance(o, torch.Tensor) and o.dim() > 1 and o.stride() != want)
        if not redo:
            return outs
        outs = list(outs)
        for i in redo:
            o = outs[i]
            outs[i] = in_layout(o, o.shape, self.out_strides[i])
        return tuple(outs)

    def _in_traced_order(self, outs):
        """A shape-generic region's outputs (any size: no fixed strides) dense in the traced dimension order."""
        fixed = None
        for i, (o, order) in enumerate(zip(outs, self.out_orders)):
            if order is None or not isinstance(o, torch.Tensor) or o.dim() < 2 or any(d >= o.dim() for d in order):
                continue
            want = _dense_in_order(o.shape, order)
            have = o.stride()
            if any(want[d] != have[d] for d in range(o.dim()) if o.shape[d] > 1):
                fixed = fixed or list(outs)
                fixed[i] = in_layout(o, o.shape, want)
        return outs if fixed is None else tuple(fixed)

    def _run_graph(self, inputs, key):
        """The compiled graph for this grad mode and autocast state (`key`)."""
        if self.failure is None:
            if key not in self.direct:
                self.direct[key] = self._direct(inputs)
            fn = self.direct[key]
            if fn is not None:
                return fn(*inputs)
            if self.compiled is None:
                options = dict(self.options or {}, **_options(self.backend, self.size)) if self.backend == "inductor" \
                    else self.options
                self.compiled = torch.compile(self.plain, backend=self.backend, fullgraph=True,
                                              dynamic=self.dynamic, options=options)
            try:
                return self.compiled(*inputs)
            except (torch._dynamo.exc.Unsupported, torch._dynamo.exc.BackendCompilerFailed) as e:
                self.failure = e
        return self.plain(*inputs)


_DYNAMO_MARK = "_dynamo_propagated_dynamic_indices"  # (torch/_dynamo: an output's dims that came from dynamic inputs)


def _outputs_made_at_trace_time(gm) -> frozenset:
    """Positions of the outputs that FX's symbolic tracing computed once, while tracing (ops none of whose
    arguments depend on the region's inputs: `zeros(3) * 2 + 1`), and keeps as a graph attribute: every call
    would return that same tensor."""
    output = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    outs = output if isinstance(output, (tuple, list)) else (output,)
    return frozenset(i for i, o in enumerate(outs) if isinstance(o, torch.fx.Node) and o.op == "get_attr")


class _VJP(RegionGradients):
    """A region's backward traces, compiled by the region's backend on first use: `fast` reads the forward's matmul
    and reduction results (the training forward, `forward_fn`, returns them after the outputs), `trace` computes
    everything again from the inputs (a backward that autograd records, create_graph=True, differentiates it).
    The forward saves the inputs either reads (`keep`)."""

    def __init__(self, region, trace: Trace):
        super().__init__(region, trace)
        self.compiled = None
        self.fast = with_residuals(region, trace)
        self.fast_compiled = None
        self.keep = sorted(set(trace.saved) | set(self.fast.saved if self.fast else ()))
        self.forward_fn = None
        self.grad_strides = None  # the layouts the backward was compiled for (the first call's gradients)
        if self.fast is not None:
            forward = Trace(f"training_{trace.name}")
            forward.args = list(region.inputs)
            forward.bsyms = list(region.bsyms)
            forward.output = tuple(region.outputs) + tuple(self.fast.residuals)
            self.forward_fn = forward.python_callable()

    def gradients_as_compiled(self, grads) -> tuple[frozenset, list]:
        """gradient_args, each gradient in the layout of the first call's (the compiled backward checks its inputs'
        strides; autograd gives the same layouts call after call, so this copies nothing then). A first gradient
        that overlaps itself or has gaps (an expanded one) is taken contiguous."""
        got, args = self.gradient_args(grads, contiguous=False)
        if self.grad_strides is None:
            self.grad_strides = [_dense_strides(a) for a in args]
        return got, [a if a.stride() == s else torch.empty_strided(a.shape, s, dtype=a.dtype, device=a.device).copy_(a)
                     for a, s in zip(args, self.grad_strides)]


def _dense_in_order(shape, order) -> list:
    """The strides of a dense tensor of `shape` laid out in `order` (dimensions, innermost first)."""
    want, step = [0] * len(shape), 1
    for d in order:
        want[d] = step
        step *= shape[d]
    return want


def _dense_strides(t: torch.Tensor) -> tuple:
    """t's strides where its elements fill its memory once in some dimension order, else contiguous strides."""
    want = _dense_in_order(t.shape, sorted(range(t.dim()), key=lambda d: t.stride(d)))
    if all(want[d] == t.stride(d) for d in range(t.dim()) if t.shape[d] > 1):
        return tuple(t.stride())
    return tuple(_dense_in_order(t.shape, reversed(range(t.dim()))))


class _RegionFunction(torch.autograd.Function):
    """One region, one autograd node: forward is the compiled region (its training graph where the backward reads
    forward results), backward the compiled VJP."""

    @staticmethod
    def forward(ctx, region, cast, *inputs):
        vjp = region.vjp
        got = region._run_training(inputs, cast) if vjp.fast is not None else None
        if got is None:
            outs, residuals = region._run(inputs, (False, cast)), ()  # grad mode is off here: the inference graph
        else:
            outs, residuals = got
        ctx.region, ctx.fast = region, got is not None
        # inputs the trace writes back later are saved as their old value (the VJP reads that value); the outputs
        # eager saves (version_checked) come last, only for autograd's check that nothing wrote them since
        keep = vjp.keep if ctx.fast else vjp.trace.saved
        checked = [outs[i] for i in vjp.version_checked]
        if vjp.written_later:
            ctx.save_for_backward(*(inputs[i].clone() if i in vjp.written_later else inputs[i] for i in keep), *residuals,
                                  *checked)
        else:
            ctx.save_for_backward(*[inputs[i] for i in keep], *residuals, *checked)
        ctx.set_materialize_grads(False)
        if not all(vjp.diff):
            ctx.mark_non_differentiable(*[o for o, d in zip(outs, vjp.diff) if not d])
        return outs

    @staticmethod
    def backward(ctx, *grads):
        region, vjp = ctx.region, ctx.region.vjp
        saved = ctx.saved_tensors
        if vjp.version_checked:
            saved = saved[:len(saved) - len(vjp.version_checked)]
        got, gargs = vjp.gradients_as_compiled(grads)
        if ctx.fast:
            kept = dict(zip(vjp.keep, saved))
            inputs = [kept[i] for i in vjp.trace.saved]
        else:
            inputs = saved
        if torch.is_grad_enabled():  # create_graph=True: the VJP trace's torch ops, which autograd records
            result = vjp.trace.python_callable()(*inputs, *gargs)
        elif ctx.fast:
            args = [*(kept[i] for i in vjp.fast.saved), *saved[len(vjp.keep):], *gargs]
            if vjp.fast_compiled is None:
                fn = vjp.fast.python_callable()
                vjp.fast_compiled = region._direct(args, fn, inlined_size(vjp.fast.bsyms)) or fn
            result = vjp.fast_compiled(*args)
        else:
            if vjp.compiled is None:
                fn = vjp.trace.python_callable()
                vjp.compiled = region._direct([*inputs, *gargs], fn, inlined_size(vjp.trace.bsyms)) or fn
            result = vjp.compiled(*inputs, *gargs)
        return (None, None, *(r if i in got and ctx.needs_input_grad[i + 2] else None for i, r in enumerate(result)))


# autograd.Function.apply less its Python part (binding default arguments, a generator over the arguments): a region
# call is ~20 us, that part ~3 us of it
_C_APPLY = super(torch.autograd.Function, _RegionFunction).apply


def _apply_region(region, cast, inputs):
    if torch._C._are_functorch_transforms_active():
        return _RegionFunction.apply(region, cast, *inputs)
    return _C_APPLY(region, cast, *map(torch._C._functorch.unwrap_if_dead, inputs))


class InductorExecutor:
    """`backend`: torch.compile's backend ("inductor"; "aot_eager" runs the same graph capture and autograd
    without code generation, which the tests use for breadth)."""

    fuses = True
    fusible_extra = MATMUL  # (passes/fusion.py) matmuls join regions: inductor calls mm inside them

    def __init__(self, backend: str = "inductor", options: dict | None = None, direct: bool = True,
                 vjp: bool = True, fuse_matmul: bool = True):
        self.backend = backend
        self.options = options
        self.direct = direct  # False: every region call goes through torch.compile's dynamo (bench baseline)
        self.vjp = vjp  # False: regions needing grad use torch.compile's AOTAutograd (bench baseline)
        if not fuse_matmul:  # (bench baseline: matmuls split regions)
            self.fusible_extra = frozenset()
        self.name = "inductor" if backend == "inductor" else f"torch_compile_{backend}"

    def can_execute(self, bsym: BoundSymbol) -> bool:
        return getattr(bsym.symbol, "executor", None) is self

    def differentiates(self, region) -> bool:
        """Whether the region, called with grad enabled, is one autograd node whose backward is its VJP, which
        gives None (not zeros) to inputs that no output with a gradient reaches (passes/fusion.py then keeps
        parts that share no data in one region); not under autocast or for shape-generic regions, which
        torch.compile's AOTAutograd differentiates."""
        if not self.vjp or getattr(_LOCAL, "generic", False) or any(e for e, _ in autocast.current()):
            return False
        return not isinstance(_vjp(region, "backward"), str)

    def callee(self, bsym: BoundSymbol, trace: Trace) -> str:
        _import_off_the_stack(self.backend)
        sub = region_function(bsym)
        generic = getattr(_LOCAL, "generic", False)
        numbers = _numbers_as_inputs(sub) if generic else []
        source = sub.python_source(with_comments=False)
        inputs = bsym.symbol.region.inputs
        # an input whose size depends on values (`x[mask]`): one trace serves every such size, so its region must
        # check sizes on each call (torch.compile's guards) instead of a compile for the first call's sizes, whose
        # kernel would read past a smaller input (an empty one: a segfault)
        sized_by_values = any(p.dynamic for p in inputs)
        key = (self.backend, self.direct, self.vjp, source, tuple((k, repr(v)) for k, v in sub.python_ctx().items() if k.startswith("_k")),
               ("any size",) + _generic_signature(inputs) if generic else _signature(inputs), sized_by_values)
        fn = _COMPILED.get(key)
        if fn is None:
            vjp = _vjp(bsym.symbol.region, f"backward_{bsym.symbol.name}") if self.vjp and not generic else None
            fn = _Region(sub.python_callable(), self.backend, self.options, self.direct,
                         dynamic=generic or sized_by_values, vjp=vjp if isinstance(vjp, _VJP) else None,
                         size=inlined_size(sub.bsyms),
                         out_strides=None if generic or sized_by_values else _traced_strides(bsym.symbol.region),
                         out_orders=_traced_orders(bsym.symbol.region) if generic or sized_by_values else None,
                         out_owned=tuple(getattr(getattr(p, "meta", None), "_base", 0) is None
                                         for p in bsym.symbol.region.outputs))
            fn.no_vjp = vjp if isinstance(vjp, str) else None
            _COMPILED[key] = fn
        # what compiler.last_backward_traces shows: the VJP trace, or why the region has none
        bsym.symbol.backward = (fn.vjp.fast or fn.vjp.trace) if fn.vjp is not None else fn.no_vjp
        name = bsym.symbol.name
        trace.constants[name] = fn if not numbers else _WithNumbers(fn, numbers)
        return name


def _traced_strides(region) -> tuple:
    """Each region output's strides as the trace's metadata has them (eager's), None where unknown."""
    out = []
    for p in region.outputs:
        meta = getattr(p, "meta", None)
        try:
            out.append(tuple(int(s) for s in meta.stride()) if meta is not None else None)
        except Exception:  # noqa: BLE001 - a symbolic stride: no fixed layout to keep
            out.append(None)
    return tuple(out)


def _traced_orders(region) -> tuple:
    """Each region output's dimension order in the trace's metadata, innermost (smallest stride) first; None
    where the strides are not plain numbers. An expanded dimension (stride 0, size over 1) is left out: the output
    is dense in the others and keeps stride 0 there, as eager's broadcast does (put first, it made a dense copy
    whose order the next op's result took)."""
    out = []
    for p, stride in zip(region.outputs, _traced_strides(region)):
        if stride is None:
            out.append(None)
            continue
        shape = tuple(p.meta.shape)
        dims = [d for d in range(len(stride)) if stride[d] != 0 or shape[d] <= 1]
        out.append(tuple(sorted(dims, key=lambda d: (stride[d], -d))))
    return tuple(out)


# Elementwise prims whose number operands become region inputs when regions are shape-generic: the region's
# code is then the same for every value, and one compile serves them (torch.compile(dynamic=True) takes ints
# as symbolic ints; pow keeps its exponent, which inductor specializes into cheaper code).
_NUMBER_OPERANDS = frozenset(f"prims.{n}" for n in "add sub mul div remainder maximum minimum eq ne lt le gt ge "
                                                    "where".split())


# Prims whose size arguments (the shape tuple; narrow's start and length) become region inputs likewise, so a
# region that broadcasts or reshapes is the same code at every size (ints 0, 1 and -1 stay: they change the
# op's meaning, and torch.compile specializes 0 and 1 anyway).
_SIZE_ARGUMENTS = {"prims.broadcast_to": (1,), "prims.reshape": (1,), "prims.full": (0,), "prims.slice_in_dim": (2, 3)}


def _numbers_as_inputs(sub: Trace) -> list:
    """Replace the number operands of the region's elementwise prims, and the sizes given to its shape prims,
    by parameters; returns their values, in order."""
    from ..symbolic.values import SymFloat, SymInt

    values = []

    def lift(a, size=False):
        if type(a) in (tuple, list) and size:
            return type(a)(lift(i, True) for i in a)
        if size and not (type(a) is int and a not in (-1, 0, 1)):
            return a
        if type(a) is int or type(a) is float and math.isfinite(a) and a != 0.0:  # (nan, inf, -0.0 stay)
            p = (SymInt if type(a) is int else SymFloat)(f"number{len(values)}", a)
            sub.args.append(p)
            values.append(a)
            return p
        return a

    bsyms = []
    for b in sub.bsyms:
        name = b.symbol.name
        if name in _NUMBER_OPERANDS:
            b = BoundSymbol(b.symbol, tuple(lift(a) for a in b.args), b.kwargs, b.output, b.subsymbols,
                            b.location, b.impl)
        elif name in _SIZE_ARGUMENTS:
            b = BoundSymbol(b.symbol, tuple(lift(a, True) if i in _SIZE_ARGUMENTS[name] else a
                                            for i, a in enumerate(b.args)), b.kwargs, b.output, b.subsymbols,
                            b.location, b.impl)
        bsyms.append(b)
    sub.bsyms = bsyms
    return values


class _WithNumbers:
    """A shape-generic region called from one execution trace: its tensors, then this trace's numbers."""

    def __init__(self, region, numbers):
        self.region, self.numbers = region, tuple(numbers)

    def __call__(self, *tensors):
        return self.region(*tensors, *self.numbers)


def _vjp(region, name):
    """The region's VJP when an input requires grad and every prim has a rule; else None (no input requires
    grad) or the reason it has none (torch.compile's AOTAutograd differentiates it then)."""
    if not any(p.meta.requires_grad for p in region.inputs):
        return None
    try:
        return _VJP(region, backward_trace(region, name))
    except NoVJP as e:
        return f"{name}: {e}; differentiated by torch.compile's AOTAutograd"


inductor_executor = InductorExecutor()
