"""torch's own operator database (OpInfo `op_db`) as a differential harness for compiler.jit.

Test material nobody here wrote: for every op with CPU support of a dtype, up to `per_op` of its sample
inputs run eagerly and through `compiler.jit` (called twice, so the second call is a cache hit), each
call on fresh copies of the inputs with the same strides. A sample that eager cannot run is skipped.
Each sample is classified:

- ok       compiled results equal eager's: values, dtypes, shapes, strides (dims of size > 1), every
           input as eager left it (in-place variants: the mutated input, and `out is x` as in eager)
- refused  a documented CompilerError (or the interpreter's InterpreterError), by reason
- crash    any other exception where eager ran
- wrong    a result differs from eager's: a silent wrong result

A "chain" result per op feeds all its samples (other sizes, numbers, options) through one jitted
function: a cached trace reused where its guards (constant values) or constraints (symbolic values)
should have sent the call to a new trace is a wrong result there.

Random ops are run with the same seed before eager and before the compiled call (the compiled function
runs eager's own ops, in order), so values must match too; ops eager itself does not reproduce under a
fixed seed compare metadata only. Used by tests/compiler/test_opinfo.py (a shard) and
bench/opinfo_coverage.py (all ops).
"""
from __future__ import annotations

import copy
import re
from collections import Counter
from dataclasses import dataclass, field

import torch

import compiler
from compiler.interpreter import InterpreterError

OK, REFUSED, CRASH, WRONG = "ok", "refused", "crash", "wrong"


def op_db():
    from torch.testing._internal.common_methods_invocations import op_db as db

    return db


def ops_for(dtype: torch.dtype, names=None):
    """OpInfos with CPU support for `dtype` (all variants: name plus variant_test_name)."""
    out = []
    for op in op_db():
        if dtype not in op.supported_dtypes("cpu"):
            continue
        if names is not None and op_id(op) not in names and op.name not in names:
            continue
        out.append(op)
    return out


def op_id(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


@dataclass
class Result:
    op: str
    index: int
    variant: str  # "op", "inplace", "grad", "chain" (all samples through one jitted function)
    outcome: str
    reason: str = ""  # refused: "ErrorType: short message"; crash/wrong: what happened

    @property
    def key(self) -> str:
        return f"{self.op}[{self.index}]{'' if self.variant == 'op' else '.' + self.variant}"


@dataclass
class Tally:
    results: list = field(default_factory=list)

    def add(self, r: Result):
        self.results.append(r)

    def counts(self, variant="op") -> Counter:
        return Counter(r.outcome for r in self.results if r.variant == variant)

    def reasons(self, outcome, variant="op") -> Counter:
        return Counter(r.reason for r in self.results if r.variant == variant and r.outcome == outcome)


# ------------------------------------------------------------------------------------------------ inputs

def fresh(sample):
    """A deep copy of (input, args, kwargs): new storage, same strides and storage offsets (sparse
    tensors, which have no storage to copy, are cloned)."""
    data = (sample.input, tuple(sample.args), dict(sample.kwargs))
    try:
        return copy.deepcopy(data)
    except (NotImplementedError, RuntimeError):
        return torch.utils._pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else copy.deepcopy(t),
                                            data)


def _is_random(op) -> bool:
    return bool(getattr(op, "nondeterministic_seeded", False)) or op.name.startswith(("nn.functional.dropout",
                                                                                       "bernoulli", "normal",
                                                                                       "rand", "multinomial",
                                                                                       "uniform", "cauchy",
                                                                                       "exponential", "geometric",
                                                                                       "log_normal"))


# ------------------------------------------------------------------------------------------------ compare

def _leaves(x):
    if isinstance(x, torch.nn.Module):  # (a sample's `distance_function=PairwiseDistance()`, deep-copied per run:
        # the same module is the same type, settings and state, not the same object)
        settings = {k: v for k, v in vars(x).items() if not k.startswith("_") and k != "training"}
        return [("module", type(x).__name__, x.training, tuple(settings))] + _leaves(list(settings.values())) + \
            _leaves(dict(x.state_dict()))
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        out = [("seq", type(x).__name__, len(x))]
        for i in x:
            out += _leaves(i)
        return out
    if isinstance(x, dict):
        out = [("dict", tuple(x))]
        for v in x.values():
            out += _leaves(v)
        return out
    return [x]


def _tol(dtype):
    if dtype in (torch.bfloat16, torch.float16, torch.complex32):
        return 1.6e-2, 1e-2
    if dtype in (torch.float32, torch.complex64):
        return 1.3e-5, 1e-5
    return 1e-7, 1e-7


