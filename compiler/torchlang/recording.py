"""Recording: while the front end runs the user's function over proxies, every torch call becomes a bound
symbol of the trace. `TracingState` is what one run records (the trace, its inputs, captured tensors,
events, the grad-mode and autocast state ops are traced in); recording a call (`TracingState.record`) runs the op's meta function,
decomposes it into prims, keeps symbolic sizes, and emits the events the analysis reads (TL101, TL102).
"""
from __future__ import annotations

import operator

import torch

from ..core import events as ev
from ..core import tree as pytree
from ..core.context import current_state
from ..core.errors import CompilerError, UnsupportedInputError
from ..core.proxies import FloatProxy, IntegerProxy, OpaqueProxy, TensorProxy
from ..core.source import INTERPRETERS, user_location
from ..core.symbols import BoundSymbol, Symbol, Tag
from ..core.trace import Trace
from ..features import autocast, torch_flags
from ..features.rng import UnknownSeed, raise_seed_use
from ..meta.functions import meta_like
from ..meta.functions import eager_exception, normalize_device, real_kernel_error
from ..symbolic.shapes import for_op, set_output_shapes
from ..symbolic.sizes import UNKNOWN, fix_sizes
from ..symbolic.values import SYM_TYPES, concrete
from .decompositions import Skip, dropout_returns_input

# `with torch.no_grad():` inside the user's function is no torch call: the recorder notices the grad mode
# change at the next op and records this symbol, so the computation runs each op in eager's grad mode.
SET_GRAD_ENABLED = Symbol("torch._C._set_grad_enabled", torch._C._set_grad_enabled, Tag.EFFECT,
                          meta=lambda sym, args, kwargs: None)


class TracingState:
    """What one run of the front end records: the trace, its inputs, captured tensors, events."""

    def __init__(self, observers=(), decompose: bool = True):
        self.trace = Trace("computation")
        self.scopes: list[list] = [self.trace.bsyms]
        self.observers = list(observers)
        self.events: list[ev.Event] = []
        self.captured: list[tuple[torch.Tensor, TensorProxy]] = []
        self.inputs: list = []  # TensorProxy and OpaqueProxy parameters of the computation, in order
        self.opaque: dict[int, OpaqueProxy] = {}  # id(real object) -> its proxy (generators, BackwardHooks)
        self.created_generators: list = []  # stand-ins of generators made inside (compiler/features/rng.py)
        self.called_modules: dict = {}  # id -> nn.Module whose __call__ the traced code ran (hooks guarded)
        self.tracked_containers: set = set()  # ids of module-held lists/dicts (their in-place changes are marked)
        self.write_marks: dict = {}  # (id(holder), key) -> [(trace position, value)] of its writes (epilogue stores)
        self.decompose = decompose
        self.may_view_origin: dict[str, BoundSymbol] = {}
        self.current_location = None
        self.grad_enabled = torch.is_grad_enabled()
        self.default_device = torch.get_default_device()
        self.initial_grad_enabled = self.grad_enabled
        self.autocast = autocast.current()  # the autocast state ops are being traced in
        self.initial_autocast = self.autocast
        self.torch_flags = torch_flags.current()  # default dtype, deterministic, sdpa backends... ops are traced under
        self.initial_torch_flags = self.torch_flags
        self.real_inputs: dict = {}  # proxy name -> the argument tensor, while tracing (segments run on them)
        self.segmenter = None  # compiler.frontend.segments.Segmenter when reads of tensor values split the trace
        self.builder = None  # the PrologueBuilder: inputs found while tracing (an input's .grad)
        self.symbolic = False  # cache="symbolic values": numbers stay symbolic (compiler.symbolic)
        self.constraints: list = []  # compiler.symbolic.values.Constraint: what the prologue checks of them
        self.sizes_fixed = False  # symbolic sizes specialized (a size no shape rule follows was read)
        self.single_use: list = []  # why the trace can serve only the call that traced it (a read of .numpy())
        self.read_syms: dict = {}  # name of a number read from a tensor, kept symbolic -> its read's index
        self.read_sym_values: list = []  # those numbers (SymInt/SymFloat)
        self.name_input = lambda origin: origin  # "args[0]" -> "x" (the front end knows the signature)

    def record(self, symbol, args, kwargs):
        """A Symbol called while this state traces (compiler.core.symbols.Symbol.__call__)."""
        # The compiler's own torch calls (meta tensors, captures) must not re-enter the tracing mode. (As deep
        # in frames as record_call: _record_call finds the user's line 4 frames up.)
        with torch._C.DisableTorchFunction():
            return _record_call(symbol, args, kwargs)

    def sync_grad_mode(self, loc=None) -> None:
        g = torch.is_grad_enabled()
        if g != self.grad_enabled:
            self.scopes[-1].append(BoundSymbol(SET_GRAD_ENABLED, (g,), {}, None, location=loc))
            self.grad_enabled = g

    @property
    def depth(self) -> int:
        return len(self.scopes) - 1

    def emit(self, event: ev.Event) -> None:
        self.events.append(event)
        for obs in self.observers:
            try:
                obs(event)
            except Exception as e:
                e.thunder_from_observer = True  # not the user's program: nothing of the call runs for real
                raise

    def capture(self, t: torch.Tensor) -> TensorProxy:
        for real, proxy in self.captured:
            if real is t:
                return proxy
        with torch._C.DisableTorchFunction():  # (called from user code too: its metadata must not be traced)
            meta = meta_like(t)
        proxy = TensorProxy(self.trace.new_name("c"), meta, t.device, origin="captured")
        self.captured.append((t, proxy))
        self.emit(ev.Event(ev.CAPTURED_TENSOR, f"tensor {proxy.name} {tuple(t.shape)} is used but is not an "
                           "argument of the jitted function (global, closure or attribute); it is held by reference",
                           self.current_location, details={"proxy": proxy.name}))
        return proxy

    def normalize(self, x):
        def f(v):
            if isinstance(v, (IntegerProxy, FloatProxy)) and not (self.symbolic and isinstance(v, SYM_TYPES)):
                return v.value
            if type(v) is not TensorProxy and isinstance(v, torch.Tensor):  # (proxies pass as Tensors)
                return self.capture(v)
            if type(v) is slice and any(isinstance(b, TensorProxy) for b in (v.start, v.stop, v.step)):
                # x[t:], x[(3, slice(t, None))]: the bound is a tensor's value, read as eager's __index__ does
                return slice(*(operator.index(b) if isinstance(b, TensorProxy) else b
                               for b in (v.start, v.stop, v.step)))
            if isinstance(v, UnknownSeed):
                raise_seed_use()
            if v is torch.default_generator:
                return v  # the process's own generator: the same object on every call
            if self.opaque:  # an object made by an op of the trace (a module's BackwardHook): its proxy
                p = self.opaque.get(id(v))
                if p is not None and p.value is v:
                    return p
            if isinstance(v, torch.Generator):
                p = self.opaque.get(id(v))
                if p is None:
                    raise UnsupportedInputError("a torch.Generator that is not an argument of the jitted function "
                                                "(global or closure) is used; pass it as an argument")
                return p
            return v

        return pytree.tree_map(f, x)


