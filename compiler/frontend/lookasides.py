"""Python-level torch functions are interpreted down to the ops they call, not refused.

`torch.nn.functional.*`, `torch.functional.*` and the Tensor methods written in Python (`Tensor.norm`,
`Tensor.split`, `Tensor.unique`...) first ask `has_torch_function(...)` and, when a traced value or the
tracing mode is about, hand the call to `__torch_function__`: the compiler then needs a symbol for the
function itself. For a function with no hand-written symbol the interpreter answers False instead, so the
function body runs (interpreted) and each torch op it calls is traced on its own. A Python function that
reaches the dispatcher from native code (a Python Tensor method looked up on a proxy) is run under the
active interpreter the same way.

Also here: unbound Tensor methods called on traced values (`torch.Tensor.add_(x, y)`, `Tensor.__radd__`)
go to the dispatcher: natively the method descriptor rejects a proxy as `self`.
"""
from __future__ import annotations

import types


from ..features import backward_hooks, module_hooks, new_parameters, rng, training_step, vmap
from ..core.proxies import TensorProxy
from ..torchlang.table import interpret_call
from ..core.source import INTERPRETERS


def _hand_written(fn) -> bool:
    from ..torchlang.table import METADATA_FUNCTIONS, TORCH_SYMBOLS

    return fn in TORCH_SYMBOLS or fn in METADATA_FUNCTIONS


def _caller_has_symbol() -> bool:
    """Whether the interpreted function now asking has_torch_function has a hand-written symbol (it is
    then recorded as one op, through __torch_function__)."""
    if not INTERPRETERS or not INTERPRETERS[-1].active:
        return True
    return _hand_written(INTERPRETERS[-1].active[-1].fn)


def _answer(real):
    def has_torch_function(*args):
        return real(*args) if _caller_has_symbol() else False

    has_torch_function.__name__ = real.__name__
    return has_torch_function


def _unbound_method(method):
    def call(*args, **kwargs):
        if args and isinstance(args[0], TensorProxy):
            from ..torchlang.table import dispatch

            return dispatch(method, args, kwargs)
        return method(*args, **kwargs)

    call.__name__ = method.__name__
    return call


_CHECKPOINT_OPTIONS = ("use_reentrant", "context_fn", "determinism_check", "debug", "preserve_rng_state",
                       "early_stop")


def _checkpoint(function, *args, **kwargs):
    """torch.utils.checkpoint.checkpoint(fn, *args): the values and gradients are fn's own (checkpointing
    only trades memory for recomputation in backward, which the execution trace's eager autograd does
    not need), so fn is traced inline."""
    for option in _CHECKPOINT_OPTIONS:
        kwargs.pop(option, None)
    return interpret_call(function, args, kwargs)


def _is_compiling() -> bool:
    """torch.compiler.is_compiling() in traced code: True, as under torch.compile and thunder, so library code
    takes its compile paths (transformers' masks otherwise read tensor values, which splits the trace).
    torch._dynamo.is_compiling and torch._utils.is_compiling call this one."""
    return True


def interpreter_lookasides() -> dict:
    """callable -> replacement, for the interpreting front end."""
    import torch.utils.checkpoint

    # (custom autograd.Function.apply: compiler/features/autograd_function.py, added by the interpreting front end)
    table = {torch.utils.checkpoint.checkpoint: _checkpoint, torch.compiler.is_compiling: _is_compiling}
    table |= rng.lookasides()  # seeds, RNG states and generators made inside: recorded in eager's order
    table |= training_step.lookasides()  # backward, optimizer steps, tensor attribute writes: refused
    table |= backward_hooks.lookasides()  # module backward hooks: torch's BackwardHook set up at run time
    table |= module_hooks.lookasides()  # modules called: their hook dictionaries are guarded
    table |= vmap.lookasides()  # torch.vmap(f)(...): one op, run by torch's vmap
    table |= new_parameters.lookasides()  # nn.Parameter of a traced tensor: refused
    table |= {real: _answer(real) for real in (torch._C._has_torch_function, torch._C._has_torch_function_unary,
                                               torch._C._has_torch_function_variadic)}
    for name, method in vars(torch._C.TensorBase).items():
        if isinstance(method, (types.MethodDescriptorType, types.WrapperDescriptorType)) and \
                name not in ("__init__", "__new__", "__init_subclass__", "__subclasshook__", "__getattribute__",
                             "__setattr__", "__delattr__", "__reduce_ex__", "__sizeof__", "__dir__"):
            table[method] = _unbound_method(method)
    return table
