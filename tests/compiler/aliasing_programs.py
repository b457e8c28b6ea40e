"""Random programs for the functional (fused) path, and their comparison with eager PyTorch.

The functional path rewrites in-place ops as new values and writes the caller-visible ones back at the end, so
its hazards are memory the caller can observe: inputs that are expanded, sliced, transposed or views of one
another; in-place ops, `out=` arguments (also ones eager resizes), writes through views of inputs and of
intermediates; outputs that are views of each other or of inputs; tensors that require grad (leaves, views of
leaves, non-leaves). Each program is drawn from a seed, built from statements that eager accepts on its inputs
(every candidate statement runs first; one eager rejects is drawn again), and checked against eager with
`check_program`: outputs (values, dtype, shape, requires_grad, leafness), inputs left behind (values and
shapes), which outputs and inputs share memory or are the same object, which are views (of which output or
input) and with which strides, gradients, and what a write into each output changes afterwards (under
no_grad, in eager's order: the aliasing the caller observes). bench/aliasing_fuzz.py runs thousands;
tests/compiler/test_functional_aliasing.py a fixed shard.

Distinct from bench/fuzz.py (the default path's differential fuzzer): this generator is about memory.
"""
from __future__ import annotations

import contextlib
import linecache
import os
import random
import traceback
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F

import compiler

# ---------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fresh:
    """A tensor of its own. layout: contiguous | transposed | sliced | expanded (dim 0 broadcast, stride 0).
    grad: None | "leaf" (requires grad; a non-contiguous layout is then a view of the leaf) | "nonleaf" (laid
    out from `leaf * 1`, so in-place ops are legal, as eager's activations)."""

    shape: tuple
    dtype: torch.dtype = torch.float32
    layout: str = "contiguous"
    grad: str | None = None


@dataclass(frozen=True)
class Alias:
    """A view of an earlier input (`view` is an expression of `s`, that input): inputs sharing memory."""

    source: int
    view: str


def _physical(spec: Fresh) -> tuple:
    shape = spec.shape
    if spec.layout == "transposed":
        return shape[:-2] + (shape[-1], shape[-2])
    if spec.layout == "sliced":
        return shape[:-1] + (2 * shape[-1],)
    if spec.layout == "expanded":
        return (1,) + shape[1:]
    return shape


def _lay_out(t: torch.Tensor, spec: Fresh) -> torch.Tensor:
    if spec.layout == "transposed":
        return t.transpose(-1, -2)
    if spec.layout == "sliced":
        return t[..., ::2]
    if spec.layout == "expanded":
        return t.expand(spec.shape)
    return t


def build_inputs(specs, seed: int):
    """(inputs, leaves): fresh tensors from a fixed seed; the same call gives equal, unshared tensors. Values are
    drawn on the CPU and land on the default device (the CUDA tier builds them under `torch.device("cuda")`):
    the same values there as here, so a program's branches and masks are the ones the CPU judged valid."""
    gen = torch.Generator().manual_seed(seed)
    device = torch.get_default_device()
    args, leaves = [], []
    for spec in specs:
        if isinstance(spec, Alias):
            args.append(eval(spec.view, {"torch": torch}, {"s": args[spec.source]}))  # noqa: S307 - our own text
            continue
        phys = _physical(spec)
        if spec.dtype.is_floating_point:
            raw = torch.randn(phys, generator=gen, dtype=torch.float64, device="cpu").to(device, spec.dtype)
        else:
            raw = torch.randint(-5, 6, phys, generator=gen, dtype=spec.dtype, device="cpu").to(device)
        if spec.grad is not None:
            raw.requires_grad_()
            leaves.append(raw)
            if spec.grad == "nonleaf":
                raw = raw * 1
        args.append(_lay_out(raw, spec))
    return args, leaves


# ---------------------------------------------------------------------------------------------------
# Statements ({v}: the new name; {a} the tensor written or viewed; {b}, {c}: other live tensors)
# ---------------------------------------------------------------------------------------------------