def differs(actual, expected, *, values=True) -> str | None:
    """Why `actual` is not eager's `expected` (None: the same)."""
    a, e = _leaves(actual), _leaves(expected)
    if len(a) != len(e):
        return f"structure differs: {len(a)} leaves vs eager {len(e)}"
    for x, y in zip(a, e):
        if isinstance(y, torch.Tensor):
            if not isinstance(x, torch.Tensor):
                return f"expected a tensor, got {type(x).__name__}"
            if x.dtype != y.dtype:
                return f"dtype {x.dtype} != eager {y.dtype}"
            if x.shape != y.shape:
                return f"shape {tuple(x.shape)} != eager {tuple(y.shape)}"
            if x.requires_grad != y.requires_grad:
                return f"requires_grad {x.requires_grad} != eager {y.requires_grad}"
            if x.layout == torch.strided and y.layout == torch.strided and y.numel() > 1:
                if any(sx != sy for sx, sy, n in zip(x.stride(), y.stride(), y.shape) if n > 1):
                    return f"strides {x.stride()} != eager {y.stride()}"
            if values and x.layout == torch.strided:
                with torch.no_grad():
                    rtol, atol = _tol(y.dtype)
                    try:
                        torch.testing.assert_close(x, y, rtol=rtol, atol=atol, equal_nan=True, check_stride=False)
                    except AssertionError as err:
                        return "values differ: " + str(err).splitlines()[0]
        elif isinstance(y, float) and isinstance(x, float):
            if not (x == y or (x != x and y != y) or abs(x - y) <= 1e-6 * max(1.0, abs(y))):
                return f"{x!r} != eager {y!r}"
        elif type(x) is not type(y) and not (isinstance(x, tuple) and isinstance(y, tuple)):
            return f"{type(x).__name__} != eager {type(y).__name__}"
        elif not isinstance(y, (torch.Generator,)) and x != y:
            return f"{x!r} != eager {y!r}"
    return None


def reason_of(e: BaseException) -> str:
    """A short, grouping-friendly reason: the error type and its message without numbers and names."""
    msg = str(e).splitlines()[0] if str(e) else ""
    msg = re.sub(r" at [^ :]+:\d+[^:]*", "", msg)
    msg = re.sub(r"\bt\d+\b|\d+", "N", msg)[:110]
    return f"{type(e).__name__}: {msg}"


def _seeded(fn, *args, **kwargs):
    torch.manual_seed(1234)
    with _no_inner_seeding():
        return fn(*args, **kwargs)


class _no_inner_seeding:
    """OpInfo calls random ops through `wrapper_set_seed` (reseed inside `freeze_rng_state`), which the
    compiler refuses inside a jitted function (RNG state changes are not traced yet). The harness seeds
    before eager and before the compiled call instead, so the random op itself is what is compared."""

    def __enter__(self):
        import sys

        self.saved = [(m, m.wrapper_set_seed) for name, m in list(sys.modules.items())
                      if name.startswith("torch.testing._internal") and hasattr(m, "wrapper_set_seed")]
        for m, _ in self.saved:
            m.wrapper_set_seed = _call
        return self

    def __exit__(self, *exc):
        for m, f in self.saved:
            m.wrapper_set_seed = f


def _call(op, *args, **kwargs):
    return op(*args, **kwargs)


# The cache option every sample is jitted with ("symbolic values": numbers in the samples stay symbolic).
CACHE = "constant values"
# The executors every sample is jitted with (None: the default; ("inductor", "torch"): the functional path).
EXECUTORS = None


# Ops whose result values are undefined (uninitialized memory): only metadata is compared.
UNDEFINED_VALUES = ("empty", "empty_like", "new_empty", "new_empty_strided", "empty_permuted", "empty_strided")


def check_sample(fn, sample, *, random: bool, inplace: bool = False, calls: int = 2, values: bool = True):
    """(outcome, reason) of running `fn(sample.input, *sample.args, **sample.kwargs)` jitted vs eager."""
    try:
        inp, args, kwargs = fresh(sample)
        expected = _seeded(fn, inp, *args, **kwargs)
    except Exception:
        return None  # eager cannot run it: not counted
    compare_values = values
    if random and compare_values:
        inp2, args2, kwargs2 = fresh(sample)
        again = _seeded(fn, inp2, *args2, **kwargs2)
        compare_values = differs(again, expected) is None
    eager_inputs = (inp, args, kwargs)

    def wrapper(x, *a, **k):
        return fn(x, *a, **k)

    jfn = compiler.jit(wrapper, cache=CACHE, executors=EXECUTORS)
    for _ in range(calls):
        cinp, cargs, ckwargs = fresh(sample)
        try:
            actual = _seeded(jfn, cinp, *cargs, **ckwargs)
        except (compiler.CompilerError, InterpreterError) as e:
            return REFUSED, reason_of(e)
        except Exception as e:  # noqa: BLE001 - any other exception is a compiler bug where eager ran
            return CRASH, reason_of(e)
        why = differs(actual, expected, values=compare_values)
        if why is None:
            why = differs((cinp, cargs, ckwargs), eager_inputs, values=compare_values)
            why = why and "inputs after the call: " + why
        if why is None and inplace and (actual is cinp) != (expected is inp):
            why = "`out is x` differs from eager"
        if why is not None:
            return WRONG, why
    return OK, ""


