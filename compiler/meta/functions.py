"""Meta functions: output metadata of a torch op, computed by running the real op on meta tensors.

Meta tensors carry shape, dtype, strides, requires_grad and view relationships but no data, so running
the op on them reproduces eager PyTorch's type promotion, broadcasting, shape errors, autograd leaf rules
and - the fact TL101 is about - whether `reshape`/`flatten`/`contiguous`/`to` returned a view, a copy or
the input itself. Devices are tracked beside the meta tensor (it cannot be both "meta" and "cuda").
"""
from __future__ import annotations

import warnings

import torch
from ..core import tree as pytree
from ..core.context import current_state
from ..core.source import user_location
from . import cache as meta_cache
from . import lazy_dynamo, lazy_sympy
from .fake import run_on_fake

from ..core.errors import DataDependentError, DeviceMismatchError, UnsupportedOpError
from ..core.proxies import OpaqueProxy, TensorProxy

# Ops where eager PyTorch lets tensors on different devices meet (the result lives on the first's).
CROSS_DEVICE_OK = {"Tensor.copy_", "Tensor.__setitem__", "Tensor.__getitem__", "Tensor.index_put_",
                   "torch.index_put", "Tensor.index_put"}


class _NonLeaf(torch.autograd.Function):
    """A fresh meta tensor of any strides as the output of an autograd node: a non-leaf that is not a view.
    (A clone keeps strides only of dense tensors: an expanded or sliced input would become contiguous, and
    `contiguous()`/`reshape` on it would be traced as returning it instead of a copy.)"""

    @staticmethod
    def forward(ctx, anchor, shape, stride):
        return torch.empty_strided(shape, stride, dtype=anchor.dtype, device=anchor.device)

    @staticmethod
    def backward(ctx, grad):  # pragma: no cover - meta tensors are never differentiated
        return None, None, None


def non_leaf(shape, stride, dtype, device) -> torch.Tensor:
    """A fresh tensor of any strides (overlapping ones too) that requires grad and is not a leaf (nor a view)."""
    anchor = torch.empty((), dtype=dtype, device=device, requires_grad=True)
    with torch.enable_grad():
        return _NonLeaf.apply(anchor, tuple(shape), tuple(stride))


def meta_like(t: torch.Tensor) -> torch.Tensor:
    """A meta tensor with `t`'s layout and autograd role (leaf or not) - never itself a view."""
    shape, stride = tuple(t.shape), tuple(t.stride())
    if t.requires_grad and not t.is_leaf:  # non-leaf: in-place ops allowed, like eager
        return non_leaf(shape, stride, t.dtype, "meta")
    m = torch.empty_strided(shape, stride, dtype=t.dtype, device="meta")
    return m.requires_grad_(True) if t.requires_grad else m


def shared_metas(tensors) -> dict:
    """Meta tensors for argument tensors that view one base, viewing one meta base as they do: id(tensor) -> meta.
    Autograd's checks of in-place writes (a view of a leaf that requires grad, a view made by an op returning
    several views or under no_grad, a write through one view giving the base a history the others then share)
    depend on that sharing, so the meta tensors must have it to raise where eager raises. The base is the real
    one's (`_base`, or the argument itself), laid out and differentiable as it is; each view is an `as_strided` of
    it at the argument's offset, with the real view's creation kind. Arguments sharing memory some other way
    (detach, set_) are left out (their meta tensors share nothing: callers refuse what depends on it)."""
    groups: dict = {}
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.layout is torch.strided and t.numel():
            root = t._base if t._base is not None else t
            members = groups.setdefault(id(root), (root, {}))[1]
            members[id(t)] = t
    out = {}
    for root, members in groups.values():
        if len(members) > 1:  # (a lone argument, a view or not, gets its own meta tensor)
            out.update(_views_of_one_base(root, list(members.values())) or {})
    return out


