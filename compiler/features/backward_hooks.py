"""Module backward hooks (register_full_backward_hook / _pre_hook, and torch's global ones) under the
interpreting front end: torch's own BackwardHook machinery, set up at run time on the real tensors.

nn.Module._call_impl (interpreted) makes a `torch.utils.hooks.BackwardHook(module, hooks, pre_hooks)`, wraps
the module's tensor inputs with `setup_input_hook` before forward and its outputs with `setup_output_hook`
after the forward hooks. Those wrap tensors in an identity autograd.Function and register hooks on the real
grad_fn objects, which proxies do not have. So each of the three becomes an op of the trace:
- `torch.utils.hooks.BackwardHook(module, hooks, pre_hooks)`: a creation op; every call makes a fresh one
  (it holds per-call state: the grad_outputs waiting for the input hook); while tracing ops see a stand-in;
- `BackwardHook.setup_input_hook` / `setup_output_hook`: run torch's methods on the real tensors and return
  the wrapped ones, which the rest of the trace uses.
At backward, torch calls the user's hooks with eager's grad_input/grad_output (None where eager gives None),
and replacement grads they return change the gradients as in eager. Whether tensors get wrapped (some tensor
requires grad and grad mode is on) is decided while tracing from guarded facts; the run checks it agrees.
The hook lists are those of the traced call; the prologue guards the hook dictionaries' keys
(compiler/features/module_hooks.py), so adding or removing a hook re-traces. The ops are effects: kept in order, and
functionalization leaves such traces in eager order (the wrapped tensors alias the module's tensors).
Refused: the deprecated non-full `register_backward_hook` (it reads the result's grad_fn while tracing).
"""
from __future__ import annotations

import torch
from torch.utils.hooks import BackwardHook

from ..core.errors import CompilerError
from ..core.proxies import OpaqueProxy, TensorProxy
from ..core.symbols import Symbol, Tag



def _is_tensor(x) -> bool:
    return isinstance(x, (TensorProxy, torch.Tensor))


def _wraps(tensors) -> bool:
    # BackwardHook._apply_on_tensors wraps only then
    return any(t.requires_grad for t in tensors) and torch.is_grad_enabled()


def _new_meta(symbol, args, kwargs):
    from ..core.context import current_state

    state = current_state()
    standin = BackwardHook(*args)  # its state is never used: the setup ops take the run's own object
    p = OpaqueProxy(state.trace.new_name("bh"), standin, "a module's backward-hook state")
    state.opaque[id(standin)] = p  # ops take the real object; recording maps it to the proxy
    return p


def _setup_meta(symbol, args, kwargs):
    from ..meta.functions import new_proxy

    wraps, tensors = args[3], args[4:]
    if not wraps:
        return None
    with torch._C.DisableTorchFunction():  # BackwardHookFunction returns views of its inputs
        return tuple(new_proxy(t.meta.view_as(t.meta), t.device, t.dynamic) for t in tensors)


def _run_setup(method, bh, n, index, wraps, tensors):
    args = [None] * n  # non-tensor arguments: only their positions matter to BackwardHook
    for i, t in zip(index, tensors):
        args[i] = t
    res = method(bh, tuple(args))
    wrapped = (bh.input_tensors_index if method is BackwardHook.setup_input_hook else bh.output_tensors_index) \
        is not None
    if wrapped != wraps:
        raise CompilerError("a module backward hook's tensors were traced as "
                            f"{'' if wraps else 'not '}needing gradients but the run differs; call the function again")
    return tuple(res[i] for i in index)


def setup_inputs(bh, n, index, wraps, *tensors):
    return _run_setup(BackwardHook.setup_input_hook, bh, n, index, wraps, tensors)


def setup_outputs(bh, n, index, wraps, *tensors):
    return _run_setup(BackwardHook.setup_output_hook, bh, n, index, wraps, tensors)


NEW = Symbol("torch.utils.hooks.BackwardHook", BackwardHook, Tag.EFFECT | Tag.CREATION, meta=_new_meta)
# (not "torch."-named: the python executor calls these functions, the torch executor would print the name)
SETUP_INPUTS = Symbol("BackwardHook.setup_input_hook", setup_inputs, Tag.EFFECT, meta=_setup_meta)
SETUP_OUTPUTS = Symbol("BackwardHook.setup_output_hook", setup_outputs, Tag.EFFECT, meta=_setup_meta)


def _setup(symbol, bh, items):
    index = tuple(i for i, a in enumerate(items) if _is_tensor(a))
    tensors = [items[i] for i in index]
    wraps = _wraps(tensors)
    new = symbol(bh, len(items), index, wraps, *tensors)
    if new is None:
        return items, None
    out = list(items)
    for i, t in zip(index, new):
        out[i] = t
    return out, index


def lookasides() -> dict:
    """BackwardHook and its two setup methods -> trace ops; the non-full hooks -> refused."""

    def new_backward_hook(module, user_hooks, user_pre_hooks):
        return NEW(module, list(user_hooks), list(user_pre_hooks)).value

    def setup_input_hook(bh, args):
        out, index = _setup(SETUP_INPUTS, bh, args)
        if index is None:
            return args
        return tuple(out) if type(args) is tuple else type(args)(*out)

    def setup_output_hook(bh, args):
        is_tuple = isinstance(args, tuple)
        items = args if is_tuple else (args,)
        out, index = _setup(SETUP_OUTPUTS, bh, items)
        if index is None:
            return args
        res = tuple(out) if type(items) is tuple else type(items)(*out)
        return res if is_tuple else res[0]

    real_get_backward_hooks = torch.nn.Module._get_backward_hooks

    def get_backward_hooks(module):
        full, non_full = real_get_backward_hooks(module)
        if non_full:
            from ..core.errors import UnsupportedOpError
            from ..core.source import user_location

            loc = user_location(3)
            raise UnsupportedOpError(
                f"the non-full module backward hook of {type(module).__name__} (register_backward_hook, deprecated "
                f"by torch) is not supported by the compiler{f' at {loc.describe()}' if loc else ''}: it reads the "
                "result's grad_fn while tracing; use register_full_backward_hook")
        return full, non_full

    return {BackwardHook: new_backward_hook, BackwardHook.setup_input_hook: setup_input_hook,
            BackwardHook.setup_output_hook: setup_output_hook, torch.nn.Module._get_backward_hooks: get_backward_hooks}