VIEWS = ["{v} = {a}.view(-1)", "{v} = {a}.reshape(-1)", "{v} = {a}.t()", "{v} = {a}.transpose(0, -1)", "{v} = {a}[0]",
         "{v} = {a}[1:]", "{v} = {a}[..., ::2]", "{v} = {a}.unsqueeze(0)", "{v} = {a}.expand(2, *{a}.shape)",
         "{v} = {a}.narrow(0, 0, 1)", "{v} = {a}.chunk(2)[0]", "{v} = {a}.unbind(0)[-1]", "{v} = {a}.split(1)[-1]",
         "{v} = {a}.diagonal()", "{v} = {a}.detach()", "{v} = {a}.contiguous()", "{v} = {a}.flatten()",
         "{v} = {a}.view_as({a})", "{v} = {a}.squeeze()", "{v} = {a}.mT", "{v} = {a}.to({a}.dtype)", "{v} = {a}.float()",
         "{v} = {a}.reshape({a}.shape[::-1])", "{v} = {a}.permute(*reversed(range({a}.ndim)))", "{v} = {a}[:, 1]",
         "{v} = {a}.select(-1, 0)", "{v} = {a}.as_strided((2,), (1,))", "{v} = {a}[None]", "{v} = {a}.T",
         "{v} = {a}.unflatten(0, (1, -1))", "{v} = {a}.movedim(0, -1)", "{v} = {a}.clone()", "{v} = {a}.real"]
COMPUTE = ["{v} = {a} * 2", "{v} = torch.exp({a})", "{v} = {a} + {b}", "{v} = torch.tanh({a})", "{v} = {a}.sum(0)",
           "{v} = torch.where({a} > 0, {a}, {b})", "{v} = {a} - {b}.mean()", "{v} = {a}.abs() + 1",
           "{v} = torch.cat([{a}, {b}])", "{v} = {a} @ {b}.mT", "{v} = torch.zeros_like({a})", "{v} = {a}.new_ones(3)",
           "{v} = torch.sigmoid({a}) * {b}"]
INPLACE = ["{a}.add_(1)", "{a}.mul_({b})", "{a}.add_({b}, alpha=0.5)", "{a}.copy_({b})", "{a}.zero_()", "{a}.fill_(3)",
           "{a}.clamp_(-0.5, 0.5)", "{a}.relu_()", "F.relu({a}, inplace=True)", "{a}.lerp_({b}, 0.5)",
           "{a}.addcmul_({b}, {b})", "{a}.masked_fill_({b} > 0, 0)", "{a}[{a} < 0] *= -1", "{a}[0] = {b}",
           "{a}[..., 0] = 1", "{a}[0] += 1", "{a} += {b}", "{a} *= 2", "{a}.sub_({b}.t())", "{a}.sin_()", "{a}.exp_()",
           "{a}.div_(2)", "{a}.copy_({a})", "{a}.copy_({a}.flip(0))", "{a}.index_copy_(0, torch.tensor([0]), {b}[:1])",
           "{a}.index_fill_(0, torch.tensor([0]), 2)", "{a}.index_add_(0, torch.tensor([0, 0]), {b}[:2])",
           "{a}.index_put_((torch.tensor([1, 0]),), {b}[:2], accumulate=True)",
           "{a}.copy_({a}.t())", "{a}.add_({a}.t())", "{a}.mul_({a})", "{a}.copy_({b}.t())", "{a}.neg_()",
           "{a}.masked_scatter_({b} > 0, {c})", "{a}.index_copy_(0, torch.tensor([1, 0]), {a}.t().narrow(0, 0, 2))",
           "{a}.add_({a}[0])", "{a}[1:] = {a}[:-1]", "{a}.copy_({a}[0])", "{a}.abs_()",
           "{a}.clamp_(min={b})", "torch.add({a}, {b}, out={a})"]