def _flat_proxies(x) -> list:
    return [p for p in pytree.tree_leaves(x) if isinstance(p, TensorProxy)]


def _made_on_the_default_device(state, args, kwargs, out) -> bool:
    """A factory (no tensor argument, no device named) made its result on a default device other than the CPU
    (`with torch.device("cuda"):` around the call). The trace names that device: parts of it run where that
    torch-function mode is not active (a segment before a data-dependent read runs inside tracing), and the
    prologue guards the default device anyway."""
    if state.default_device.type == "cpu" or "device" in kwargs or _flat_proxies((args, kwargs)):
        return False
    outs = _flat_proxies(out)
    return bool(outs) and all(o.device == normalize_device(state.default_device) for o in outs)


def _rethrow(symbol, loc, e: Exception, args=()):
    if isinstance(e, CompilerError):
        if e.location is None:
            e.location = loc
        if loc is not None and str(loc) not in str(e):
            new = type(e)(f"{symbol.name} at {loc.describe()}: {e}")
            new.location = loc
            raise new from e
        raise e
    where = f" at {loc.describe()}" if loc else ""
    msg = f"{symbol.name}{where}: {e}"
    dyn = [p.name for p in _flat_proxies(args) if p.dynamic]
    if dyn:
        msg += (f" (note: {', '.join(dyn)} has a value-dependent size, traced as a placeholder; the compiler "
                "cannot check this op's shapes before running it)")
    try:
        new = type(e)(msg)
    except Exception:
        new = CompilerError(msg)
    raise new from e


def _dropout_returns_input(symbol, args, kwargs) -> bool:
    """A dropout call that returns its input itself (decompositions.dropout_returns_input), from either spelling's
    arguments."""
    if symbol.name not in ("F.dropout", "torch.dropout") or not args or not isinstance(args[0], TensorProxy):
        return False
    names = ("p", "training") if symbol.name == "F.dropout" else ("p", "train")
    p = args[1] if len(args) > 1 else kwargs.get(names[0], 0.5)
    training = args[2] if len(args) > 2 else kwargs.get(names[1], True)
    return dropout_returns_input(p, training)