def _views_of_one_base(root: torch.Tensor, members: list) -> dict | None:
    try:
        made = {}
        with torch._C.DisableTorchFunction(), torch.enable_grad():  # (no traced op)
            base = meta_like(root)
            for t in members:
                if t is root:
                    made[id(t)] = base
                    continue
                m = base.as_strided(tuple(t.shape), tuple(t.stride()), t.storage_offset() - root.storage_offset())
                if t._base is not None and m._base is not None:
                    torch._C._autograd._set_creation_meta(m, torch._C._autograd._get_creation_meta(t))
                if m.requires_grad != t.requires_grad or m.is_leaf != t.is_leaf:
                    return None  # (an autograd role the view of this base does not have)
                made[id(t)] = m
        return made
    except (RuntimeError, AttributeError):  # (a view reaching past the base's own memory; no creation meta API)
        return None


def default_device() -> torch.device:
    # Read when tracing starts: under DisableTorchFunction torch.get_default_device() answers "cpu".
    state = current_state()
    return state.default_device if state is not None else torch.get_default_device()


def normalize_device(dev) -> torch.device:
    """"cuda" and "cuda:N" name one device when N is the current one: give every device its index, as eager
    tensors report it (x.to("cuda").device == cuda:0)."""
    dev = torch.device(dev) if not isinstance(dev, int) else torch.device("cuda", dev)
    if dev.type == "cuda" and dev.index is None:
        index = torch.cuda.current_device() if torch.cuda.is_available() else 0
        return torch.device("cuda", index)
    return dev


def infer_device(symbol, args, kwargs) -> torch.device:
    dev = kwargs.get("device")
    if dev is not None:
        return normalize_device(dev)
    tensors = [p for p in pytree.tree_leaves((args, kwargs)) if isinstance(p, TensorProxy)]
    if not tensors:
        return default_device()
    first = tensors[0].device
    if symbol.name in CROSS_DEVICE_OK:
        return first
    others = {p.device for p in tensors if p.device != first and not (p.device.type == "cpu" and p.ndim == 0)}
    if others and not (first.type == "cpu" and tensors[0].ndim == 0 and len(others) == 1):
        loc = user_location(4)
        where = f" at {loc.describe()}" if loc else ""
        devs = ", ".join(f"{p.name} on {p.device}" for p in tensors)
        raise DeviceMismatchError(f"{symbol.name}{where}: expected all tensors on one device, got {devs}")
    if first.type == "cpu" and tensors[0].ndim == 0 and others:
        return next(iter(others))
    return first


# The size that stands for a value-dependent dimension (x[mask]) in meta tensors. Unusual on purpose, so
# a trace that wrongly depended on it would show; Python never sees it (TensorProxy.shape raises).
DYNAMIC_SIZE = 1031


def new_proxy(m: torch.Tensor, device: torch.device, dynamic: bool = False) -> TensorProxy:
    return TensorProxy(current_state().trace.new_name("t"), m, device, dynamic=dynamic)