# (out= of a reduction, a matmul or a cat reads its inputs while it writes: eager's result is undefined where out
# shares their memory, so those read copies)
OUT = ["torch.mul({b}, -2, out={a})", "torch.add({b}, {c}, out={a})", "torch.exp({b}, out={a})",
       "torch.sum({b}.clone(), 0, out={a})", "torch.neg({b}, out={a})", "torch.mul({a}, 2, out={b})",
       "torch.matmul({b}.clone(), {c}.mT.clone(), out={a})", "torch.cat([{b}.clone(), {c}.clone()], out={a})",
       "torch.where({b} > 0, {b}, {c}, out={a})"]
METADATA = ["{a}.t_()", "{a}.unsqueeze_(0)", "{a}.squeeze_()", "{a}.transpose_(0, -1)", "{a}.resize_({a}.numel() // 2)",
            "{a}.detach_()", "{a}.requires_grad_()", "{a}.as_strided_((2,), (1,))"]
RESULT_OF_INPLACE = ["{v} = {a}.add_(1)", "{v} = {a}.mul_(2).t()", "{v} = {a}.add_(1).mul_(2)", "{v} = {a}.clamp_(0)[0]",
                     "{v} = F.relu({a}, inplace=True)", "{v} = {a}.copy_({b})", "{v} = {a}.zero_().view(-1)",
                     "{v} = {a}.type_as({a})", "{v} = {a}.expand_as({a})", "{v} = {a}.requires_grad_(False)",
                     "{v} = {a}.copy_({b}.double())", "{v} = {a}.sigmoid_().unsqueeze(0)"]
DATA_DEPENDENT = ["if {a}.sum() > 0:\n    {a}.mul_(2)", "{v} = {a}[{a} > 0]", "{v} = {a} * {a}.max().item()",
                  "for _ in range(2):\n    {a}.add_(1)", "if bool(({a} > 0).any()):\n    {v} = {a}.view(-1)\nelse:\n    {v} = {a}.clone()"]
NO_GRAD = ["with torch.no_grad():\n    {a}.mul_(2)", "with torch.no_grad():\n    {a}.copy_({b})",
           "with torch.no_grad():\n    {v} = {a}.view(-1)\n    {v}.add_(1)", "with torch.no_grad():\n    {a}[0] = 0"]
KINDS = {"view": (VIEWS, 5), "compute": (COMPUTE, 4), "inplace": (INPLACE, 6), "out": (OUT, 2),
         "metadata": (METADATA, 1), "no_grad": (NO_GRAD, 1), "result_of_inplace": (RESULT_OF_INPLACE, 2),
         "data_dependent": (DATA_DEPENDENT, 1)}


@dataclass
class Program:
    seed: int
    source: str
    specs: list
    fn: object

    def make(self):
        return build_inputs(self.specs, 1000 + self.seed)


def _input_specs(rng: random.Random) -> list:
    ndim = rng.choice([1, 2, 2, 2, 3])
    base = tuple(rng.choice([2, 3, 4]) for _ in range(ndim))
    dtype = rng.choice([torch.float32] * 5 + [torch.float64])
    grad = rng.choice([None, None, None, "leaf", "nonleaf", "nonleaf"])
    specs = []
    for _ in range(rng.randint(1, 3)):
        shape = tuple(1 if rng.random() < 0.15 else s for s in base)[rng.randint(0, min(1, ndim - 1)):]
        layouts = ["contiguous", "contiguous", "expanded", "sliced"] + (["transposed"] if len(shape) >= 2 else [])
        specs.append(Fresh(shape, dtype if rng.random() < 0.9 else torch.int64, rng.choice(layouts),
                           grad if rng.random() < 0.7 else None))
    for _ in range(rng.choice([0, 0, 1, 2])):  # inputs that share memory with another input
        src = rng.randrange(len(specs))
        specs.append(Alias(src, rng.choice(["s", "s[0]", "s.view(-1)", "s.t()", "s[..., 1:]", "s.detach()", "s[-1:]",
                                            "s.expand(2, *s.shape)", "s.unsqueeze(0)", "s.diagonal()"])))
    return specs