def _record_call(symbol, args, kwargs):
    state = current_state()
    if state is None:
        raise CompilerError(f"{symbol.name} called outside of tracing")
    if _dropout_returns_input(symbol, args, kwargs):
        return args[0]
    top = state.depth == 0
    loc = user_location(4) if top else state.current_location
    catching = False
    if top:
        state.current_location = loc
        # An op the program may catch an exception of (inside try/except): whether it raises must be known
        # as eager knows it, and the trace serves only the sizes it was made for
        catching = bool(INTERPRETERS) and INTERPRETERS[-1].inside_except_block()
        if catching and state.symbolic and not state.sizes_fixed:
            fix_sizes(state, f"{symbol.name} runs inside a try/except")
        if catching and _grad_through_shared_arguments(state):
            raise CompilerError(
                f"{symbol.name} at {loc.describe() if loc else '?'} runs inside a try/except on arguments that share "
                "memory and require grad: whether eager raises there (autograd's checks of views written in place) "
                "depends on that sharing, which the trace does not model")
        state.sync_grad_mode(loc)
        autocast.sync(state, loc)
        torch_flags.sync(state, loc)
    args, kwargs = state.normalize((args, kwargs))
    if catching or symbol.name.rsplit(".", 1)[-1] in _SIZED_OUTPUT_COUNT or \
            symbol.tags & (Tag.MAY_RETURN_VIEW | Tag.RETURNS_VIEW):  # how many results (x[m].split(2)), or whether
        _read_placeholder_sizes(state, (args, kwargs))  # a view is possible, depends on the sizes and strides
                                                       # a value-dependent tensor really has: read them first
    margs, mkwargs = args, kwargs
    if state.symbolic:  # symbolic numbers: kept where the op's metadata cannot depend on them, else specialized
        args, kwargs = for_op(symbol, args, kwargs)
        margs, mkwargs = concrete((args, kwargs))
    writes = symbol.tags & Tag.INPLACE
    layouts = _layouts(args, kwargs) if writes else None
    try:
        out = symbol.meta(symbol, margs, mkwargs)
    except Exception as e:  # eager would fail here too (shape/dtype/leaf errors): say where
        if not _read_placeholder_sizes(state, (args, kwargs)):
            if state.symbolic and not state.sizes_fixed:  # whether it raises depends on the sizes: the code
                fix_sizes(state, f"{symbol.name} raised for these sizes")  # may catch it, so they are guarded
            _rethrow(symbol, loc, eager_exception(symbol, margs, mkwargs, e), (args, kwargs))
        try:  # (the sizes of value-dependent inputs are known now: `x[m] + y[m]`)
            out = symbol.meta(symbol, margs, mkwargs)
        except Exception as e2:
            _rethrow(symbol, loc, eager_exception(symbol, margs, mkwargs, e2), (args, kwargs))
    if catching or (symbol.tags & Tag.INPLACE and (_overlapping_target(args, kwargs) or
                                                   _result_may_not_cast_back(margs, mkwargs))):
        error = real_kernel_error(symbol, margs, mkwargs)  # (the meta kernel may accept what eager refuses)
        if isinstance(error, Exception):
            _rethrow(symbol, loc, error, (args, kwargs))
    if _made_on_the_default_device(state, args, kwargs, out):
        kwargs = {**kwargs, "device": state.default_device}
    bsym = BoundSymbol(symbol, tuple(args), dict(kwargs), out, location=loc)
    changed = [p for p, before, after in zip(_flat_proxies((args, kwargs)), layouts or (), _layouts(args, kwargs))
               if after != before] if writes else []
    if changed:
        # the op resized or restrided a tensor (out= of another shape, resize_, t_): the meta tensors hold the
        # new layout from here on, so the functional trace must know the call changed it
        bsym.changes_metadata = True
        dynamic = any(p.dynamic for p in _flat_proxies((args, kwargs)))  # (x.set_(y[mask]): a value-dependent size)
        for p in changed:
            p.dynamic = p.dynamic or dynamic
            if state.symbolic and not state.sizes_fixed:  # sizes no rule follows: reading them decides them
                p.sym_shape = UNKNOWN  # (t_ and resize_ get their rule below)
    input_names = {p.name for p in pytree.tree_leaves((args, kwargs)) if isinstance(p, TensorProxy)}
    for o in bsym.tensor_outputs():
        if o.producer is None and o.origin is None and o.name not in input_names:
            o.producer = bsym
    if symbol.decomposition is not None and state.decompose and \
            not any(p.dynamic for p in pytree.tree_leaves((args, kwargs)) if isinstance(p, TensorProxy)):
        # (decompositions read sizes; a value-dependent size has none to read)
        _decompose(state, bsym, margs, mkwargs)
    if state.symbolic and not state.sizes_fixed and not writes and _returns_input_for_these_sizes(symbol, args, kwargs, out):
        fix_sizes(state, f"{symbol.name} returned its input for these sizes")
    if state.symbolic and not state.sizes_fixed and state.depth == 0:
        set_output_shapes(symbol, args, kwargs, out)
    state.scopes[-1].append(bsym)
    if top:
        _events_for(state, bsym)
    return out