def run_on_meta(fn, args, kwargs, device):
    """Run `fn` with proxies replaced by their meta tensors; wrap meta results back into proxies."""
    if not lazy_dynamo.installed:
        lazy_dynamo.install()  # torch's Python meta kernels without a 1 s import of torch._dynamo
        lazy_sympy.install()  # ... and without their imports of sympy and symbolic_shapes
    if torch._C._is_any_autocast_enabled():  # meta tensors ignore autocast: fake tensors follow its rules
        return run_on_fake(fn, args, kwargs, device, new_proxy)
    by_id = {}

    dynamic = False

    def to_meta(x):
        nonlocal dynamic
        if isinstance(x, TensorProxy):
            by_id[id(x.meta)] = x
            dynamic = dynamic or x.dynamic
            return x.meta
        if isinstance(x, torch.Generator) or isinstance(x, OpaqueProxy) and isinstance(x.value, torch.Generator):
            return None  # meta ops draw no random numbers
        if isinstance(x, OpaqueProxy):  # (a numpy array argument: its metadata is guarded)
            return x.value
        return x

    margs, mkwargs = pytree.tree_map(to_meta, (args, kwargs))
    if "device" in mkwargs and mkwargs["device"] is not None:
        mkwargs["device"] = "meta"
    elif _takes_device(fn) and not any(isinstance(a, TensorProxy) for a in pytree.tree_leaves(args)):
        mkwargs["device"] = "meta"  # creation op on the default device
    if "generator" in mkwargs:
        mkwargs.pop("generator")
    mkwargs.pop("pin_memory", None)
    try:
        with torch._C.DisableTorchFunction():
            mout = meta_cache.call(fn, margs, mkwargs)
    except NotImplementedError as e:
        if "data-independent" in str(e) or "data-dependent" in str(e) or "nonzero" in str(e):
            raise DataDependentError(f"output shape depends on tensor values ({str(e).splitlines()[0][:120]})") from e
        if "Meta" in str(e):  # torch has no meta kernel for it: its output metadata cannot be known here
            raise UnsupportedOpError(f"{getattr(fn, '__name__', fn)} has no meta implementation in torch "
                                     f"{torch.__version__}, so the compiler cannot trace it") from e
        raise
    except RuntimeError as e:
        # The meta kernel read a tensor's value (narrow with a tensor start, repeat_interleave with tensor
        # repeats, tensor_split with tensor indices): the result's metadata depends on data.
        if any(m in str(e) for m in ("cannot be called on meta tensors", "Cannot access data pointer",
                                     "meta tensor without output_size", "but it's on meta")):
            raise DataDependentError(f"{getattr(fn, '__name__', fn)} needs the values of a tensor argument at trace "
                                     "time (its result's shape depends on them); pass Python numbers instead") from e
        if "setStorage:" in str(e) and "out of bounds for storage" in str(e):
            # Traced inputs' meta tensors own only the memory their view spans, not the whole storage
            raise UnsupportedOpError(f"{getattr(fn, '__name__', fn)} reaches memory outside the input's view "
                                     "(as_strided over a larger storage), which the compiler's metadata does "
                                     "not cover") from e
        raise

    def wrap(m):
        if m is not None and not isinstance(m, (torch.Tensor, torch.Size)) and not isinstance(m, (tuple, list)):
            # A Python value computed on meta tensors (x.type() -> "torch.meta.FloatTensor") would be wrong.
            raise UnsupportedOpError(f"{getattr(fn, '__name__', fn)} returns a Python value at trace time, which "
                                     "the compiler cannot compute from metadata")
        if isinstance(m, torch.Tensor):
            p = by_id.get(id(m))  # an in-place op returns its input: the same proxy
            # Anything computed from a value-dependent size may carry it, except 0-d results (x[mask].sum()).
            return p if p is not None else new_proxy(m, device, dynamic and m.ndim > 0)
        return m

    return pytree.tree_map(wrap, mout)


# Creation functions that take `device=` (and so must be told "meta" when called without one).
CREATION_FUNCTIONS = set()


def _takes_device(fn) -> bool:
    return fn in CREATION_FUNCTIONS


def generic_meta(symbol, args, kwargs):
    return run_on_meta(symbol.fn, args, kwargs, infer_device(symbol, args, kwargs))


def _parse_to(args, kwargs, self_proxy):
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    for a in args:
        if isinstance(a, TensorProxy):
            device, dtype = a.device, a.dtype
        elif isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, (torch.device, str, int)) and not isinstance(a, bool):
            device = a
    return (torch.device(device) if device is not None else self_proxy.device), dtype


def type_meta(symbol, args, kwargs):
    """Tensor.type(dst): dst a dtype, a tensor type (torch.HalfTensor, torch.cuda.FloatTensor) or its name;
    like `to` (the same tensor when nothing changes). Without dst: the type's name, a Python value."""
    self = args[0]
    dst = args[1] if len(args) > 1 else kwargs.get("dtype")
    if dst is None:
        return generic_meta(symbol, args, kwargs)
    if isinstance(dst, str):
        owner = torch.cuda if dst.startswith("torch.cuda.") else torch
        dst = getattr(owner, dst.rsplit(".", 1)[-1], None)
        if dst is None:
            return generic_meta(symbol, args, kwargs)  # (eager's error)
    if isinstance(dst, torch.dtype):
        device, dtype = self.device, dst
    else:
        device, dtype = torch.device("cuda" if dst.is_cuda else "cpu"), dst.dtype
    device = normalize_device(device)
    with torch._C.DisableTorchFunction():
        m = self.meta.to(dtype=dtype, copy=device != self.device)
    return self if m is self.meta else new_proxy(m, device, self.dynamic and m.ndim > 0)  # (a placeholder size stays one)