def _runs(source: str, specs, seed: int) -> bool:
    """Whether eager runs the program on its inputs, twice with the same result (a program that reads memory
    nothing wrote, `resize_` grown or an `out=` resized while it is also read, is drawn again)."""
    namespace = {"torch": torch, "F": F}
    results = []
    try:
        exec(compile(source, "<candidate>", "exec"), namespace)  # noqa: S102 - generated here
        for fill in (False, True):
            args, _ = build_inputs(specs, seed)
            with warnings.catch_warnings(), _uninitialized_memory_filled(fill):
                warnings.simplefilter("ignore")
                out = namespace["program"](*args)
            outs = list(out) if isinstance(out, tuple) else [out]
            if not all(o is None or (isinstance(o, torch.Tensor) and o.numel() <= 4096) for o in outs):
                return False
            results.append([t.detach().clone() for t in outs + args if isinstance(t, torch.Tensor)])
    except Exception:  # noqa: BLE001 - an invalid candidate (shapes, dtypes, autograd rules): draw another
        return False
    return all(a.shape == b.shape and (torch.allclose(a, b, rtol=0, atol=0, equal_nan=True) if a.is_floating_point()
                                       else torch.equal(a, b)) for a, b in zip(*results))


@contextlib.contextmanager
def _uninitialized_memory_filled(on: bool):
    """Memory torch allocates without writing (resize_, a resized out=) filled with NaN (deterministic
    algorithms mode): a program that reads it gives another result than with whatever malloc returned."""
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    if on:
        torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def _source(n_inputs: int, lines: list, returns: str) -> str:
    body = "".join("    " + line.replace("\n", "\n    ") + "\n" for line in lines)
    return f"def program({', '.join(f'a{i}' for i in range(n_inputs))}):\n{body}    return {returns}\n"


def random_program(seed: int) -> Program:
    rng = random.Random(seed)
    while True:
        specs = _input_specs(rng)
        names = [f"a{i}" for i in range(len(specs))]
        if _runs(_source(len(specs), [], "None"), specs, 1000 + seed):
            break
    lines: list[str] = []
    steps = rng.randint(2, 9)
    for step in range(steps):
        for _ in range(25):
            table, _ = KINDS[rng.choices(list(KINDS), [w for _, w in KINDS.values()])[0]]
            # writes favour the tensors whose memory is shared: inputs and views made so far
            a, b, c = (rng.choice(names) for _ in range(3))
            stmt = rng.choice(table).format(v=f"v{step}", a=a, b=b, c=c)
            if _runs(_source(len(specs), lines + [stmt], "None"), specs, 1000 + seed):
                lines.append(stmt)
                if f"v{step} =" in stmt:
                    names.append(f"v{step}")
                break
    for _ in range(25):
        k = rng.choice([1, 1, 2, 2, 3])
        picked = [rng.choice(names) for _ in range(k)]
        if rng.random() < 0.1:
            returns = "None"
        elif k == 1 and rng.random() < 0.5:
            returns = picked[0]
        else:
            returns = "(" + ", ".join(picked) + ",)"
        source = _source(len(specs), lines, returns)
        if _runs(source, specs, 1000 + seed):
            break
    else:
        source = _source(len(specs), lines, "None")
    filename = f"<aliasing-program-{seed}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"torch": torch, "F": F}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - generated here
    return Program(seed, source, specs, namespace["program"])


# ---------------------------------------------------------------------------------------------------
# Comparison with eager
# ---------------------------------------------------------------------------------------------------

TOLERANCES = {torch.float64: (1e-7, 1e-7), torch.float32: (1.3e-5, 1e-5)}


class Different(AssertionError):
    """The jitted program's result differs from eager's in a way the caller can observe."""


def _leaves(x) -> list:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for i in x for t in _leaves(i)]
    return []