# Ops that return their input exactly when the dtype and device already match: facts the guards fix.
_SAME_WHEN_TYPES_MATCH = frozenset("to type type_as float double half bfloat16 int long short bool byte char cpu cuda"
                                   .split())


def _returns_input_for_these_sizes(symbol, args, kwargs, out) -> bool:
    """An op returned one of its input tensors itself where that may hold only for these sizes (dropout or
    `contiguous` of an empty tensor, of a view, of dims of size 1): the trace would use the input where other
    sizes get a new tensor, so such a trace serves these sizes only."""
    inputs = {id(p): p for p in _flat_proxies((args, kwargs))}
    same = [inputs[id(o)] for o in pytree.tree_leaves(out) if isinstance(o, TensorProxy) and id(o) in inputs]
    if not same or symbol.name.rsplit(".", 1)[-1] in _SAME_WHEN_TYPES_MATCH:
        return False
    return any(p.sym_shape is not None and (p.meta._is_view() or any(d <= 1 for d in p.meta.shape))
               for p in inputs.values())


def _grad_through_shared_arguments(state) -> bool:
    """Tensor arguments of this call that share memory, while autograd records (an argument requires grad)."""
    tensors = [t for t in state.real_inputs.values() if isinstance(t, torch.Tensor) and t.numel()]
    if not torch.is_grad_enabled() or not any(t.requires_grad for t in tensors):
        return False
    # sharing the argument meta tensors model (views of one base: meta/functions.py shared_metas) is no reason
    proxies = {p.name: p for p in state.inputs if isinstance(p, TensorProxy)}
    storages: dict = {}
    for name, t in state.real_inputs.items():
        if isinstance(t, torch.Tensor) and t.numel():
            storages.setdefault(t.untyped_storage().data_ptr(), []).append(proxies.get(name))
    return any(len(group) > 1 and (any(p is None for p in group) or
                                   len({p.meta.untyped_storage()._cdata for p in group}) > 1)
               for group in storages.values())


def _layouts(args, kwargs) -> list:
    return [(p.meta.shape, p.meta.stride(), p.meta.storage_offset()) for p in _flat_proxies((args, kwargs))]


_SIZED_OUTPUT_COUNT = frozenset("split chunk unbind split_with_sizes tensor_split hsplit vsplit dsplit unsafe_split "
                                "unsafe_chunk __iter__".split())


def _overlapping_target(args, kwargs) -> bool:
    """The tensor an in-place op writes has elements sharing memory (an expanded tensor): eager refuses most
    writes there, meta kernels do not check."""
    target = kwargs.get("out", args[0] if args else None)
    return isinstance(target, TensorProxy) and not target.dynamic and \
        torch._debug_has_internal_overlap(target.meta) == 1


def _result_may_not_cast_back(args, kwargs) -> bool:
    """An in-place op whose operands promote to a type the written tensor cannot hold (int64 `x.mul_(1.5)`): eager
    refuses the cast back; meta kernels do not check, and the functional form would cast silently."""
    target = kwargs.get("out", args[0] if args else None)
    if not isinstance(target, TensorProxy):
        return False
    for other in (*args[1:], *kwargs.values()):
        if isinstance(other, TensorProxy):
            other = other.meta
        elif type(other) not in (int, float, complex):
            continue
        try:
            promoted = torch.result_type(target.meta, other)
        except (RuntimeError, TypeError):
            continue
        if not torch.can_cast(promoted, target.dtype):
            return True
    return False