def to_meta(symbol, args, kwargs):
    """Tensor.to / cuda / cpu: the device changes beside the meta tensor; a device change always copies."""
    self = args[0]
    name = symbol.name
    if name == "Tensor.cuda":
        dev = args[1] if len(args) > 1 else kwargs.get("device")
        device, dtype = normalize_device("cuda" if dev is None else dev), None
    elif name == "Tensor.cpu":
        device, dtype = torch.device("cpu"), None
    else:
        device, dtype = _parse_to(args[1:], kwargs, self)
    device = normalize_device(device)
    copy = bool(kwargs.get("copy", False)) or device != self.device
    mf = kwargs.get("memory_format", torch.preserve_format)
    with torch._C.DisableTorchFunction():
        m = self.meta.to(dtype=dtype or self.dtype, copy=copy, memory_format=mf)
    return self if m is self.meta else new_proxy(m, device, self.dynamic and m.ndim > 0)  # (a placeholder size stays one)


def _is_int_scalar_index(x) -> bool:
    return isinstance(x, TensorProxy) and x.ndim == 0 and not x.dtype.is_floating_point and \
        not x.dtype.is_complex and x.dtype is not torch.bool


def _is_bool_mask(x) -> bool:
    return isinstance(x, TensorProxy) and x.dtype is torch.bool and x.ndim > 0


def _is_bool_scalar(x) -> bool:
    return isinstance(x, TensorProxy) and x.dtype is torch.bool and x.ndim == 0


def _masked_index_meta(symbol, self, parts, rest, kwargs):
    """x[..., mask], x[mask, 0], x[mask] = v: a bool mask of k dims indexes like k integer index tensors whose
    (common) length is the number of True values: run the meta with such tensors of the placeholder length;
    a result is value-dependent in size (TensorProxy.dynamic)."""
    if symbol.name == "Tensor.__setitem__":  # (a 0-d mask selects all or nothing: the shapes are those of x[None])
        parts = tuple(None if _is_bool_scalar(p) else p for p in parts)
    if any(_is_bool_scalar(p) for p in parts):
        raise DataDependentError("indexing with a 0-d bool tensor among other indices: the result's shape "
                                 "depends on its value")
    device = infer_device(symbol, (self, parts, *rest), kwargs)
    with torch._C.DisableTorchFunction():
        swapped = []
        for p in parts:
            if _is_bool_mask(p):
                swapped += [torch.zeros(DYNAMIC_SIZE, dtype=torch.int64, device="meta")] * p.ndim
            else:
                swapped.append(p.meta if isinstance(p, TensorProxy) else p)
        margs = [self.meta, tuple(swapped)] + [r.meta if isinstance(r, TensorProxy) else r for r in rest]
        try:
            out = symbol.fn(*margs)
        except (RuntimeError, IndexError) as e:
            if symbol.name == "Tensor.__setitem__":  # the value's size must match the count of True values
                raise DataDependentError(f"{symbol.name} with a bool mask: whether the value fits depends on how "
                                         f"many elements the mask selects ({str(e).splitlines()[0][:100]})") from e
            raise
    if symbol.name == "Tensor.__setitem__":
        return None
    return new_proxy(out, device, dynamic=True)


def _dynamic_result(shape, dtype, device, requires_grad: bool = False) -> TensorProxy:
    with torch._C.DisableTorchFunction():
        m = torch.empty(shape, dtype=dtype, device="meta")
        if requires_grad:  # (x[mask] of an x that requires grad: eager's result does too, and is no leaf)
            m = non_leaf(m.shape, m.stride(), dtype, "meta")
    return new_proxy(m, device, dynamic=True)


def masked_select_meta(symbol, args, kwargs):
    """x[mask] and masked_select: how many elements is decided by the values, the rest is known."""
    self, mask = args[0], args[1]
    device = infer_device(symbol, args, kwargs)
    differentiable = self.requires_grad and torch.is_grad_enabled()
    if symbol.name.endswith("__getitem__"):
        k = mask.ndim
        if k > self.ndim:
            raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
        if not self.dynamic and not mask.dynamic and tuple(mask.meta.shape) != tuple(self.meta.shape[:k]):
            raise IndexError(f"The shape of the mask {tuple(mask.meta.shape)} does not match the shape of the "
                             f"indexed tensor {tuple(self.meta.shape)}")
        return _dynamic_result((DYNAMIC_SIZE, *self.meta.shape[k:]), self.dtype, device, differentiable)
    torch.broadcast_shapes(self.meta.shape, mask.meta.shape)  # eager's shape error, if any
    return _dynamic_result((DYNAMIC_SIZE,), self.dtype, device, differentiable)