def _same_values(a: torch.Tensor, e: torch.Tensor, where: str) -> None:
    if a.shape != e.shape or a.dtype != e.dtype:
        raise Different(f"{where}: {a.dtype}{list(a.shape)} != eager {e.dtype}{list(e.shape)}")
    r, t = TOLERANCES.get(e.dtype, (0, 0))
    if not torch.allclose(a.detach(), e.detach(), rtol=r, atol=t, equal_nan=True):
        raise Different(f"{where}: values differ from eager")


def _storage(t: torch.Tensor):
    return t.untyped_storage().data_ptr() if t.numel() else None


def _leafness(t: torch.Tensor):
    try:
        return t.is_leaf
    except RuntimeError as e:  # a view autograd invalidated (its base written in place in another grad mode)
        return f"raises {str(e)[:40]}"


def memory_facts(outs: list, args: list) -> list:
    """What the caller can observe about the memory of outputs (then inputs): per output its requires_grad,
    leafness, whether it is a view and of which output or input, strides and offset when it shares memory;
    per pair of tensors whether they are one object or share memory."""
    every = outs + [a for a in args if isinstance(a, torch.Tensor)]
    facts = []
    for i, o in enumerate(outs):
        base = o._base
        base_at = next((j for j, t in enumerate(every) if base is not None and t is base), None)
        shares = [j for j, t in enumerate(every) if j != i and _storage(o) is not None and _storage(t) == _storage(o)]
        # (strides of size-1 dims mean nothing; a compiled region's output may be a view of a buffer only it
        # holds, which no caller reaches: a view is compared when it views an output or input)
        strides = tuple(st if n > 1 else None for n, st in zip(o.shape, o.stride()))
        layout = (strides, o.storage_offset()) if shares or base_at is not None else None
        facts.append((f"output {i}", o.requires_grad, _leafness(o), base_at, layout))
    for i, t in enumerate(every):
        for j in range(i + 1, len(every)):
            u = every[j]
            facts.append((f"tensors {i},{j}", t is u, _storage(t) is not None and _storage(t) == _storage(u)))
    return facts


def compare(actual, args, expected, eager_args) -> None:
    """Raise Different where the jitted call's result or its effects on the inputs differ from eager's."""
    a_outs, e_outs = _leaves(actual), _leaves(expected)
    if type(actual) is not type(expected) or len(a_outs) != len(e_outs):
        raise Different(f"result structure {type(actual).__name__}/{len(a_outs)} != eager "
                        f"{type(expected).__name__}/{len(e_outs)}")
    for i, (a, e) in enumerate(zip(a_outs, e_outs)):
        _same_values(a, e, f"output {i}")
    for i, (a, e) in enumerate(zip(args, eager_args)):
        if isinstance(e, torch.Tensor):
            _same_values(a, e, f"input {i} after the call")
            if a.stride() != e.stride():
                raise Different(f"input {i} after the call: strides {a.stride()} != eager {e.stride()}")
    got, want = memory_facts(a_outs, args), memory_facts(e_outs, eager_args)
    for g, w in zip(got, want):
        if g != w:
            raise Different(f"{w[0]}: (requires_grad, leaf, base, layout) or (is, shares) {g[1:]} != eager {w[1:]}")


def probe_writes(actual, args, expected, eager_args) -> None:
    """Write into each output in turn (under no_grad) and compare everything after each write: which outputs
    and inputs see a write is the aliasing the caller observes."""
    a_outs, e_outs = _leaves(actual), _leaves(expected)
    every_a = a_outs + [a for a in args if isinstance(a, torch.Tensor)]
    every_e = e_outs + [a for a in eager_args if isinstance(a, torch.Tensor)]
    with torch.no_grad():
        for k, (a, e) in enumerate(zip(a_outs, e_outs)):
            errors = []
            for t in (e, a):
                try:
                    t.add_(1) if t.dtype != torch.bool else t.logical_not_()
                    errors.append(None)
                except Exception as err:  # noqa: BLE001 - eager's error (overlapping memory...) must be the jit's
                    errors.append(type(err).__name__)
            if errors[0] != errors[1]:
                raise Different(f"a write into output {k}: eager {errors[0] or 'ran'}, jitted {errors[1] or 'ran'}")
            for j, (x, y) in enumerate(zip(every_a, every_e)):
                _same_values(x, y, f"after a write into output {k}: tensor {j}")