def check_chain(fn, samples_, *, random: bool, values: bool = True):
    """One jitted function fed every sample in turn (other sizes, numbers, dtypes of the same op): each call
    must equal eager, so a cached trace reused where its guards or constraints should have refused it
    shows up as "wrong". Samples the compiler refuses are skipped (check_sample reports them). Returns
    (outcome, reason) or None when fewer than two samples ran."""
    def wrapper(x, *a, **k):
        return fn(x, *a, **k)

    jfn = compiler.jit(wrapper, cache=CACHE, executors=EXECUTORS)
    compared = 0
    for i, sample in enumerate(samples_):
        try:
            inp, args, kwargs = fresh(sample)
            expected = _seeded(fn, inp, *args, **kwargs)
        except Exception:
            continue
        compare_values = values
        if random and compare_values:
            inp2, args2, kwargs2 = fresh(sample)
            compare_values = differs(_seeded(fn, inp2, *args2, **kwargs2), expected) is None
        cinp, cargs, ckwargs = fresh(sample)
        try:
            actual = _seeded(jfn, cinp, *cargs, **ckwargs)
        except (compiler.CompilerError, InterpreterError):
            continue
        except Exception as e:  # noqa: BLE001
            return CRASH, f"sample {i}: " + reason_of(e)
        why = differs(actual, expected, values=compare_values) or \
            differs((cinp, cargs, ckwargs), (inp, args, kwargs), values=compare_values)
        if why is not None:
            return WRONG, f"sample {i} after {compared} others: {why}"
        compared += 1
    return (OK, "") if compared >= 2 else None


def check_grad(fn, sample):
    """Gradients of a scalar function of the outputs w.r.t. the floating inputs, jitted vs eager."""
    def leaves_requiring_grad(s):
        return [t for t in _leaves(s) if isinstance(t, torch.Tensor) and t.requires_grad]

    def run(f):
        inp, args, kwargs = fresh(sample)
        out = _seeded(f, inp, *args, **kwargs)
        outs = [o for o in _leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
        ins = leaves_requiring_grad((inp, args, kwargs))
        if not outs or not ins:
            return None
        total = sum((o.float() * (0.5 + torch.arange(o.numel(), dtype=torch.float32).reshape(o.shape) % 3)).sum()
                    for o in outs)
        return torch.autograd.grad(total, ins, allow_unused=True)

    try:
        expected = run(fn)
    except Exception:
        return None
    if expected is None:
        return None

    def wrapper(x, *a, **k):
        return fn(x, *a, **k)

    jfn = compiler.jit(wrapper, cache=CACHE, executors=EXECUTORS)
    try:
        actual = run(jfn)
    except (compiler.CompilerError, InterpreterError) as e:
        return REFUSED, reason_of(e)
    except Exception as e:  # noqa: BLE001
        return CRASH, reason_of(e)
    if actual is None:
        return WRONG, "no gradient where eager has one"
    pairs = [(a, e) for a, e in zip(actual, expected)]
    if any((a is None) != (e is None) for a, e in pairs):
        return WRONG, "gradient presence differs"
    why = differs([a for a, _ in pairs if a is not None], [e for _, e in pairs if e is not None])
    return (WRONG, "gradient " + why) if why else (OK, "")


def samples(op, dtype, per_op, requires_grad=False):
    try:
        return list(op.sample_inputs("cpu", dtype, requires_grad=requires_grad))[:per_op]
    except Exception:
        return []


def run_op(op, dtype, tally: Tally, *, per_op: int = 8, inplace: bool = True, grad: bool = False,
           chain: bool = True, forward: bool = True):
    name = op_id(op)
    random = _is_random(op)
    undefined = op.name in UNDEFINED_VALUES
    for i, s in enumerate(samples(op, dtype, per_op)):
        r = check_sample(op.op, s, random=random, values=not undefined) if forward else None
        if r is not None:
            tally.add(Result(name, i, "op", *r))
        if inplace and op.inplace_variant is not None:
            r = check_sample(op.inplace_variant, s, random=random, inplace=True)
            if r is not None:
                tally.add(Result(name, i, "inplace", *r))
    if chain:
        r = check_chain(op.op, samples(op, dtype, per_op), random=random, values=not undefined)
        if r is not None:
            tally.add(Result(name, -1, "chain", *r))
    if grad and op.supports_autograd and dtype.is_floating_point and not random:
        for i, s in enumerate(samples(op, dtype, per_op, requires_grad=True)):
            r = check_grad(op.op, s)
            if r is not None:
                tally.add(Result(name, i, "grad", *r))