def where_meta(symbol, args, kwargs):
    """torch.where(condition) alone is nonzero(condition, as_tuple=True): value-dependent lengths."""
    if len(args) == 1 and not kwargs:
        return nonzero_meta(symbol, args, {"as_tuple": True})
    return generic_meta(symbol, args, kwargs)


def nonzero_meta(symbol, args, kwargs):
    self = args[0]
    device = infer_device(symbol, args, kwargs)
    if kwargs.get("as_tuple"):
        return tuple(_dynamic_result((DYNAMIC_SIZE,), torch.int64, device) for _ in range(max(self.ndim, 1)))
    return _dynamic_result((DYNAMIC_SIZE, self.ndim), torch.int64, device)


def indexing_meta(symbol, args, kwargs):
    """x[i] / x[i] = v. A 0-d integer tensor index acts as a plain int in eager (x[torch.tensor(1)] is x[1]),
    which the meta tensor cannot read: any in-range int gives the same metadata, so use 0 - unless other
    tensor indices make it advanced indexing, where it stays a tensor."""
    self, index, *rest = args
    if symbol.name == "Tensor.__getitem__" and (_is_bool_mask(index) or _is_bool_scalar(index)):
        return masked_select_meta(symbol, args, kwargs)
    parts = index if type(index) is tuple else (index,)
    if any(_is_bool_mask(p) or _is_bool_scalar(p) for p in parts):
        return _masked_index_meta(symbol, self, parts, rest, kwargs)
    tensors = [p for p in parts if isinstance(p, TensorProxy)]
    if tensors and all(_is_int_scalar_index(p) for p in tensors):
        sub = tuple(0 if _is_int_scalar_index(p) else p for p in parts)
        index_for_meta = sub if type(index) is tuple else sub[0]
        device = infer_device(symbol, args, kwargs)
        out = run_on_meta(symbol.fn, (self, index_for_meta, *rest), kwargs, device)
        return out
    return generic_meta(symbol, args, kwargs)


_EAGER_CHECK_LIMIT = 1 << 16  # elements: the largest tensors rebuilt on the CPU to ask the real kernel


def eager_exception(symbol, args, kwargs, meta_error: Exception) -> Exception:
    """An op's meta raised: the exception eager raises for the same metadata. Meta kernels check what the
    real ones check, but not always with the same exception type (argmax of an empty tensor: IndexError in
    the CPU kernel, RuntimeError in the meta one): `real_kernel_error`'s, if it gives one, else the meta's.
    The compiler's own refusals (a value-dependent argument) stay refusals; where the real kernel accepts what
    the meta kernel refuses (randn_like of an empty bool tensor) the call is refused, not failed."""
    from ..core.errors import CompilerError

    if isinstance(meta_error, CompilerError):
        return meta_error
    if any(m in str(meta_error) for m in _AUTOGRAD_VIEW_ERRORS) and _argument_views_modelled():
        # autograd's own check on arguments that view one base, whose meta tensors view one base as they do
        # (shared_metas: the base's autograd role, each view's creation kind): its answer is eager's
        return meta_error
    if any(m in str(meta_error) for m in _VIEW_HISTORY_ERRORS) and _an_argument_is_a_view():
        # autograd's checks read the meta tensors' view history, which starts at the arguments; eager's starts at
        # the tensors an argument views, which the function does not get (a view made before its argument's
        # requires_grad_() is no view of a tensor requiring grad in eager): the meta's answer may not be eager's
        return UnsupportedOpError(f"{getattr(symbol, 'name', symbol)}: autograd refuses it on the traced view history "
                                  f"({str(meta_error).splitlines()[0][:100]}), but an argument is itself a view of a "
                                  "tensor the function does not get, whose history the trace does not model")
    error = real_kernel_error(symbol, args, kwargs, random_too=True)
    if error is _ACCEPTED and _MULTI_OUTPUT_VIEW_WRITE in str(meta_error):
        # autograd's own check, run on the meta tensors' view history (made by the traced ops, in the traced grad
        # mode); the CPU rebuild has no such history, so its kernel accepting the write says nothing
        return meta_error
    if error is _ACCEPTED:
        return UnsupportedOpError(f"the meta kernel of {getattr(symbol, 'name', symbol)} refuses these inputs "
                                  f"({str(meta_error).splitlines()[0][:120]}) where eager's kernel accepts them, so the "
                                  "compiler cannot trace the call")
    return error or meta_error