def _read_placeholder_sizes(state, args) -> bool:
    """An op's meta failed on inputs whose size depends on values (traced with a placeholder size): where the
    trace can be split, read their real sizes, as Python reading them would (compiler/frontend/segments.py).
    Whether any was read (then the meta is worth trying again)."""
    dynamic = [p for p in pytree.tree_leaves(args) if isinstance(p, TensorProxy) and p.dynamic]
    if not dynamic or state.segmenter is None or state.depth != 0:
        return False
    for p in dynamic:
        p.shape  # noqa: B018 - a read of its size: the segment before it runs, the size is real from here on
    return not any(p.dynamic for p in dynamic)


def _decompose(state: TracingState, bsym: BoundSymbol, args, kwargs) -> None:
    state.scopes.append(bsym.subsymbols)
    try:  # (with symbolic numbers: their values; the torch executor runs the op itself with the symbols)
        dout = bsym.symbol.decomposition(*args, **kwargs)
        problem = None
        douts, outs = pytree.tree_leaves(dout), bsym.flat_outputs()
        if len(douts) != len(outs):
            problem = "output count differs"
        else:
            for d, o in zip(douts, outs):
                if isinstance(o, TensorProxy) and (not isinstance(d, TensorProxy) or d.shape != o.shape
                                                   or d.dtype != o.dtype):
                    problem = f"decomposition gives {getattr(d, 'shape', d)}/{getattr(d, 'dtype', '')}, op gives {o.shape}/{o.dtype}"
    except Skip:  # deliberately not decomposed (random ops, fused attention, uncovered arguments)
        problem = "skip"
    except (CompilerError, RuntimeError, TypeError, ValueError, IndexError) as e:
        problem = f"{type(e).__name__}: {e}"
    finally:
        state.scopes.pop()
    if problem == "skip":
        bsym.subsymbols = []
        return
    if problem is not None:
        bsym.subsymbols = []
        bsym.unchecked = True  # (F.softmax of a 1-d tensor with dim=1: the meta passes, eager raises)
        state.emit(ev.Event(ev.DECOMPOSITION_FAILED, f"{bsym.symbol.name} was not decomposed into prims ({problem}); "
                            "it still runs as the torch op", bsym.location, bsym.symbol.name))
        return
    # The decomposition's final proxies stand for the op's outputs: rename them.
    rename = {d.name: o for d, o in zip(douts, outs) if isinstance(d, TensorProxy)}

    def sub(x):
        return rename.get(x.name, x) if isinstance(x, TensorProxy) else x

    for s in bsym.subsymbols:
        s.args, s.kwargs = pytree.tree_map(sub, (s.args, s.kwargs))
        s.output = pytree.tree_map(sub, s.output)


def _events_for(state: TracingState, bsym: BoundSymbol) -> None:
    tags = bsym.symbol.tags
    if tags & (Tag.MAY_RETURN_VIEW):
        for o in bsym.tensor_outputs():
            state.may_view_origin[o.name] = bsym
    if not tags & Tag.INPLACE:
        return
    target = bsym.kwargs.get("out", bsym.args[0] if bsym.args else None)
    if not isinstance(target, TensorProxy):
        return
    origin = state.may_view_origin.get(target.name)
    reaches = _input_reached(state, target)
    if origin is not None:
        src = origin.args[0] if origin.args and isinstance(origin.args[0], TensorProxy) else None
        returned_view = src is not None and (target is src or target.meta._base is not None)
        loc = origin.location
        state.emit(ev.Event(
            ev.INPLACE_ON_MAY_VIEW,
            f"in-place {bsym.symbol.name} on the result of {origin.symbol.name}"
            f"{f' (line {loc.lineno})' if loc else ''}, which may return a view or a copy; here it returned "
            f"{'a view (or the tensor itself)' if returned_view else 'a copy'} because of the input's layout",
            bsym.location, bsym.symbol.name,
            {"view_op": origin.symbol.name, "view_location": loc, "returned_view": returned_view,
             "reaches_input": reaches is not None, "input": reaches.origin if reaches is not None else None,
             "input_name": state.name_input(reaches.origin) if reaches is not None and reaches.origin else None}))
    if reaches is not None:
        state.emit(ev.Event(
            ev.INPLACE_ON_INPUT,
            f"in-place {bsym.symbol.name} writes into input {reaches.origin}"
            f"{' through a view' if reaches is not target else ''}; the caller sees the change",
            bsym.location, bsym.symbol.name,
            {"input": reaches.origin, "through_view": reaches is not target}))


def _input_reached(state: TracingState, target: TensorProxy):
    """The input proxy whose memory `target` is (or views), judged from the meta tensors' view bases."""
    base = target.meta._base if target.meta._base is not None else target.meta
    for p in state.inputs:
        if isinstance(p, TensorProxy) and (p.meta is base or p.meta is target.meta):
            return p
    return None