def _grads(out, leaves):
    gen = torch.Generator().manual_seed(0)
    outs = [o for o in _leaves(out) if o.requires_grad]
    if not outs or not leaves:
        return None
    loss = sum((o * torch.randn(o.shape, generator=gen, dtype=o.dtype, device="cpu").to(o.device)).sum() for o in outs)
    return torch.autograd.grad(loss, leaves, allow_unused=True)


def _call(fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grad_mode = torch.is_grad_enabled()
        try:
            return fn(*args), None
        except Exception as e:  # noqa: BLE001 - eager's errors are part of what must match
            return None, e
        finally:
            torch.set_grad_enabled(grad_mode)


REFUSALS = (compiler.CompilerError,)


@dataclass
class Outcome:
    kind: str  # "same" | "wrong" | "crash" | "refused" | "eager error"
    detail: str = ""
    fallback: str = ""  # why the functional path ran the eager-order trace ("" when it did not)


def fallback_reason(jfn) -> str:
    """Why the last call of `jfn` ran in eager order on the functional path: the execution trace's header
    (decided when traced) or the plan's run-time check (decided per call), else ""."""
    entry = getattr(jfn, "last_entry", None)
    if entry is None:
        return ""
    header = entry.traces[-1].header if entry.traces else ""
    if "runs in eager order" in header:
        return header.split("not functionalized: ", 1)[-1].split("; runs in eager order")[0]
    reason = getattr(entry.computation, "last_eager_order_reason", None)
    return reason or ""


def check_program(program: Program, executors, cache: str = "constant values", calls: int = 2) -> Outcome:
    """The program jitted with `executors` against eager: `calls` calls on fresh inputs, then gradients and
    the write probe. Returns what happened; "wrong" is a silently different result."""
    jfn = compiler.jit(program.fn, executors=executors, cache=cache)
    fallback = ""
    for call in range(calls):
        eager_args, eager_leaves = program.make()
        expected, eager_error = _call(program.fn, eager_args)
        args, leaves = program.make()
        actual, error = _call(jfn, args)
        fallback = fallback or fallback_reason(jfn)
        if eager_error is not None:
            if error is None:
                return Outcome("wrong", f"call {call}: eager raised {eager_error!r}, jitted returned", fallback)
            return Outcome("eager error", repr(eager_error), fallback)
        if error is not None:
            kind = "refused" if isinstance(error, REFUSALS) else "crash"
            where = "" if kind == "refused" else " (raised at " + " <- ".join(
                f"{os.path.basename(f.filename)}:{f.lineno} {f.name}"
                for f in reversed(traceback.extract_tb(error.__traceback__)[-4:])) + ")"
            return Outcome(kind, f"call {call}: {type(error).__name__}: {str(error)[:300]}{where}", fallback)
        try:
            compare(actual, args, expected, eager_args)
            if call == calls - 1:
                e_grads, e_err = _call(_grads, (expected, eager_leaves))
                a_grads, a_err = _call(_grads, (actual, leaves))
                if (e_err is None) != (a_err is None):
                    raise Different(f"gradients: eager {e_err!r}, jitted {a_err!r}")
                if e_grads is not None:
                    for i, (g, w) in enumerate(zip(a_grads, e_grads)):
                        if (g is None) != (w is None):
                            raise Different(f"gradient of leaf {i}: None-ness differs from eager")
                        if w is not None:
                            _same_values(g, w, f"gradient of leaf {i}")
                probe_writes(actual, args, expected, eager_args)
        except Different as d:
            return Outcome("wrong", f"call {call}: {d}", fallback)
    return Outcome("same", "", fallback)