# autograd's refusal of an in-place write into one output of split/unbind/chunk... (eager raises it as RuntimeError)
_MULTI_OUTPUT_VIEW_WRITE = "This view is the output of a function that returns multiple views"

# autograd's refusals that depend on which tensors are views of which, and in which grad mode they were made
# (whether a view made before its base's requires_grad_() requires grad is one of them)
_VIEW_HISTORY_ERRORS = ("you can only change requires_grad flags of leaf variables",
                        "A view was created in no_grad mode and its base or another view of its base has been modified",
                        "functions with out=... arguments don't support automatic differentiation")


# autograd's refusals of in-place writes that depend on the view history (of a leaf's view, of a multi-output or
# no_grad view, and of a view whose base was written since)
_AUTOGRAD_VIEW_ERRORS = _VIEW_HISTORY_ERRORS + (
    _MULTI_OUTPUT_VIEW_WRITE, "that requires grad is being used in an in-place operation",
    "is a view and its base or another view of its base has been modified inplace")


def _argument_views_modelled() -> bool:
    """Some argument meta tensors view one base (shared_metas), and every argument that is a view got such a meta."""
    state = current_state()
    reals = getattr(state, "real_inputs", None) or {}
    proxies = {p.name: p for p in getattr(state, "inputs", ()) if isinstance(p, TensorProxy)}
    metas = [(r, proxies.get(name)) for name, r in reals.items() if isinstance(r, torch.Tensor)]
    return any(p is not None and p.meta._is_view() for _, p in metas) and \
        all(p is not None and p.meta._is_view() for r, p in metas if r._is_view())


def _an_argument_is_a_view() -> bool:
    state = current_state()
    reals = getattr(state, "real_inputs", None) or {}
    return any(isinstance(r, torch.Tensor) and r._is_view() for r in reals.values())


_ACCEPTED = object()  # real_kernel_error's answer when the real kernel raised nothing on either fill


def real_kernel_error(symbol, args, kwargs, random_too: bool = False):
    """The exception the real kernel raises for these arguments' metadata, or None: the op runs on CPU tensors
    of the same sizes, strides and dtypes, filled with zeros and then with ones; an exception both raise (of
    one type) depends on the metadata, one only zeros raise is the values' (an integer division by zero,
    tensor_split into 0 sections) and is not the answer. Meta kernels are sometimes more lenient (an in-place
    op on a tensor whose elements overlap, float32 @ float64). Nothing for random or effectful ops, tensors on
    other devices, value-dependent sizes or large tensors (None: not known). random_too: random ops too, on a
    forked RNG state (the draws are not kept), and _ACCEPTED where neither fill raised."""
    first = _real_kernel_error(symbol, args, kwargs, 0, random_too)
    if first is None:
        return None
    second = _real_kernel_error(symbol, args, kwargs, 1, random_too)
    if first is _ACCEPTED or second is _ACCEPTED:
        return _ACCEPTED if first is second else None
    return first if second is not None and type(second) is type(first) else None


