"""Op samples for the compiler's differential suite (compiled vs eager PyTorch).

Each `OpSample` is a small Python function plus a recipe for its inputs. The recipe is rebuilt from a
fixed seed for every call, so eager and compiled runs get identical, fresh inputs with the same
*layout* (a `.clone()` would silently turn a transposed or expanded input contiguous, and whether a
reshape is a view or a copy depends on that layout).

Add one with `sample(op, fn, *specs, name=None, **options)`. A spec is `T(shape, dtype, layout, domain)`
(a tensor), `Index` (int64 indices), `Gen` (a seeded torch.Generator), `Same` (an earlier input, or a
view of it) or a plain Python value. Ids read `op-<inputs>`, e.g. `add-f32[3x4]T-f32[4]`, where a
trailing T/S/E marks a transposed/sliced/expanded input; `expect_error=True` says eager raises.

`KNOWN_GAPS` maps ids to what the compiler cannot do yet; the suite runs those as strict xfails, so an
entry must be removed the moment its case starts passing (ids of cases built in test_differential.py,
`hidden.*`, `random-*`, `group:<op>` for one jitted function fed every input of an op, and `prims:<id>` for
a sample run through its decompositions, are allowed too).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F

f32, f64, bf16, i64, b8 = torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.bool
_DTYPE_NAMES = {f32: "f32", f64: "f64", bf16: "bf16", i64: "i64", b8: "b8", torch.float16: "f16",
                torch.int32: "i32"}


# ---------------------------------------------------------------------------------------------------
# Input recipes
# ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class T:
    """A tensor input: logical shape, dtype, memory layout and value domain.

    layout: "contiguous"; "transposed" (last two dims swapped, ndim >= 2); "sliced" (every other
    element of the last dim); "expanded" (dim 0 broadcast from size 1, stride 0).
    domain: "normal" (randn, or ints in [-5, 5]); "positive" (> 0); "nonzero"; "unit" (in (0, 1)).
    """

    shape: tuple[int, ...]
    dtype: torch.dtype = f32
    layout: str = "contiguous"
    domain: str = "normal"

    def build(self, gen: torch.Generator) -> torch.Tensor:
        shape = tuple(self.shape)
        if self.layout == "contiguous":
            physical = shape
        elif self.layout == "transposed":
            assert len(shape) >= 2, "transposed layout needs ndim >= 2"
            physical = shape[:-2] + (shape[-1], shape[-2])
        elif self.layout == "sliced":
            assert len(shape) >= 1, "sliced layout needs ndim >= 1"
            physical = shape[:-1] + (2 * shape[-1],)
        elif self.layout == "expanded":
            assert len(shape) >= 1, "expanded layout needs ndim >= 1"
            physical = (1,) + shape[1:]
        else:
            raise ValueError(f"unknown layout {self.layout!r}")

        t = _values(physical, self.dtype, self.domain, gen)

        if self.layout == "transposed":
            t = t.transpose(-1, -2)
        elif self.layout == "sliced":
            t = t[..., ::2]
        elif self.layout == "expanded":
            t = t.expand(shape)
        assert t.shape == shape
        return t

    def describe(self) -> str:
        dims = "x".join(str(s) for s in self.shape) if self.shape else "0d"
        tag = {"contiguous": "", "transposed": "T", "sliced": "S", "expanded": "E"}[self.layout]
        return f"{_DTYPE_NAMES[self.dtype]}[{dims}]{tag}"


def _values(shape, dtype, domain, gen) -> torch.Tensor:
    if dtype == b8:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if not dtype.is_floating_point:
        if domain == "nonzero":  # both signs: floor and truncating division differ on negatives
            sign = torch.randint(0, 2, shape, generator=gen, dtype=dtype) * 2 - 1
            return torch.randint(1, 6, shape, generator=gen, dtype=dtype) * sign
        low, high = {"normal": (-5, 6), "positive": (1, 6), "unit": (0, 2)}[domain]
        return torch.randint(low, high, shape, generator=gen, dtype=dtype)
    if domain == "unit":
        t = torch.rand(shape, generator=gen) * 0.98 + 0.01
    else:
        t = torch.randn(shape, generator=gen)
        if domain == "positive":
            t = t.abs() + 0.25
        elif domain == "nonzero":
            t = torch.where(t >= 0, t + 0.25, t - 0.25)
    return t.to(dtype)


@dataclass(frozen=True)
class Index:
    """An int64 index tensor with values in [0, high); unique=True draws without repetition."""

    shape: tuple[int, ...]
    high: int
    unique: bool = False

    def build(self, gen: torch.Generator) -> torch.Tensor:
        if self.unique:
            n = 1
            for s in self.shape:
                n *= s
            return torch.randperm(self.high, generator=gen)[:n].reshape(self.shape)
        return torch.randint(0, self.high, self.shape, generator=gen)

    def describe(self) -> str:
        return "idx[" + "x".join(str(s) for s in self.shape) + "]"


@dataclass(frozen=True)
class Gen:
    """A fresh `torch.Generator` seeded with `seed` (random ops that take a generator)."""

    seed: int = 1234

    def build(self, gen: torch.Generator) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed)

    def describe(self) -> str:
        return "gen"


@dataclass(frozen=True)
class Same:
    """The earlier input `index` itself, or `view(that input)`: inputs that share memory."""

    index: int
    view: Callable | None = None
    view_name: str = ""

    def describe(self) -> str:
        return f"{self.view_name or 'same'}{self.index}"


def _describe(arg: Any) -> str:
    if isinstance(arg, (T, Index, Gen, Same)):
        return arg.describe()
    if isinstance(arg, torch.dtype):
        return _DTYPE_NAMES.get(arg, str(arg))
    if isinstance(arg, (list, tuple)):
        return "(" + ",".join(_describe(a) for a in arg) + ")"
    return repr(arg).replace(" ", "")


def _build(arg: Any, gen: torch.Generator) -> Any:
    if isinstance(arg, (T, Index, Gen)):
        return arg.build(gen)
    if isinstance(arg, list):
        return [_build(a, gen) for a in arg]
    if isinstance(arg, tuple):
        return tuple(_build(a, gen) for a in arg)
    return arg


# ---------------------------------------------------------------------------------------------------
# Samples
# ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OpSample:
    """One call of `fn` on inputs built from `specs`.

    compare: "values" (dtype, shape and values) or "meta" (dtype and shape only: torch.empty).
    expect_error: eager raises for these inputs; the compiled function must raise too.
    manual_seed: reseed torch's global RNG before each call (random ops on the default generator).
    rtol/atol: override the per-dtype tolerance.
    """

    id: str
    op: str
    fn: Callable
    specs: tuple
    compare: str = "values"
    expect_error: bool = False
    manual_seed: int | None = None
    rtol: float | None = None
    atol: float | None = None

    def make_args(self) -> tuple:
        gen = torch.Generator().manual_seed(zlib.crc32(self.id.encode()))
        args: list = []
        for spec in self.specs:
            if isinstance(spec, Same):
                base = args[spec.index]
                args.append(spec.view(base) if spec.view else base)
            else:
                args.append(_build(spec, gen))
        return tuple(args)


SAMPLES: list[OpSample] = []


def sample(op: str, fn: Callable, *specs: Any, name: str | None = None, **options: Any) -> None:
    """Register `fn(*specs)`; the id is `op` plus `name` or a description of the inputs."""
    sid = f"{op}-{name or '-'.join(_describe(s) for s in specs) or 'noargs'}"
    assert all(s.id != sid for s in SAMPLES), f"duplicate sample id {sid}"
    SAMPLES.append(OpSample(sid, op, fn, tuple(specs), **options))


# Shapes that every elementwise op sees: 0-d, empty, plain, and each non-contiguous layout.
UNARY_SHAPES = [
    T(()), T((0,)), T((5,)), T((2, 0, 3)), T((3, 4)),
    T((4, 3), layout="transposed"), T((3, 5), layout="sliced"), T((3, 4), layout="expanded"),
]
# (a, b) pairs covering broadcasting and layouts.
BINARY_SHAPES = [
    (T((3, 4)), T((3, 4))),
    (T((3, 4)), T((4,))),
    (T((4, 1)), T((1, 5))),
    (T(()), T((2, 3))),
    (T((0, 3)), T((3,))),
    (T((2, 1, 4)), T((3, 1))),
    (T((4, 3), layout="transposed"), T((4, 3))),
    (T((3, 4), layout="sliced"), T((3, 4), layout="expanded")),
]


# --- elementwise unary ------------------------------------------------------------------------------

# name -> (fn, domain, extra dtypes tried on a (3, 4) input besides float32)
UNARY_OPS: dict[str, tuple[Callable, str, tuple]] = {
    "abs": (torch.abs, "normal", (f64, bf16, i64)),
    "neg": (lambda x: -x, "normal", (f64, bf16, i64)),
    "exp": (torch.exp, "normal", (f64, bf16, i64, b8)),
    "log": (torch.log, "positive", (f64, bf16, i64)),
    "sqrt": (torch.sqrt, "positive", (f64, bf16)),
    "rsqrt": (torch.rsqrt, "positive", (f64, bf16)),
    "sin": (torch.sin, "normal", (f64, bf16, i64)),
    "cos": (lambda x: x.cos(), "normal", (f64, bf16)),
    "erf": (torch.erf, "normal", (f64, bf16)),
    "reciprocal": (torch.reciprocal, "nonzero", (f64, bf16)),
    "floor": (torch.floor, "normal", (f64, bf16, i64)),
    "ceil": (torch.ceil, "normal", (f64,)),
    "round": (torch.round, "normal", (f64,)),
    "sign": (torch.sign, "normal", (f64, i64)),
    "square": (torch.square, "normal", (f64, bf16, i64)),
    "pow2": (lambda x: x ** 2, "normal", (f64, bf16, i64)),
    "pow_half": (lambda x: torch.pow(x, 0.5), "positive", (f64, bf16)),
    "relu": (torch.relu, "normal", (f64, bf16, i64)),
    "F.relu": (F.relu, "normal", (f64,)),
    "tanh": (torch.tanh, "normal", (f64, bf16)),
    "sigmoid": (torch.sigmoid, "normal", (f64, bf16)),
    "F.gelu": (F.gelu, "normal", (f64, bf16)),
    "F.gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), "normal", (f64, bf16)),
    "F.silu": (F.silu, "normal", (f64, bf16)),
    "method.sigmoid": (lambda x: x.sigmoid(), "normal", ()),
    "method.relu": (lambda x: x.relu(), "normal", ()),
    "method.tanh": (lambda x: x.tanh(), "normal", ()),
    "clamp": (lambda x: torch.clamp(x, -0.5, 0.5), "normal", (f64, i64)),
    "clamp_min": (lambda x: x.clamp(min=0.1), "normal", (f64,)),
    "logical_not": (torch.logical_not, "normal", (b8, i64)),
    "bitwise_not_bool": (lambda x: ~x.bool(), "normal", ()),
}

for _name, (_fn, _domain, _dtypes) in UNARY_OPS.items():
    for _spec in UNARY_SHAPES:
        sample(_name, _fn, T(_spec.shape, f32, _spec.layout, _domain))
    for _dt in _dtypes:
        sample(_name, _fn, T((3, 4), _dt, "contiguous", _domain))
    # a 0-d input of the first extra dtype: 0-d tensors take part in type promotion differently
    if _dtypes:
        sample(_name, _fn, T((), _dtypes[0], "contiguous", _domain))

sample("bitwise_not", torch.bitwise_not, T((3, 4), i64))
sample("bitwise_not", torch.bitwise_not, T((3, 4), b8))
sample("bitwise_not", lambda x: ~x, T((4, 3), i64, "transposed"))


# --- elementwise binary: broadcasting and type promotion ------------------------------------------

BINARY_OPS: dict[str, tuple[Callable, str]] = {
    "add": (lambda a, b: a + b, "normal"),
    "torch.add_alpha": (lambda a, b: torch.add(a, b, alpha=2), "normal"),
    "sub": (lambda a, b: a - b, "normal"),
    "mul": (lambda a, b: a * b, "normal"),
    "div": (lambda a, b: a / b, "nonzero"),
    "div_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), "nonzero"),
    "floordiv": (lambda a, b: a // b, "nonzero"),
    "remainder": (lambda a, b: a % b, "nonzero"),
    "pow": (lambda a, b: torch.pow(a.abs() + 0.5, b), "normal"),
    "maximum": (torch.maximum, "normal"),
    "minimum": (torch.minimum, "normal"),
    "atan2": (torch.atan2, "nonzero"),
    "eq": (lambda a, b: a == b, "normal"),
    "ne": (lambda a, b: a != b, "normal"),
    "lt": (lambda a, b: a < b, "normal"),
    "le": (lambda a, b: torch.le(a, b), "normal"),
    "gt": (lambda a, b: a > b, "normal"),
    "ge": (lambda a, b: a.ge(b), "normal"),
    "logical_and": (torch.logical_and, "normal"),
    "logical_or": (torch.logical_or, "normal"),
}

for _name, (_fn, _domain) in BINARY_OPS.items():
    for _a, _b in BINARY_SHAPES:
        sample(_name, _fn, T(_a.shape, f32, _a.layout, _domain), T(_b.shape, f32, _b.layout, _domain))

# type promotion: (a dtype, b dtype) and 0-d tensors (which do not promote within a category)
PROMOTION_PAIRS = [
    (T((3, 4), f32), T((3, 4), f64)),
    (T((3, 4), i64), T((3, 4), f32)),
    (T((3, 4), b8), T((3, 4), i64)),
    (T((3, 4), bf16), T((3, 4), f32)),
    (T((3, 4), f32), T((), f64)),
    (T((3, 4), i64), T((), f32)),
    (T((3, 4), bf16), T((), f64)),
    (T((3, 4), i64), T((3, 4), i64)),
    (T((3, 4), bf16), T((3, 4), bf16)),
    (T((3, 4), f64), T((3, 4), f64)),
]
for _name in ["add", "sub", "mul", "div", "maximum", "lt", "eq", "floordiv", "remainder"]:
    _fn, _domain = BINARY_OPS[_name]
    for _a, _b in PROMOTION_PAIRS:
        if _name in ("sub",) and b8 in (_a.dtype, _b.dtype):
            continue  # eager refuses bool subtraction; covered once below as an error sample
        sample(_name, _fn, T(_a.shape, _a.dtype, domain=_domain), T(_b.shape, _b.dtype, domain=_domain))

sample("sub", lambda a, b: a - b, T((3,), b8), T((3,), b8), expect_error=True)
sample("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc"), T((3, 4), i64, domain="nonzero"),
       T((3, 4), i64, domain="nonzero"))
sample("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc"), T((3, 4), domain="nonzero"),
       T((3, 4), domain="nonzero"))
sample("div_by_zero_float", lambda a: (a / 0, a * 0 / 0, -a / 0.0), T((3,), domain="positive"))
sample("floordiv_int_by_zero", lambda a: a // torch.zeros_like(a), T((3,), i64), expect_error=True)
sample("pow_int_negative_exponent", lambda a: a ** -1, T((3,), i64, domain="positive"), expect_error=True)
sample("pow_int_tensor_exponent", lambda a, b: a ** b, T((3, 4), i64), T((3, 4), i64, domain="positive"))
sample("bitwise_and", lambda a, b: a & b, T((3, 4), i64), T((4,), i64))
sample("bitwise_or", lambda a, b: a | b, T((3, 4), b8), T((3, 4), b8))
sample("bitwise_xor", lambda a, b: a ^ b, T((3, 4), i64), T((3, 4), b8))

# Python numbers on either side: int keeps the tensor's dtype, float turns an int tensor float
SCALAR_CASES = [
    ("add_int", lambda a: a + 2),
    ("radd_float", lambda a: 1.5 + a),
    ("rsub_int", lambda a: 3 - a),
    ("mul_float", lambda a: a * 0.5),
    ("div_int", lambda a: a / 2),
    ("rdiv_float", lambda a: 1.0 / (a.abs() + 1)),
    ("pow_int", lambda a: a ** 3),
    ("rpow", lambda a: 2 ** a),
    ("lt_float", lambda a: a < 0.25),
    ("eq_int", lambda a: a == 1),
    ("mul_bool", lambda a: a * True),
]
for _name, _fn in SCALAR_CASES:
    for _t in (T((3, 4)), T((3, 4), i64), T((3, 4), bf16), T(()), T((4, 3), layout="transposed")):
        sample("scalar." + _name, _fn, _t)
sample("scalar.number_arg", lambda a, s: a * s + s, T((3, 4)), 0.75)
sample("scalar.number_arg", lambda a, s: a * s + s, T((3, 4), i64), 3)
sample("scalar.number_arg", lambda a, s: (a + s).sum(), T((2, 2)), 2.5, name="sum_f32")


# --- reductions -------------------------------------------------------------------------------------

REDUCTION_INPUTS = [T((3, 4)), T((2, 3, 4)), T((4, 3), layout="transposed"), T((3, 6), layout="sliced"),
                    T((3, 4), f64), T((3, 4), bf16)]
REDUCTIONS: dict[str, Callable] = {
    "sum": lambda x: x.sum(),
    "sum_dim": lambda x: torch.sum(x, 1),
    "sum_dim_neg_keepdim": lambda x: x.sum(-1, keepdim=True),
    "sum_dims": lambda x: x.sum((0, 1)),
    "sum_dtype": lambda x: x.sum(dtype=torch.float64),
    "mean": lambda x: x.mean(),
    "mean_dim": lambda x: torch.mean(x, dim=-1),
    "mean_keepdim": lambda x: x.mean(0, keepdim=True),
    "amax": lambda x: torch.amax(x, dim=-1),
    "amax_keepdim": lambda x: x.amax(0, keepdim=True),
    "max": lambda x: x.max(),
    "max_dim": lambda x: tuple(torch.max(x, dim=1)),
    "max_dim_fields": lambda x: (lambda r: (r.values, r.indices))(x.max(-1, keepdim=True)),
    "var": lambda x: x.var(),
    "var_dim": lambda x: torch.var(x, dim=-1),
    "var_correction0": lambda x: torch.var(x, 1, correction=0, keepdim=True),
    "var_unbiased_false": lambda x: x.var(0, unbiased=False),
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "F.softmax_dim0": lambda x: F.softmax(x, dim=0),
    "method.softmax": lambda x: x.softmax(1),
    "log_softmax": lambda x: torch.log_softmax(x, dim=-1),
    "F.log_softmax": lambda x: F.log_softmax(x, 0),
}
for _name, _fn in REDUCTIONS.items():
    for _t in REDUCTION_INPUTS:
        sample(_name, _fn, _t)

# integer and bool inputs: sum promotes to int64, mean refuses ints
sample("sum", lambda x: x.sum(), T((3, 4), i64))
sample("sum", lambda x: x.sum(), T((3, 4), b8))
sample("sum_dim", lambda x: torch.sum(x, 1), T((3, 4), b8))
sample("amax", lambda x: torch.amax(x, dim=-1), T((3, 4), i64))
sample("max", lambda x: x.max(), T((3, 4), i64))
sample("softmax", lambda x: torch.softmax(x, -1, dtype=torch.float64), T((3, 4)), name="dtype_kw")
sample("mean", lambda x: x.mean(), T((3, 4), i64), expect_error=True)
# 0-d and empty: sum of nothing is 0, mean of nothing is nan, max of nothing is an error
sample("sum", lambda x: x.sum(), T(()))
sample("sum", lambda x: x.sum(), T((0, 3)))
sample("sum_dim", lambda x: torch.sum(x, 1), T((0, 3)))
sample("sum_dim", lambda x: torch.sum(x, 0), T((0, 3)), name="f32[0x3]-over-empty")
sample("mean", lambda x: x.mean(), T((0,)))
sample("softmax", lambda x: torch.softmax(x, 0), T(()))
sample("softmax", lambda x: torch.softmax(x, -1), T((0, 3)))
sample("amax", lambda x: torch.amax(x, dim=0), T((0, 3)), expect_error=True)
sample("reduce_number_dim", lambda x, d: x.sum(d) + x.amax(d), T((3, 4)), 1)


# --- matmul / linear / bmm --------------------------------------------------------------------------

MATMUL_CASES = [
    (T((3, 4)), T((4, 5))),
    (T((4,)), T((4,))),
    (T((4,)), T((4, 5))),
    (T((3, 4)), T((4,))),
    (T((2, 3, 4)), T((4, 5))),
    (T((2, 1, 3, 4)), T((3, 4, 2))),
    (T((0, 4)), T((4, 5))),
    (T((3, 0)), T((0, 5))),
    (T((3, 4), layout="transposed"), T((4, 5), layout="transposed")),
    (T((3, 4), layout="sliced"), T((4, 5))),
    (T((3, 4), f64), T((4, 5), f64)),
    (T((3, 4), bf16), T((4, 5), bf16)),
    (T((3, 4), i64), T((4, 5), i64)),
]
for _a, _b in MATMUL_CASES:
    sample("matmul", lambda a, b: a @ b, _a, _b)
sample("matmul", torch.matmul, T((3, 4)), T((4, 5)), name="torch.matmul")
sample("mm", torch.mm, T((3, 4)), T((4, 5)))
sample("matmul", lambda a, b: a @ b, T((3, 4)), T((4, 5), f64), expect_error=True)

for _x, _w, _b in [
    (T((3, 4)), T((5, 4)), T((5,))),
    (T((2, 3, 4)), T((5, 4)), T((5,))),
    (T((4,)), T((5, 4)), T((5,))),
    (T((0, 4)), T((5, 4)), T((5,))),
    (T((3, 4), layout="sliced"), T((5, 4), layout="transposed"), T((5,))),
    (T((3, 4), f64), T((5, 4), f64), T((5,), f64)),
    (T((3, 4), bf16), T((5, 4), bf16), T((5,), bf16)),
]:
    sample("F.linear", F.linear, _x, _w, _b)
    sample("F.linear_nobias", lambda x, w, b: F.linear(x, w), _x, _w, _b)

for _a, _b in [(T((2, 3, 4)), T((2, 4, 5))), (T((2, 3, 4), layout="transposed"), T((2, 4, 5))),
               (T((0, 3, 4)), T((0, 4, 5))), (T((2, 3, 4), f64), T((2, 4, 5), f64)),
               (T((2, 3, 4), bf16), T((2, 4, 5), bf16))]:
    sample("bmm", torch.bmm, _a, _b)


# --- normalization ----------------------------------------------------------------------------------

for _x, _w in [(T((3, 8)), T((8,))), (T((2, 3, 8)), T((8,))), (T((8, 3), layout="transposed"), T((3,))),
               (T((3, 8), f64), T((8,), f64)), (T((3, 8), bf16), T((8,), bf16)), (T((0, 8)), T((8,)))]:
    _n = _x.shape[-1]
    sample("F.layer_norm", lambda x, w: F.layer_norm(x, (x.shape[-1],), w, w * 0.5, 1e-5), _x, _w)
    sample("F.layer_norm_noaffine", lambda x, w: F.layer_norm(x, x.shape[-1:]), _x, _w)
    sample("rms_norm_composed",
           lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w, _x, _w)
    sample("rms_norm_upcast",
           lambda x, w: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w,
           _x, _w)
    sample("F.rms_norm", lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6), _x, _w)
sample("F.layer_norm", lambda x: F.layer_norm(x, (2, 4)), T((3, 2, 4)), name="two_dims")


# --- dropout ----------------------------------------------------------------------------------------

for _t in (T((4, 5)), T((4, 5), f64), T((5, 4), layout="transposed"), T((0, 3))):
    sample("F.dropout_eval", lambda x: F.dropout(x, 0.5, training=False), _t)
    sample("F.dropout_train_p0", lambda x: F.dropout(x, 0.0, training=True), _t)
    # the default generator, reseeded before each call: eager and compiled must draw the same mask
    sample("F.dropout_train_seeded", lambda x: F.dropout(x, 0.25, training=True), _t, manual_seed=2024)
    # dropout spelled with an explicit generator (F.dropout takes none)
    sample("dropout_generator",
           lambda x, g: x * (torch.rand(x.shape, generator=g, dtype=x.dtype) >= 0.25) / 0.75, _t, Gen())
sample("dropout_bernoulli_generator",
       lambda x, g: x * torch.bernoulli(torch.full_like(x, 0.75), generator=g) / 0.75, T((4, 5)), Gen())
sample("F.dropout_train_p1", lambda x: F.dropout(x, 1.0, training=True), T((4, 5)))


# --- embedding --------------------------------------------------------------------------------------

for _idx, _w in [(Index((2, 5), 10), T((10, 4))), (Index((7,), 10), T((10, 4), f64)),
                 (Index((), 10), T((10, 4))), (Index((0,), 10), T((10, 4))),
                 (Index((3, 2), 10), T((10, 4), bf16)), (Index((2, 3), 10), T((10, 4), layout="transposed"))]:
    sample("F.embedding", F.embedding, _idx, _w)
sample("F.embedding", lambda i, w: F.embedding(i, w, padding_idx=0), Index((3, 4), 6), T((6, 3)),
       name="padding_idx")
sample("nn.Embedding_fn", lambda i, w: torch.embedding(w, i), Index((4,), 6), T((6, 3)))


# --- scaled_dot_product_attention -------------------------------------------------------------------

_Q = (2, 2, 5, 8)
for _dt in (f32, f64, bf16):
    sample("F.sdpa", F.scaled_dot_product_attention, T(_Q, _dt), T(_Q, _dt), T(_Q, _dt),
           **({"rtol": 2e-2, "atol": 2e-2} if _dt == bf16 else {}))
    sample("F.sdpa_causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
           T(_Q, _dt), T(_Q, _dt), T(_Q, _dt), **({"rtol": 2e-2, "atol": 2e-2} if _dt == bf16 else {}))
sample("F.sdpa_bool_mask",
       lambda q, k, v: F.scaled_dot_product_attention(
           q, k, v, attn_mask=torch.ones(5, 5, dtype=torch.bool).tril()),
       T(_Q), T(_Q), T(_Q))
sample("F.sdpa_float_mask", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
       T(_Q), T(_Q), T(_Q), T((5, 5)))
sample("F.sdpa_scale", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3),
       T(_Q), T(_Q), T(_Q))
sample("F.sdpa_3d_kv_len", lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
       T((3, 4, 8)), T((3, 6, 8)), T((3, 6, 2)))
sample("F.sdpa_noncontig",
       lambda q, k, v: F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                      is_causal=True),
       T((2, 5, 2, 8)), T((2, 5, 2, 8)), T((2, 5, 2, 8)))


# --- views ------------------------------------------------------------------------------------------

VIEW_INPUTS = [T((2, 3, 4)), T((2, 3, 4), layout="transposed"), T((2, 3, 4), layout="sliced"),
               T((2, 3, 4), i64), T((2, 3, 4), b8), T((2, 3, 4), bf16), T((2, 3, 4), layout="expanded")]
VIEW_OPS: dict[str, Callable] = {
    "reshape": lambda x: x.reshape(6, 4),
    "reshape_infer": lambda x: torch.reshape(x, (-1,)),
    "reshape_as": lambda x: x.reshape_as(torch.empty(4, 6)),
    "flatten": lambda x: x.flatten(),
    "flatten_range": lambda x: torch.flatten(x, 1),
    "permute": lambda x: x.permute(2, 0, 1),
    "permute_tuple": lambda x: torch.permute(x, (1, 2, 0)),
    "transpose": lambda x: x.transpose(0, 2),
    "transpose_neg": lambda x: torch.transpose(x, -1, -2),
    "mT": lambda x: x.mT,
    "expand": lambda x: x[:, :1].expand(2, 5, 4),
    "expand_new_dim": lambda x: x.expand(3, 2, 3, 4),
    "expand_minus1": lambda x: x[:1].expand(-1, -1, -1).expand(5, -1, -1),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "unsqueeze_neg": lambda x: torch.unsqueeze(x, -1),
    "squeeze": lambda x: x[:, :1].squeeze(),
    "squeeze_dim": lambda x: x[:, :1].squeeze(1),
    "squeeze_noop": lambda x: x.squeeze(0),
    "split": lambda x: x.split(2, dim=-1),
    "split_sizes": lambda x: torch.split(x, [1, 2], dim=1),
    "chunk": lambda x: x.chunk(3, -1),
    "unbind": lambda x: x.unbind(1),
    "narrow": lambda x: x.narrow(2, 1, 2),
    "view_chain": lambda x: x.transpose(0, 1).unsqueeze(0).squeeze(0).permute(2, 1, 0),
}
for _name, _fn in VIEW_OPS.items():
    for _t in VIEW_INPUTS:
        sample(_name, _fn, _t)

# .view needs compatible strides: fine on contiguous, an error on a transposed input
for _t in (T((2, 3, 4)), T((2, 3, 4), i64), T((2, 3, 4), bf16)):
    sample("view", lambda x: x.view(6, 4), _t)
    sample("view_infer", lambda x: x.view(-1, 2), _t)
sample("view_split_dim", lambda x: x.view(2, 3, 2, 2), T((2, 3, 4), layout="transposed"))
sample("view", lambda x: x.view(-1), T((3, 4), layout="transposed"), expect_error=True)
sample("view", lambda x: x.view(6, 4), T((2, 3, 4), layout="sliced"))  # sliced last dim: still viewable
sample("view", lambda x: x.view(6, 4), T((2, 3, 4), layout="expanded"), expect_error=True)
sample("view_dtype_keep", lambda x: x.view(x.shape[0], -1), T((4, 0, 3)))
sample("reshape", lambda x: x.reshape(0, 3), T((3, 0)))
sample("reshape", lambda x: x.reshape(()), T((1, 1)))
sample("reshape", lambda x: x.reshape(1, 1), T(()))
sample("reshape_shape_args", lambda x, a, b: x.reshape(a, b), T((2, 6)), 3, 4)
sample("flatten", lambda x: x.flatten(), T(()))
sample("unsqueeze", lambda x: x.unsqueeze(0), T(()))
sample("mT", lambda x: x.mT, T(()))  # eager returns a 0-d tensor unchanged
sample("split", lambda x: x.split(2), T((5,)))  # uneven last chunk
sample("chunk", lambda x: x.chunk(4), T((6,)))  # fewer chunks than asked
sample("unbind", lambda x: torch.unbind(x), T((0, 3)))


# --- metadata as results ----------------------------------------------------------------------------

sample("metadata", lambda x: (x.shape, x.size(), x.size(1), x.numel(), x.dim(), x.ndim, x.dtype, x.device),
       T((2, 3)))
sample("metadata", lambda x: (x.shape[-1], x.stride(), x.is_contiguous(), x.requires_grad),
       T((2, 3), layout="transposed"))
sample("metadata.shape_arith", lambda x: x.new_zeros(x.shape[0] * 2, x.shape[1] // 2) + x.numel(), T((2, 4)))


# --- structured results -----------------------------------------------------------------------------

sample("structure.dict", lambda x: {"double": x * 2, "parts": [x[0], (x[1], x.sum())]}, T((2, 3)))
sample("structure.none", lambda x: None, T((2, 3)))
sample("structure.number", lambda x: x.shape[0] * 2.5, T((2, 3)))
sample("structure.tuple_with_none", lambda x: (x + 1, None, 3), T((2, 3)))
sample("structure.input_and_view", lambda x: (x, x.view(-1), x), T((2, 3)))
sample("structure.list_of_inputs", lambda xs: torch.stack(xs).sum(0), [T((3,)), T((3,)), T((3,))])
sample("structure.tuple_arg", lambda pair: pair[0] * pair[1], (T((3,)), 2.0))


# --- getitem ----------------------------------------------------------------------------------------

GETITEM_INPUTS = [T((4, 5, 3)), T((4, 5, 3), layout="transposed"), T((4, 5, 3), i64), T((4, 5, 3), layout="expanded")]
GETITEM_CASES: dict[str, Callable] = {
    "int": lambda x: x[1],
    "neg_int": lambda x: x[-1],
    "two_ints": lambda x: x[1, 2],
    "all_ints": lambda x: x[1, 2, 0],
    "slice": lambda x: x[1:3],
    "slice_step": lambda x: x[::2],
    "slice_open": lambda x: x[:, 2:],
    "slice_neg": lambda x: x[:, -3:-1],
    "slice_out_of_range": lambda x: x[2:100],
    "slice_empty": lambda x: x[3:1],
    "int_slice": lambda x: x[0, 1:4:2],
    "none": lambda x: x[None],
    "none_middle": lambda x: x[:, None, 1],
    "ellipsis": lambda x: x[..., 0],
    "ellipsis_none": lambda x: x[1, ..., None],
    "tensor_index": lambda x: x[torch.tensor([0, 2, 3])],
    "list_index": lambda x: x[[3, 1]],
    "tensor_index_dim1": lambda x: x[:, torch.tensor([4, 0])],
    "two_tensor_indices": lambda x: x[torch.tensor([0, 1]), torch.tensor([2, 3])],
    "bool_mask": lambda x: x[x > 0],
    "index_arg": lambda x: x[torch.arange(2)],
}
for _name, _fn in GETITEM_CASES.items():
    for _t in GETITEM_INPUTS:
        sample("getitem." + _name, _fn, _t)
sample("getitem.index_input", lambda x, i: x[i], T((6, 3)), Index((4,), 6))
sample("getitem.index_input_2d", lambda x, i: x[i, 1:], T((6, 3)), Index((2, 2), 6))
sample("getitem.int_arg", lambda x, i: x[i] * 2, T((6, 3)), 4)
sample("getitem.out_of_range", lambda x: x[7], T((6, 3)), expect_error=True)
sample("getitem.0d_ellipsis", lambda x: x[...], T(()))
sample("getitem.0d_none", lambda x: x[None], T(()))


# --- cat / stack ------------------------------------------------------------------------------------

CAT_CASES = [
    ([T((2, 3)), T((4, 3))], 0),
    ([T((2, 3)), T((2, 1)), T((2, 2))], 1),
    ([T((2, 3)), T((0, 3))], 0),
    ([T((2, 3), layout="transposed"), T((2, 3), layout="sliced")], -1),
    ([T((2, 3)), T((2, 3), f64)], 0),
    ([T((2, 3), i64), T((2, 3), b8)], 1),
    ([T((2, 3), bf16), T((1, 3), bf16)], 0),
    ([T((3,))], 0),
]
for _ts, _dim in CAT_CASES:
    sample("cat", lambda *ts, dim=_dim: torch.cat(ts, dim=dim), *_ts, name=f"{_describe(tuple(_ts))}-dim{_dim}")
    if all(t.shape == _ts[0].shape for t in _ts):
        sample("stack", lambda *ts, dim=_dim: torch.stack(ts, dim), *_ts, name=f"{_describe(tuple(_ts))}-dim{_dim}")
sample("stack", lambda a, b: torch.stack([a, b], dim=-1), T((2, 3)), T((2, 3), layout="expanded"))
sample("stack", lambda a, b: torch.stack((a, b)), T(()), T(()))
sample("cat", lambda a, b: torch.cat([a, b]), T((2, 3)), T((2, 4)), expect_error=True)
sample("cat", lambda a: torch.cat([a, a * 2], 1), T((2, 2)), name="list_of_results")


# --- where / masked_fill ----------------------------------------------------------------------------

for _c, _a, _b in [(T((3, 4), b8), T((3, 4)), T((3, 4))),
                   (T((4,), b8), T((3, 4)), T((3, 1))),
                   (T((3, 4), b8), T((3, 4), i64), T((3, 4), f64)),
                   (T((3, 4), b8, "transposed"), T((3, 4), layout="sliced"), T(())),
                   (T((0, 4), b8), T((0, 4)), T((4,))),
                   (T((3, 4), b8), T((3, 4), bf16), T((3, 4), bf16))]:
    sample("where", torch.where, _c, _a, _b)
sample("where_scalar", lambda c, a: torch.where(c, a, 0.0), T((3, 4), b8), T((3, 4)))
sample("where_scalar", lambda c, a: torch.where(c, a, 1.5), T((3, 4), b8), T((3, 4), i64))
sample("where_scalar_both", lambda c: torch.where(c, 1.0, -1.0), T((3, 4), b8))
sample("where_method", lambda c, a, b: a.where(c, b), T((3, 4), b8), T((3, 4)), T((4,)))
sample("where_from_compare", lambda a: torch.where(a > 0, a, a * 0.1), T((3, 4)))

for _t, _m, _v in [(T((3, 4)), T((3, 4), b8), -1.0),
                   (T((3, 4)), T((4,), b8), float("-inf")),
                   (T((3, 4), i64), T((3, 4), b8), 7),
                   (T((3, 4), layout="transposed"), T((3, 4), b8), 0.0),
                   (T((3, 4), bf16), T((3, 4), b8), 2.5),
                   (T((0, 4)), T((0, 4), b8), 1.0)]:
    sample("masked_fill", lambda x, m, v: x.masked_fill(m, v), _t, _m, _v)
sample("masked_fill", lambda x, m: torch.masked_fill(x, m, torch.tensor(3.0)), T((3, 4)), T((3, 4), b8),
       name="0d_tensor_value")
sample("masked_fill_causal", lambda x: x.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), float("-inf")),
       T((2, 4, 4)))


# --- index_select / gather / scatter / index_copy ---------------------------------------------------

for _x, _dim, _i in [(T((5, 3)), 0, Index((4,), 5)), (T((5, 3)), 1, Index((2,), 3)),
                     (T((5, 3), layout="transposed"), 0, Index((3,), 5)), (T((5, 3), i64), 0, Index((0,), 5)),
                     (T((5, 3), bf16), -1, Index((5,), 3)), (T((5,)), 0, Index((), 5))]:
    sample("index_select", lambda x, i, d=_dim: torch.index_select(x, d, i), _x, _i, name=f"{_x.describe()}-dim{_dim}")
sample("index_select_method", lambda x, i: x.index_select(1, i), T((2, 4)), Index((3,), 4))

for _x, _dim, _i in [(T((3, 4)), 1, Index((3, 2), 4)), (T((3, 4)), 0, Index((2, 4), 3)),
                     (T((3, 4), layout="transposed"), -1, Index((3, 5), 4)), (T((3, 4), i64), 1, Index((3, 0), 4))]:
    sample("gather", lambda x, i, d=_dim: torch.gather(x, d, i), _x, _i, name=f"{_x.describe()}-dim{_dim}")
sample("gather_method", lambda x, i: x.gather(0, i), T((3, 4), f64), Index((1, 4), 3))
sample("gather_take_along", lambda x: x.gather(-1, x.argmax(-1, keepdim=True)), T((3, 4)))

# scatter indices are unique along the scattered dim: duplicate writes have no defined winner
sample("scatter", lambda x, i, s: torch.scatter(x, 0, i, s), T((4, 3)), Index((1, 3), 4, unique=True), T((2, 3)))
sample("scatter", lambda x, i, s: x.scatter(1, i, s), T((3, 5)), Index((1, 3), 5, unique=True), T((1, 4)))
sample("scatter_value", lambda x, i: x.scatter(1, i, -2.0), T((2, 5)), Index((1, 3), 5, unique=True))
sample("scatter", lambda x, i, s: x.scatter(0, i, s), T((4, 3), i64), Index((1, 3), 4, unique=True),
       T((1, 3), i64))
sample("scatter_add", lambda x, i, s: x.scatter_add(0, i, s), T((4, 3)), Index((5, 3), 4), T((5, 3)))

for _x, _dim, _i, _s in [(T((5, 3)), 0, Index((2,), 5, unique=True), T((2, 3))),
                         (T((3, 5)), 1, Index((3,), 5, unique=True), T((3, 3))),
                         (T((5, 3), layout="transposed"), 0, Index((2,), 5, unique=True), T((2, 3))),
                         (T((5, 3), i64), 0, Index((0,), 5), T((0, 3), i64))]:
    sample("index_copy", lambda x, i, s, d=_dim: torch.index_copy(x, d, i, s), _x, _i, _s,
           name=f"{_x.describe()}-dim{_dim}")
    sample("index_copy_", lambda x, i, s, d=_dim: x.index_copy_(d, i, s), _x, _i, _s,
           name=f"{_x.describe()}-dim{_dim}")


# --- creation ---------------------------------------------------------------------------------------

sample("zeros", lambda: torch.zeros(2, 3))
sample("zeros", lambda: torch.zeros((2, 3), dtype=torch.int64), name="dtype_i64")
sample("zeros", lambda: torch.zeros(0, 3), name="empty")
sample("zeros", lambda: torch.zeros(()), name="0d")
sample("zeros_add", lambda x: x + torch.zeros(x.shape[-1]), T((2, 3)))
sample("ones", lambda: torch.ones(4, dtype=torch.bfloat16))
sample("ones", lambda x: torch.ones(x.shape, dtype=x.dtype) * x, T((2, 3), f64))
sample("full", lambda: torch.full((2, 3), 1.5))
sample("full", lambda: torch.full((2, 3), 4), name="int_value_is_i64")
sample("full", lambda: torch.full((2,), True), name="bool_value")
sample("full", lambda v: torch.full((3,), v, dtype=torch.float64), 2.25)
sample("arange", lambda: torch.arange(5))
sample("arange", lambda: torch.arange(1, 10, 3), name="start_end_step")
sample("arange", lambda: torch.arange(0, 1, 0.25), name="float_step")
sample("arange", lambda: torch.arange(4, dtype=torch.float32), name="dtype")
sample("arange", lambda n: torch.arange(n), 6)
sample("arange", lambda: torch.arange(0), name="empty")
sample("arange", lambda x: x * torch.arange(x.shape[-1]), T((2, 4)), name="from_shape")
sample("empty", lambda: torch.empty(2, 3), compare="meta")
sample("empty", lambda: torch.empty((0, 2), dtype=torch.int64), compare="meta", name="i64_empty")
sample("empty_like", lambda x: torch.empty_like(x), T((2, 3), bf16), compare="meta")
sample("empty_then_fill", lambda x: torch.empty(x.shape).fill_(2.0) + x, T((2, 3)))
for _t in (T((4, 4)), T((3, 5)), T((2, 4, 4)), T((4, 4), i64), T((4, 4), b8), T((5, 4), layout="transposed"),
           T((0, 3))):
    sample("tril", torch.tril, _t)
    sample("triu", lambda x: torch.triu(x, 1), _t)
sample("tril", lambda x: x.tril(-1), T((4, 4)), name="method_diag-1")
sample("triu", lambda x: x.triu(diagonal=-2), T((4, 5)), name="method_diag-2")
for _t in (T((2, 3)), T((2, 3), i64), T((2, 3), bf16), T(()), T((3, 2), layout="transposed"), T((0, 2), b8)):
    sample("zeros_like", torch.zeros_like, _t)
    sample("ones_like", torch.ones_like, _t)
    sample("full_like", lambda x: torch.full_like(x, 3), _t)
    sample("rand_like_shape", lambda x: torch.zeros_like(x, dtype=torch.float64) + 1, _t)


# --- dtype and device conversions -------------------------------------------------------------------

CONVERSIONS: dict[str, Callable] = {
    "to_f64": lambda x: x.to(torch.float64),
    "to_dtype_kw": lambda x: x.to(dtype=torch.bfloat16),
    "to_i64": lambda x: x.to(torch.int64),
    "to_bool": lambda x: x.to(torch.bool),
    "float": lambda x: x.float(),
    "double": lambda x: x.double(),
    "half": lambda x: x.half(),
    "bfloat16": lambda x: x.bfloat16(),
    "long": lambda x: x.long(),
    "int": lambda x: x.int(),
    "bool": lambda x: x.bool(),
    "type": lambda x: x.type(torch.float64),
    "to_cpu": lambda x: x.to("cpu"),
    "to_device_obj": lambda x: x.to(torch.device("cpu")),
    "to_device_dtype": lambda x: x.to("cpu", torch.float64),
    "cpu": lambda x: x.cpu(),
    "to_other": lambda x: x.to(torch.zeros((), dtype=torch.int64)),
    "to_copy": lambda x: x.to(torch.float32, copy=True),
    "type_as": lambda x: x.type_as(torch.zeros(1, dtype=torch.float64)),
    "contiguous": lambda x: x.contiguous(),
}
for _name, _fn in CONVERSIONS.items():
    for _t in (T((2, 3)), T((2, 3), i64), T((2, 3), b8), T((2, 3), bf16), T((3, 2), f64, "transposed"), T(())):
        sample("convert." + _name, _fn, _t)
sample("convert.to_dtype_arg", lambda x, d: x.to(d) + 1, T((2, 3)), torch.float64)


# --- in-place ops -----------------------------------------------------------------------------------

INPLACE_TARGETS = [T((3, 4)), T((4, 3), layout="transposed"), T((3, 4), layout="sliced"), T((3, 4), f64),
                   T((3, 4), bf16), T(())]
INPLACE_OPS: dict[str, Callable] = {
    "add_": lambda x, y: x.add_(y),
    "add_alpha": lambda x, y: x.add_(y, alpha=-0.5),
    "add_scalar": lambda x, y: x.add_(2),
    "iadd": lambda x, y: x.__iadd__(y),
    "mul_": lambda x, y: x.mul_(y),
    "mul_scalar": lambda x, y: x.mul_(0.5),
    "copy_": lambda x, y: x.copy_(y),
    "zero_": lambda x, y: x.zero_(),
    "fill_": lambda x, y: x.fill_(1.25),
    "fill_0d_tensor": lambda x, y: x.fill_(torch.tensor(-2.0)),
    "masked_fill_": lambda x, y: x.masked_fill_(y > 0, -1.0),
}
for _name, _fn in INPLACE_OPS.items():
    for _t in INPLACE_TARGETS:
        _y = T(_t.shape[-1:] if _t.shape else (), f32)  # broadcasts onto the target
        sample("inplace." + _name, _fn, _t, _y)


def _augassign_add(x, y):
    x += y
    return x


def _augassign_mul(x, y):
    x *= y
    return x


def _augassign_sub_scalar(x):
    x -= 1
    return x


def _inplace_on_intermediate(x):
    y = x * 2
    y.add_(1)
    y.mul_(y)
    return y


def _inplace_returns_none_used(x):
    x.zero_()
    return x + 1


def _inplace_twice_then_read(x, y):
    x.add_(y)
    z = x * 2   # must see the first update
    x.mul_(3)
    return z, x


def _inplace_through_view_of_input(x):
    x[0].add_(10)   # writes through a view into the caller's tensor
    x.narrow(1, 1, 2).mul_(0)
    return x.sum()


def _inplace_on_transposed_view(x):
    x.t().mul_(2)
    return x


def _copy_broadcast_and_cast(x, y):
    x.copy_(y)      # y is int64 and broadcast along dim 0
    return x


for _t in (T((3, 4)), T((3, 4), layout="transposed"), T((3, 4), i64)):
    sample("inplace.augassign_add", _augassign_add, _t, T((4,), _t.dtype))
    sample("inplace.augassign_mul", _augassign_mul, _t, T((3, 1), _t.dtype))
    sample("inplace.augassign_sub_scalar", _augassign_sub_scalar, _t)
    sample("inplace.on_intermediate", _inplace_on_intermediate, _t)
    sample("inplace.result_unused", _inplace_returns_none_used, _t)
    sample("inplace.twice_then_read", _inplace_twice_then_read, _t, T((4,), _t.dtype))
    sample("inplace.through_view_of_input", _inplace_through_view_of_input, _t)
    sample("inplace.on_transposed_view", _inplace_on_transposed_view, _t)
sample("inplace.copy_cast", _copy_broadcast_and_cast, T((3, 4)), T((4,), i64))
sample("inplace.copy_cast", _copy_broadcast_and_cast, T((3, 4), i64), T((4,), f32), name="float_into_int")
sample("inplace.copy_", lambda x, y: x.copy_(y), T((3, 4), layout="sliced"), T((3, 4), layout="transposed"),
       name="noncontig_both")
sample("inplace.int_target_float_value", lambda x, y: x.add_(y), T((3, 4), i64), T((3, 4)), expect_error=True)
sample("inplace.expanded_target", lambda x: x.add_(1), T((3, 4), layout="expanded"), expect_error=True)
sample("inplace.broadcast_target", lambda x, y: x.add_(y), T((4,)), T((3, 4)), expect_error=True)
sample("inplace.zero_", lambda x: x.zero_(), T((3, 4), i64))
sample("inplace.fill_", lambda x: x.fill_(True), T((3, 4), b8))
sample("inplace.masked_fill_", lambda x, m: x.masked_fill_(m, 9), T((3, 4), i64), T((4,), b8))
sample("inplace.masked_fill_", lambda x, m: x.masked_fill_(m, 0.5), T((0, 4)), T((0, 4), b8))
sample("inplace.mul_", lambda x, y: x.mul_(y), T((3, 4), i64), T((3, 4), b8), name="bool_into_int")


def _setitem_int(x, v):
    x[1] = v
    return x


def _setitem_slice(x, v):
    x[:, 1:3] = v
    return x


def _setitem_scalar(x):
    x[0, 0] = 5.0
    x[-1] = 0
    return x


def _setitem_mask(x):
    x[x < 0] = 0.0
    return x


def _setitem_index_tensor(x, v):
    x[torch.tensor([0, 2])] = v
    return x


def _setitem_ellipsis_none(x, v):
    x[..., None, 0] = v
    return x


def _setitem_then_read(x):
    y = x.clone()
    y[0] = 100
    return y * 2


for _t in (T((3, 4)), T((3, 4), layout="transposed"), T((3, 4), i64), T((3, 4), bf16)):
    sample("setitem.int", _setitem_int, _t, T((4,), _t.dtype))
    sample("setitem.slice", _setitem_slice, _t, T((3, 1), _t.dtype))
    sample("setitem.scalar", _setitem_scalar, _t)
    sample("setitem.mask", _setitem_mask, _t)
    sample("setitem.index_tensor", _setitem_index_tensor, _t, T((2, 4), _t.dtype))
    sample("setitem.ellipsis_none", _setitem_ellipsis_none, _t, T((3, 1), _t.dtype))
    sample("setitem.then_read", _setitem_then_read, _t)
sample("setitem.number_value", _setitem_int, T((3, 4)), 2.5)
sample("setitem.cast_value", _setitem_int, T((3, 4), i64), T((4,)), name="float_into_int")


# --- reshape / flatten / view followed by an in-place op (seed 957) ---------------------------------
# Eager decides view-vs-copy from the input's strides: a contiguous input is written through, a
# transposed or sliced one is not. The compiled function must leave the caller's tensor exactly as
# eager does.

def _reshape_then_add_(x):
    y = x.reshape(-1)
    y.add_(1)
    return y


def _flatten_then_mul_(x):
    y = x.flatten()
    y.mul_(2)
    return y


def _reshape_as_then_setitem(x):
    y = x.reshape_as(torch.empty(x.numel()))
    y[0] = -7
    return y


def _reshape_then_zero_(x):
    x.reshape(-1, 2).zero_()
    return x


def _same_shape_reshape_then_zero_(x):
    x.reshape(x.shape).zero_()  # reshape to its own shape is always a view, whatever the strides
    return x


def _flatten_then_iadd(x):
    y = torch.flatten(x, 0)
    y += 3
    return y.sum()


def _view_then_fill_(x):
    y = x.view(-1)
    y.fill_(4.0)
    return x


def _contiguous_then_add_(x):
    y = x.contiguous()
    y.add_(1)
    return y


def _reshape_twice_then_copy_(x, v):
    y = x.reshape(2, -1).reshape(-1)
    y.copy_(v)
    return x


for _t in (T((3, 4)), T((4, 3), layout="transposed"), T((3, 4), layout="sliced"), T((3, 4), i64),
           T((3, 4), i64, "transposed"), T((1, 4), layout="transposed")):
    sample("reshape_inplace.reshape_add_", _reshape_then_add_, _t)
    sample("reshape_inplace.flatten_mul_", _flatten_then_mul_, _t)
    sample("reshape_inplace.reshape_as_setitem", _reshape_as_then_setitem, _t)
    sample("reshape_inplace.reshape_zero_", _reshape_then_zero_, _t)
    sample("reshape_inplace.same_shape_reshape_zero_", _same_shape_reshape_then_zero_, _t)
    sample("reshape_inplace.flatten_iadd", _flatten_then_iadd, _t)
    sample("reshape_inplace.contiguous_add_", _contiguous_then_add_, _t)
    sample("reshape_inplace.reshape_twice_copy_", _reshape_twice_then_copy_, _t,
           T((_t.shape[0] * _t.shape[1],), _t.dtype))
sample("reshape_inplace.view_fill_", _view_then_fill_, T((3, 4)))
sample("reshape_inplace.view_fill_", _view_then_fill_, T((4, 3), layout="transposed"), expect_error=True)


# --- aliasing: inputs that share memory, views kept across in-place ops, out= (seed 1193) ------------

def _write_a_read_b(a, b):
    a.add_(1)
    return b * 2      # sees the write when b aliases a


def _copy_into_a_then_read(a, b):
    a.copy_(b * 2)
    return a + b


def _view_taken_before_write(x):
    row = x[0]
    col = x.t()[1]
    x.mul_(2)
    return row + 0, col * 1  # both views must see the update


def _write_through_two_views(x):
    x[0].add_(1)
    x.t()[0].add_(10)  # overlaps the first write at x[0, 0]
    return x


def _swap_rows(x):
    tmp = x[0].clone()
    x[0] = x[1]
    x[1] = tmp
    return x


def _add_out(a, b, o):
    torch.add(a, b, out=o)
    return o


def _sum_out(x, o):
    return torch.sum(x, 0, out=o)


_ROW = (lambda t: t[0], "row")
_TRANSPOSED = (lambda t: t.t(), "transposed")
for _extra in ([T((3, 3))], [Same(0)], [Same(0, *_ROW)], [Same(0, *_TRANSPOSED)]):
    sample("alias.write_a_read_b", _write_a_read_b, T((3, 3)), *_extra)
    sample("alias.copy_into_a_then_read", _copy_into_a_then_read, T((3, 3)), *_extra)
sample("alias.write_a_read_b", _write_a_read_b, T((3, 3)), Same(0, lambda t: t[1:], "shifted"))  # partial overlap
sample("alias.write_a_read_b", _write_a_read_b, T((3, 3)), Same(0, lambda t: t.view(-1)[2:5], "flatslice"))
for _t in (T((3, 3)), T((3, 3), layout="transposed"), T((3, 3), i64)):
    sample("alias.view_taken_before_write", _view_taken_before_write, _t)
    sample("alias.write_through_two_views", _write_through_two_views, _t)
    sample("alias.swap_rows", _swap_rows, _t)
sample("out.add", _add_out, T((2, 3)), T((3,)), T((2, 3)))
sample("out.add", _add_out, T((2, 3)), T((3,)), Same(0), name="into_input")
sample("out.add", _add_out, T((2, 3)), T((3,)), T((2, 3), layout="transposed"), name="noncontig_out")
sample("out.sum", _sum_out, T((4, 3)), T((3,)))


# --- corner cases of the listed ops (legacy and rarely used paths eager still honours) ---------------

sample("corner.sum_empty_dim_list", lambda x: x.sum(dim=[]), T((2, 3)))        # reduces everything
sample("corner.sum_dim_tuple_keepdim", lambda x: x.sum((0, -1), keepdim=True), T((2, 3, 4)))
sample("corner.amax_dim_tuple", lambda x: x.amax((0, 2)), T((2, 3, 4), layout="transposed"))
sample("corner.amax_bool", lambda x: x.amax(0), T((3, 4), b8))
sample("corner.mean_dtype", lambda x: x.mean(-1, dtype=torch.float64), T((3, 4)))
sample("corner.var_dim_tuple", lambda x: x.var((0, 1), correction=2), T((3, 4, 2)))
sample("corner.var_single_element", lambda x: x.var(0), T((1, 3)))          # nan, with a warning
sample("corner.softmax_int", lambda x: torch.softmax(x, -1), T((3, 4), i64), expect_error=True)
sample("corner.gelu_int", lambda x: F.gelu(x), T((3, 4), i64), expect_error=True)
sample("corner.cat_legacy_empty_1d", lambda x: torch.cat([x, torch.empty(0)]), T((2, 3)))
sample("corner.cat_legacy_empty_first", lambda x: torch.cat([torch.empty(0), x], dim=1), T((2, 3)))
sample("corner.getitem_0d_tensor_index", lambda x: x[torch.tensor(1)], T((4, 3)))
sample("corner.getitem_none_then_index", lambda x: x[None, torch.tensor([2, 0])], T((4, 3)))
sample("corner.getitem_ellipsis_index", lambda x: x[..., torch.tensor([1, 1, 0])], T((2, 4, 3)))
sample("corner.getitem_split_advanced", lambda x: x[torch.tensor([0, 1]), :, torch.tensor([1, 2])], T((2, 4, 3)))
sample("corner.getitem_bool_scalar", lambda x: x[True], T((2, 3)))
sample("corner.getitem_negative_stop_step", lambda x: x[-1:0:-2] if False else x[-3::2], T((6, 2)))
sample("corner.squeeze_dims_tuple", lambda x: x.squeeze((0, 2)), T((1, 3, 1, 2)))
sample("corner.permute_negative", lambda x: x.permute(-1, 0, 1), T((2, 3, 4)))
sample("corner.flatten_negative_range", lambda x: x.flatten(-2, -1), T((2, 3, 4), layout="transposed"))
sample("corner.expand_as", lambda x, y: x.expand_as(y), T((3, 1)), T((2, 3, 4)))
sample("corner.narrow_negative_start", lambda x: x.narrow(0, -2, 2), T((5, 2)))
sample("corner.chunk_uneven_dim1", lambda x: x.chunk(3, 1), T((2, 7)))
sample("corner.split_sizes_args", lambda x, a, b: torch.split(x, [a, b]), T((5, 2)), 2, 3)
sample("corner.where_python_scalars", lambda c: torch.where(c, 1, 0.5), T((3,), b8))
sample("corner.where_int_scalars", lambda c: torch.where(c, 1, 0), T((3,), b8))
sample("corner.full_bf16", lambda: torch.full((2, 3), 1.1, dtype=torch.bfloat16))
sample("corner.arange_like", lambda x: torch.arange(x.shape[0], device=x.device, dtype=x.dtype) + x.sum(),
       T((4,), f64))
sample("corner.ones_on_device", lambda x: torch.ones(2, 3, device=x.device) * x, T((3,)))
sample("corner.empty_like_copy", lambda x: torch.empty_like(x).copy_(x), T((3, 4), layout="transposed"))
sample("corner.matmul_1d_3d", lambda a, b: a @ b, T((4,)), T((2, 4, 5)))
sample("corner.matmul_3d_1d", lambda a, b: a @ b, T((2, 5, 4)), T((4,)))
sample("corner.linear_1d_weight", lambda x, w: F.linear(x, w), T((3, 4)), T((4,)))
sample("corner.layer_norm_bias_only", lambda x, b: F.layer_norm(x, (4,), None, b), T((3, 4)), T((4,)))
sample("corner.bmm_int", torch.bmm, T((2, 3, 4), i64), T((2, 4, 2), i64))
sample("corner.embedding_max_norm", lambda i, w: F.embedding(i, w, max_norm=1.0) * 1, Index((5,), 6), T((6, 3)))

def _sdpa_has_gqa() -> bool:  # enable_gqa arrived in torch 2.5; the project allows torch >= 2.4
    try:
        F.scaled_dot_product_attention(torch.ones(1, 2, 1, 2), torch.ones(1, 1, 1, 2), torch.ones(1, 1, 1, 2),
                                       enable_gqa=True)
        return True
    except TypeError:
        return False


if _sdpa_has_gqa():
    sample("corner.sdpa_gqa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
           T((2, 4, 5, 8)), T((2, 2, 5, 8)), T((2, 2, 5, 8)))
sample("corner.sdpa_dropout", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5),
       T(_Q), T(_Q), T(_Q), manual_seed=11)
sample("corner.dropout_inplace_flag", lambda x: F.dropout(x * 1, 0.5, training=True, inplace=True), T((4, 5)),
       manual_seed=3)
sample("corner.masked_fill_0d_tensor_inplace", lambda x, m: x.masked_fill_(m, torch.tensor(2.5)), T((3, 4)),
       T((3, 4), b8))
sample("corner.index_copy_0d_index", lambda x, i, s: x.index_copy(0, i, s), T((4, 3)), Index((), 4), T((3,)),
       expect_error=True)
sample("corner.scatter_reduce_kw", lambda x, i, s: x.scatter(0, i, s, reduce="add"), T((4, 3)),
       Index((2, 3), 4), T((2, 3)))
sample("corner.setitem_broadcast_number_slice", _setitem_slice, T((3, 4)), 3)
sample("corner.tril_diag_arg", lambda x, k: torch.tril(x, k), T((4, 4)), -1)
sample("corner.to_same_dtype_returns_self", lambda x: x.to(torch.float32).add_(1), T((3, 4)))
sample("corner.to_copy_flag_then_write", lambda x: x.to(torch.float32, copy=True).add_(1), T((3, 4)))
sample("corner.float_on_float_returns_self", lambda x: x.float().mul_(2), T((3, 4)))


# --- Python around tensors: type checks, iteration, unpacking, branches on metadata -----------------

sample("python.isinstance_tensor", lambda x: x.sum() if isinstance(x, torch.Tensor) else x, T((3, 2)))
sample("python.isinstance_optional_arg", lambda x, y: x * (y if isinstance(y, torch.Tensor) else 2),
       T((3, 2)), T((3, 2)))
sample("python.type_is_tensor", lambda x: x.sum() if type(x) is torch.Tensor else x, T((3, 2)))
sample("python.torch_is_tensor", lambda x: x.sum() if torch.is_tensor(x) else x, T((3, 2)))
sample("python.isinstance_parameter", lambda x: x * 2 if isinstance(x, torch.nn.Parameter) else x, T((3, 2)))
sample("python.len", lambda x: x * len(x), T((3, 2)))
sample("python.iterate_rows", lambda x: sum(row for row in x), T((3, 2)))
sample("python.unpack_rows", lambda x: (lambda a, b, c: a + b * c)(*x), T((3, 2)))
sample("python.unpack_shape", lambda x: (lambda n, m: x.reshape(m, n))(*x.shape), T((3, 2)))
sample("python.enumerate_unbind", lambda x: [i * r for i, r in enumerate(x.unbind(0))], T((3, 2)))
sample("python.zip", lambda x: [a + b for a, b in zip(x, x.flip(0))], T((3, 2)))
sample("python.max_of_shape", lambda x: x * max(x.shape), T((3, 2)))
sample("python.math_on_shape", lambda x: x / math.sqrt(x.shape[-1]), T((3, 2)))
sample("python.branch_on_dtype", lambda x: x.double() if x.dtype == torch.float32 else x, T((3, 2)))
sample("python.branch_on_dtype", lambda x: x.double() if x.dtype == torch.float32 else x, T((3, 2), i64),
       name="i64")
sample("python.branch_on_contiguity", lambda x: x.view(-1) if x.is_contiguous() else x.reshape(-1), T((3, 2)))
sample("python.branch_on_contiguity", lambda x: x.view(-1) if x.is_contiguous() else x.reshape(-1),
       T((3, 2), layout="transposed"), name="transposed")
sample("python.branch_on_device", lambda x: x * 2 if x.device.type == "cpu" else x, T((3, 2)))
sample("python.branch_on_is_floating_point", lambda x: x * 2 if x.is_floating_point() else x - 1, T((3, 2), i64))
sample("python.element_size", lambda x: x * x.element_size(), T((3, 2), bf16))
sample("python.new_tensor", lambda x: x + x.new_tensor([1.0, 2.0]), T((3, 2)))
sample("python.torch_tensor_constant", lambda x: x + torch.tensor([1.0, 2.0]), T((3, 2)))
sample("python.as_tensor_number", lambda x: x + torch.as_tensor(2.0), T((3, 2), bf16))
sample("python.new_ones", lambda x: x.new_ones(2), T((3, 2), i64))


# one tensor passed twice: Python identity (is, id, dict keys, sets) must see one object, as in eager
def _is_same_object(a, b):
    return a * 2 if a is b else a - b


def _same_object_as_dict_key(a, b):
    return {a: 1.0, b: 2.0}[a] * a


def _same_object_in_set(a, b):
    return a * len({a, b})


def _same_object_in_list(a, b):
    return a * 2 if a in [b] else a  # `in` tries identity before ==


for _fn in (_is_same_object, _same_object_as_dict_key, _same_object_in_set, _same_object_in_list):
    # two distinct tensors: `in` falls back to == and eager refuses bool() of a 3-element tensor
    sample("python" + _fn.__name__, _fn, T((3,)), T((3,)), expect_error=_fn is _same_object_in_list)
    sample("python" + _fn.__name__, _fn, T((3,)), Same(0))


# --- ops outside the coverage list that write their inputs: batch norm's running statistics ----------

sample("F.batch_norm_train_updates_stats",
       lambda x, mean, var, w, b: F.batch_norm(x, mean, var, w, b, training=True, momentum=0.1),
       T((4, 3, 2)), T((3,)), T((3,), domain="positive"), T((3,)), T((3,)))
sample("F.batch_norm_eval", lambda x, mean, var: F.batch_norm(x, mean, var), T((4, 3)), T((3,)),
       T((3,), domain="positive"))


# --- grad mode and autocast changed inside the function --------------------------------------------

def _no_grad_inside(x):
    with torch.no_grad():
        y = x * 2
    return y + x, y


def _enable_grad_inside(x):
    with torch.enable_grad():
        return x * 3


def _set_grad_enabled_inside(x):
    torch.set_grad_enabled(False)
    y = x * 2
    torch.set_grad_enabled(True)
    return y, x * 2


def _detach_inside(x):
    return x.detach() * x


def _fresh_leaf_inside(x):
    return x.detach().clone().requires_grad_() * 2


def _autocast_inside(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return x @ x.mT


for _fn in (_no_grad_inside, _enable_grad_inside, _set_grad_enabled_inside, _detach_inside, _fresh_leaf_inside,
            _autocast_inside):
    sample("context" + _fn.__name__, _fn, T((3, 4)))


# --- Python numbers as arguments: "constant values" caching must tell apart every value eager does ----

def _divide_by_number(x, s):
    return x / s


def _scale_by_number(x, s):
    return x * s


for _value in (0.0, -0.0, 1.0, float("inf"), float("-inf"), float("nan"), 2 ** 62):
    sample("numbers.divide_by", _divide_by_number, T((3,)), _value)
for _value in (1, 1.0, True, 0, 0.0, False):  # equal as numbers, not as types: results differ in dtype
    sample("numbers.scale_int_tensor_by", _scale_by_number, T((3,), i64), _value, name=f"{type(_value).__name__}-{_value}")


# --- traps for trace passes: CSE must not merge across writes or random draws, DCE must keep writes
# and the RNG draws whose results are unused (they advance the generator) ------------------------------

def _same_expr_across_write(x):
    before = x + 1
    x.add_(1)
    after = x + 1   # equal text, different value
    return before, after


def _write_result_discarded(x):
    x.mul_(2)


def _write_through_dead_view(x):
    x.view(-1).add_(1)
    return x * 1


def _two_draws(x):
    return torch.rand_like(x) + torch.rand_like(x) * 10


def _two_dropouts(x):
    return F.dropout(x, 0.5) - F.dropout(x, 0.5)


def _unused_draw(x):
    torch.rand(3)                # result unused, but the generator advances
    return torch.rand_like(x)


def _unused_dropout(x):
    F.dropout(x, 0.5)
    return F.dropout(x, 0.5)


def _randn_and_randint(x):
    return torch.randn(x.shape) * x, torch.randint(0, 10, (4,))


for _t in (T((3, 4)), T((3, 4), i64)):
    sample("passes.same_expr_across_write", _same_expr_across_write, _t)
    sample("passes.write_result_discarded", _write_result_discarded, _t)
    sample("passes.write_through_dead_view", _write_through_dead_view, _t)
for _fn in (_two_draws, _two_dropouts, _unused_draw, _unused_dropout, _randn_and_randint):
    sample("passes.rng" + _fn.__name__, _fn, T((3, 4)), manual_seed=7)


# ---------------------------------------------------------------------------------------------------
# What the compiler cannot do yet (sample id -> reason). Strict xfails: delete an entry as soon as
# its sample passes.
# ---------------------------------------------------------------------------------------------------

KNOWN_GAPS: dict[str, str] = {}

SAMPLES_BY_ID = {s.id: s for s in SAMPLES}
# random-*, hidden.*, group:* and prims:* name cases that test_differential.py builds itself
assert set(KNOWN_GAPS) <= set(SAMPLES_BY_ID) | {k for k in KNOWN_GAPS if k.startswith(("random-", "hidden.", "group:", "prims:"))}, \
    f"KNOWN_GAPS names unknown samples: {sorted(set(KNOWN_GAPS) - set(SAMPLES_BY_ID))}"
