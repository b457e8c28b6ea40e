"""Reuse of meta results: an op already run on meta tensors with the same metadata gives the same metadata.

Running an op on meta tensors goes through torch's Python meta kernels (torch._refs, torch._prims_common),
0.1-25 ms per op (scaled_dot_product_attention's math decomposition is the slow end): most of a first jit
call. A meta kernel's result is a function of its inputs' metadata, the other arguments and a little global
state, so a second call with all of those equal (the next transformer block, the same elementwise op on the
same shapes) gets a new meta tensor made to the first result's metadata instead of running the kernel again.

Only results that are safe to rebuild are kept, and each is checked once when stored:
- every output is a new tensor: not an input, not a view (`_base`), not sharing an input's storage, no
  output twice, and no input's metadata changed by the call (in-place and resizing ops are never kept);
- the rebuilt tensor (empty_strided, and a clone when it requires grad, so it is a non-leaf as the kernel's
  output is) has the same sizes, strides, storage offset and size, dtype, requires_grad and is_leaf;
- the call showed no warning (a kept result would not warn again), and it did not raise (errors are never
  kept: the kernel runs again and raises again).
The key holds the global state meta kernels read: grad mode, inference mode, the default dtype,
deterministic algorithms, and scaled_dot_product_attention's backend switches. Anything the key cannot
describe exactly (a leaf of another type, a real tensor, a dispatch mode active) is not kept.
"""
from __future__ import annotations

import warnings

import torch

_MAX = 4096  # distinct calls kept per process; then the table starts over
enabled = True  # False: every call runs the kernel (tests compare traces both ways)
_table: dict = {}
_NOT_KEPT = object()  # a key whose call was checked and cannot be rebuilt: run the kernel every time
_VALUE_TYPES = frozenset((int, float, bool, str, type(None), torch.dtype, torch.device, torch.memory_format,
                          torch.layout, type(Ellipsis)))


class _NoKey(Exception):
    pass


def _tensor_key(t: torch.Tensor):
    if t.device.type != "meta" or t.layout is not torch.strided or t.is_conj() or t.is_neg():
        raise _NoKey
    try:
        leaf = t.is_leaf  # (reading it raises for a multi-output view whose base was written: eager's op may not)
    except RuntimeError:
        raise _NoKey from None
    return (t.size(), t.stride(), t.storage_offset(), t.dtype, t.requires_grad, leaf, t._base is not None,
            t.untyped_storage().nbytes(), t._version)  # (_version: a call that wrote into an input is not kept)


def _key(x, tensors: list):
    t = type(x)
    if t in _VALUE_TYPES:
        return (t, x)
    if t is torch.Tensor or t is torch.nn.Parameter:
        tensors.append(x)
        return (t, _tensor_key(x))
    if t is tuple or t is list or t is torch.Size:
        return (t, tuple([_key(i, tensors) for i in x]))
    if t is dict:
        return (t, tuple([(k, _key(v, tensors)) for k, v in x.items()]))
    raise _NoKey


def _state():
    return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(), torch.get_default_dtype(),
            torch.are_deterministic_algorithms_enabled(), torch.backends.cuda.flash_sdp_enabled(),
            torch.backends.cuda.mem_efficient_sdp_enabled(), torch.backends.cuda.math_sdp_enabled(),
            torch.backends.cuda.cudnn_sdp_enabled())


def _rebuild_one(spec):
    size, stride, dtype, requires_grad = spec
    m = torch.empty_strided(size, stride, dtype=dtype, device="meta", requires_grad=requires_grad)
    return m.clone() if requires_grad else m  # a non-leaf, as the kernel's own output


def _rebuild(kept):
    kind, specs = kept
    if kind is None:
        return _rebuild_one(specs)
    return kind([None if s is None else _rebuild_one(s) for s in specs])