def _real_kernel_error(symbol, args, kwargs, fill: int, random_too: bool = False):
    from ..core.symbols import Tag

    if symbol.fn is None or symbol.tags & Tag.EFFECT or symbol.tags & Tag.RANDOM and not random_too:
        return None
    proxies = [p for p in pytree.tree_leaves((args, kwargs)) if isinstance(p, TensorProxy)]
    if any(p.device.type != "cpu" or p.dynamic or p.meta.numel() > _EAGER_CHECK_LIMIT for p in proxies):
        return None

    made, storages = {}, {}  # one real tensor per proxy, one storage per meta storage: aliasing as in the trace
    arguments = _argument_tensors()
    if getattr(symbol, "name", "").endswith("copy_") and len(args) >= 2 and _same_data(args[0], args[1], arguments):
        return _ACCEPTED  # eager copies nothing onto the same data (the rebuild may give a non-leaf its own copy)

    def real(x):
        if not isinstance(x, TensorProxy):
            return None if isinstance(x, (torch.Generator, OpaqueProxy)) else x
        if id(x) in made:
            return made[id(x)]
        m = x.meta
        key, size, offset, argument = _place(m, arguments)
        storage = storages.get(key)
        if storage is None or storage.dtype != m.dtype:
            # (an empty storage stays empty: kernels check against its size, index_fill_ of an empty tensor raises
            # from there, fuzz seed 758853)
            storage = storages[key] = torch.full((size // max(m.element_size(), 1),), fill, dtype=m.dtype)
        t = storage.as_strided(tuple(m.shape), tuple(m.stride()), offset)
        if not m._is_view():
            t = t.detach()  # (same memory, but not an autograd view: `detach_()` refuses views)
        if m.requires_grad and not (argument is not None and argument._is_view() and m._is_view() and m.is_leaf):
            # (the exception: a view made before its argument's `requires_grad_()`. Its meta base is the argument,
            # eager's is the tensor the argument views, which requires no grad: eager's view requires none either)
            t = t.detach().requires_grad_(True)
            if not m.is_leaf:
                t = t.clone(memory_format=torch.preserve_format)
        made[id(x)] = t
        return t

    with torch._C.DisableTorchFunction(), warnings.catch_warnings(), torch.random.fork_rng(devices=[]):
        warnings.simplefilter("ignore")
        try:
            rargs, rkwargs = pytree.tree_map(real, (args, kwargs))
        except Exception:  # noqa: BLE001 - no rebuild of these layouts (a view resized past its argument's
            return None    # memory): not known, which is not the kernel's error
        try:
            symbol.fn(*rargs, **rkwargs)
        except Exception as e:  # noqa: BLE001 - the real kernel's own exception is what eager raises
            return e
    return _ACCEPTED


def _place(m: torch.Tensor, arguments) -> tuple:
    """Where the rebuild puts meta tensor `m`: (storage key, storage bytes, element offset, the argument whose
    memory it views or None). Keyed by the meta storage (a detached meta shares its source's, as eager's detach
    shares memory); a view of an argument goes into that argument's real memory, so arguments sharing memory
    share it here too."""
    key, size, offset = _storage_key(m), m.untyped_storage().nbytes(), m.storage_offset()
    argument, argument_meta = arguments.get(key, (None, None))
    if argument is not None and argument.dtype == m.dtype:
        key, size = ("storage", argument.untyped_storage().data_ptr()), argument.untyped_storage().nbytes()
        offset += argument.storage_offset() - argument_meta.storage_offset()
    return key, size, offset, argument


def _same_data(dst, src, arguments) -> bool:
    """`dst` and `src` are views of one argument's memory with the same layout (eager's copy_ returns at once)."""
    if not (isinstance(dst, TensorProxy) and isinstance(src, TensorProxy)) or dst.dtype != src.dtype:
        return False
    a, b = _place(dst.meta, arguments), _place(src.meta, arguments)
    return a[3] is not None and b[3] is not None and a[0] == b[0] and a[2] == b[2] and \
        (tuple(dst.meta.shape), tuple(dst.meta.stride())) == (tuple(src.meta.shape), tuple(src.meta.stride()))


def _storage_key(m: torch.Tensor):
    return m.untyped_storage()._cdata


def _argument_tensors() -> dict:
    """Meta storage -> (the real argument tensor it stands for, its meta), while tracing (arguments that share
    memory, `a1 = a0.view(-1)`, must share it in the real-kernel check: eager's copy_ of a tensor onto itself is a
    no-op even where its elements overlap)."""
    state = current_state()
    reals = getattr(state, "real_inputs", None) or {}
    out = {}
    for p in getattr(state, "inputs", ()):
        r = reals.get(getattr(p, "name", None))
        if isinstance(p, TensorProxy) and isinstance(r, torch.Tensor) and r.device.type == "cpu" and \
                tuple(r.shape) == tuple(p.meta.shape) and tuple(r.stride()) == tuple(p.meta.stride()):
            out[_storage_key(p.meta)] = (r, p.meta)
    return out


def from_numpy_meta(symbol, args, kwargs):
    """torch.from_numpy(a): a CPU tensor sharing the array's memory: its shape, strides and dtype."""
    a = args[0].value if isinstance(args[0], OpaqueProxy) else args[0]
    with torch._C.DisableTorchFunction():
        real = torch.from_numpy(a)  # (a view of the array: no copy)
        m = torch.empty_strided(tuple(real.shape), tuple(real.stride()), dtype=real.dtype, device="meta")
    return new_proxy(m, torch.device("cpu"))


def tensor_from_data_meta(symbol, args, kwargs):
    """torch.tensor / as_tensor of Python data holding traced 0-d tensors (torch.tensor([a, b])): eager copies
    their values, so the result's metadata follows from the nesting and the elements' dtypes."""
    data = args[0] if args else kwargs.get("data")
    proxies = [p for p in pytree.tree_leaves(data) if isinstance(p, TensorProxy)]
    if not proxies or isinstance(data, TensorProxy):
        return generic_meta(symbol, args, kwargs)
    if any(p.dynamic or p.meta.numel() != 1 for p in proxies):  # (eager reads any one-element tensor: [t, t])
        raise ValueError("only one element tensors can be converted to Python scalars")

    def shape_of(x):
        if isinstance(x, (list, tuple)):
            return (len(x), *(shape_of(x[0]) if x else ()))
        return ()

    leaves = pytree.tree_leaves(data)
    dtype = kwargs.get("dtype")
    if dtype is None:
        kinds = [leaf.dtype if isinstance(leaf, TensorProxy) else type(leaf) for leaf in leaves]
        if any(k is complex or (isinstance(k, torch.dtype) and k.is_complex) for k in kinds):
            dtype = torch.complex64 if torch.get_default_dtype() is torch.float32 else torch.complex128
        elif any(k is float or (isinstance(k, torch.dtype) and k.is_floating_point) for k in kinds):
            dtype = torch.get_default_dtype()
        elif all(k is bool or k is torch.bool for k in kinds):
            dtype = torch.bool
        else:
            dtype = torch.int64
    device = infer_device(symbol, (), {"device": kwargs.get("device")}) if kwargs.get("device") is not None \
        else default_device()
    with torch._C.DisableTorchFunction():
        m = torch.empty(shape_of(data), dtype=dtype, device="meta")
    return new_proxy(m, device)


def unique_meta(symbol, args, kwargs):
    """torch._unique2 / unique_dim / unique_consecutive (torch.unique and Tensor.unique call them): how many
    distinct values there are depends on the data; the inverse indices have the input's shape."""
    names = {"_unique2": ("self", "sorted", "return_inverse", "return_counts"),
             "unique_dim": ("self", "dim", "sorted", "return_inverse", "return_counts"),
             "unique_consecutive": ("self", "return_inverse", "return_counts", "dim")}[symbol.name.split(".")[-1]]
    bound = {"sorted": True, "return_inverse": False, "return_counts": False, "dim": None}
    bound.update(zip(names, args))
    bound.update(kwargs)
    self, dim = bound["self"], bound["dim"]
    device = infer_device(symbol, args, kwargs)
    if dim is None:
        out_shape, inv_shape = (DYNAMIC_SIZE,), tuple(self.meta.shape)
    else:
        dim = dim % max(self.ndim, 1)
        out_shape = tuple(DYNAMIC_SIZE if i == dim else n for i, n in enumerate(self.meta.shape))
        inv_shape = (self.meta.shape[dim],)
    output = _dynamic_result(out_shape, self.dtype, device)
    with torch._C.DisableTorchFunction():
        inverse = new_proxy(torch.empty(inv_shape if bound["return_inverse"] else (0,), dtype=torch.int64,
                                         device="meta"), device)
    counts = _dynamic_result((DYNAMIC_SIZE,), torch.int64, device) if bound["return_counts"] else \
        new_proxy(torch.empty((0,), dtype=torch.int64, device="meta"), device)
    return output, inverse, counts
