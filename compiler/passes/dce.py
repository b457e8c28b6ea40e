"""Dead code elimination: drop bound symbols whose outputs nothing needs. In-place ops, random ops (RNG
state is a side effect: dropping one shifts every later random number) and grad-mode switches stay.

An unused op is dropped only if it cannot raise on any call the trace's guards admit: eager runs it, and
an op whose only effect is that it can raise (`t.select(0, -1)` on an empty tensor, an index out of
range, an integer division by zero) must raise in the compiled call too. Those are elementwise ops,
reductions and factories of floating-point (or complex) tensors, whose errors depend only on metadata the
prologue guards (dtypes, exact sizes, or symbolic sizes their shape rule constrained); integer and bool
tensors are kept (their kernels refuse more than the meta kernels check: `torch.add(b, b, alpha=0.5)` of
bools), and so is anything else unused: it runs, as in eager."""
from __future__ import annotations

from ..core import tree as pytree

from ..core.proxies import TensorProxy
from ..core.symbols import EFFECTFUL
from ..core.trace import Trace

_DROPPABLE = frozenset((
    "abs neg exp exp2 expm1 log log2 log10 log1p sin cos tan tanh sinh cosh asin acos atan atan2 sigmoid relu "
    "relu6 gelu silu mish elu selu celu softplus softsign sqrt rsqrt reciprocal sign sgn square erf erfc "
    "trunc floor ceil round frac softmax log_softmax clone contiguous detach float double half bfloat16 long "
    "int bool logical_not logical_and logical_or bitwise_not add sub mul rsub true_divide truediv clamp clip "
    "clamp_min clamp_max where lerp eq ne lt le gt ge maximum minimum addcmul hardtanh hardswish hardsigmoid "
    "leaky_relu nan_to_num positive isnan isinf isfinite sum mean prod std var logsumexp all any "
    "norm zeros ones full empty zeros_like ones_like full_like empty_like arange linspace "
    "neg_ to type_as").split())
# may raise on integer values (division by zero, negative powers): dropped only for floating point arguments
_INTEGER_RAISES = frozenset("div floor_divide floordiv remainder fmod mod pow".split())


def _base(name: str) -> str:
    n = name.rsplit(".", 1)[-1]
    if n.startswith("__") and n.endswith("__"):
        n = n[2:-2]
        if n[:1] in "ri" and n[1:] in _DROPPABLE | _INTEGER_RAISES:
            n = n[1:]
    return n


def may_raise(bsym) -> bool:
    """Whether the op might raise on a call its trace's guards admit (then it is not dead code)."""
    name = _base(bsym.symbol.name)
    tensors = [p for p in pytree.tree_leaves((bsym.args, bsym.kwargs)) if isinstance(p, TensorProxy)]
    if any(p.dynamic or p.sym_shape == "unknown" for p in tensors):
        return True  # (value-dependent or unfollowed sizes: shape checks were not made for every size)
    if any(o.sym_shape == "unknown" for o in bsym.tensor_outputs()):
        return True
    if bsym.unchecked:
        return True  # (its decomposition failed where the meta kernel did not: eager may raise there)
    if any(p.requires_grad and p.meta._is_view() for p in tensors):
        return True  # (autograd refuses a view whose base was written in place since: `chunk(x)[1] + 1`)
    if not all(p.dtype.is_floating_point or p.dtype.is_complex for p in tensors):
        return True
    return name not in _DROPPABLE and name not in _INTEGER_RAISES


def _made(bsym) -> set[str]:
    """Names of the tensors the op makes. An op that returned its argument itself (`x.to(x.dtype)`,
    `x.contiguous()` of a contiguous x) made nothing: a later reader needs the argument, not the op."""
    return {o.name for o in bsym.tensor_outputs()} - {a.name for a in bsym.tensor_args()}


def eager_dce(trace: Trace) -> Trace:
    """The default pass: unused ops that may raise stay (see the module's docstring)."""
    return dce(trace, keep_raising=True)


def dce(trace: Trace, keep_raising: bool = False) -> Trace:
    """keep_raising: unused ops that may raise stay (eager_dce); without it every unused op without effects
    goes (the fused path's functional traces, backward traces), except those marked `kept_to_raise`
    (mark_unused_that_may_raise, on the trace the functional one was made from)."""
    needed = {p.name for p in pytree.tree_leaves(trace.output) if isinstance(p, TensorProxy)}
    kept = []
    for bsym in reversed(trace.bsyms):
        outs = _made(bsym)
        if bsym.symbol.tags & EFFECTFUL or outs & needed or bsym.kept_to_raise or (keep_raising and may_raise(bsym)):
            kept.append(bsym)
            needed.update(p.name for p in bsym.tensor_args())
    removed = len(trace.bsyms) - len(kept)
    return trace.copy_with(list(reversed(kept)), f"after dead code elimination (removed {removed})")


def mark_unused_that_may_raise(trace: Trace) -> None:
    """Mark `kept_to_raise` the ops of an eager-order trace (after eager_dce) that nothing needs: eager_dce kept
    them because they may raise, and the fused path must run them too (functionalize carries the mark to the
    ops it emits for them)."""
    needed = {p.name for p in pytree.tree_leaves(trace.output) if isinstance(p, TensorProxy)}
    for bsym in reversed(trace.bsyms):
        if not (bsym.symbol.tags & EFFECTFUL or _made(bsym) & needed):
            bsym.kept_to_raise = True
        needed.update(p.name for p in bsym.tensor_args())