def _spec_of(m: torch.Tensor):
    return (tuple(m.size()), tuple(m.stride()), m.dtype, m.requires_grad)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (a.size() == b.size() and a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
            and a.dtype == b.dtype and a.requires_grad == b.requires_grad and a.is_leaf == b.is_leaf
            and a.untyped_storage().nbytes() == b.untyped_storage().nbytes() and b._base is None)


def _keepable(out, tensors: list, before):
    """What to store for `out` (a tensor, or a tuple/list of tensors and None), or None if it cannot be
    rebuilt exactly."""
    if isinstance(out, torch.Tensor) and type(out) in (torch.Tensor, torch.nn.Parameter):
        kind, outs = None, [out]
    elif (type(out) in (tuple, list) or type(out).__module__ == "torch.return_types") and \
            all(o is None or type(o) is torch.Tensor for o in out):  # (return_types: torch.max's (values, indices))
        kind, outs = type(out), list(out)
    else:
        return None
    real = [o for o in outs if o is not None]
    if len({id(o) for o in real}) != len(real):
        return None
    try:
        if [_tensor_key(t) for t in tensors] != before:  # the call changed an input's metadata
            return None
    except (_NoKey, RuntimeError):  # (RuntimeError: a multi-output view whose base the call wrote: no grad_fn)
        return None
    in_ids = {id(t) for t in tensors}
    in_storages = {t.untyped_storage()._cdata for t in tensors}
    for o in real:
        if (id(o) in in_ids or o._base is not None or o.device.type != "meta" or o.layout is not torch.strided
                or o.is_conj() or o.is_neg() or o.untyped_storage()._cdata in in_storages):
            return None
    specs = [None if o is None else _spec_of(o) for o in outs]
    kept = (kind, specs[0] if kind is None else specs)
    again = _rebuild(kept)
    for o, r in zip(outs, [again] if kind is None else again):
        if o is not None and not _same(o, r):
            return None
    return kept


def call(fn, margs, mkwargs):
    """fn(*margs, **mkwargs) on meta tensors, or a rebuild of the result of an equal earlier call."""
    if not enabled or torch._C._len_torch_dispatch_stack() or torch._C._is_any_autocast_enabled():
        return fn(*margs, **mkwargs)
    tensors: list = []
    try:
        key = (fn, _state(), _key(margs, tensors), _key(mkwargs, tensors))
        hash(key)
    except (_NoKey, TypeError, RuntimeError):  # (RuntimeError: is_leaf of a view autograd invalidated)
        return fn(*margs, **mkwargs)
    kept = _table.get(key)
    if kept is not None:
        if kept is not _NOT_KEPT:
            return _rebuild(kept)
        return fn(*margs, **mkwargs)
    before = [_tensor_key(t) for t in tensors]
    shown = _run_watching_warnings(fn, margs, mkwargs)
    if shown is None:  # warnings cannot be watched here: never keep
        return fn(*margs, **mkwargs)
    out, warned = shown
    if len(_table) >= _MAX:
        _table.clear()
    _table[key] = _NOT_KEPT if warned else (_keepable(out, tensors, before) or _NOT_KEPT)
    return out


def _run_watching_warnings(fn, margs, mkwargs):
    """(fn's result, whether it showed a warning), each warning shown as usual the moment it is issued; None
    (without running fn) when someone replaced warnings.showwarning, which bypasses what we watch.
    (Watching, unlike warnings.catch_warnings, leaves the filters and their once-registries alone. A warning
    the filters hid on this call is not seen, so changing the filters to show it later would not show it for
    a kept call.)"""
    impl = getattr(warnings, "_showwarnmsg_impl", None)
    if impl is None or warnings.showwarning is not getattr(warnings, "_showwarning_orig", None):
        return None
    warned = []

    def watch(msg):
        warned.append(True)
        impl(msg)

    warnings._showwarnmsg_impl = watch
    try:
        out = fn(*margs, **mkwargs)
    finally:
        warnings._showwarnmsg_impl = impl
    return out, bool(warned)


def clear() -> None:
    _table.clear()
