"""Random programs for the differential fuzzer: generation, one program's run against eager, minimization.

A program is a Python function of tensors (contiguous, transposed, sliced, expanded, or aliasing an earlier
argument: the same object, a view of it, an overlapping window of one base), an int `n` and a float `s`. Its
body mixes views, in-place ops on arguments and on views of them (metadata ones too: `t_`, `unsqueeze_`),
data-dependent branches and reads (`if a.sum() > 0:`, `.item()`, `x[x > 0]`, `nonzero`), loops over `n` and
over sizes, shape reads, `split` unpacking, writes to module-level state (a list appended to, a dict, a
counter, a global tensor changed in place), conditional raises, and returns of every shape (None, a tensor,
tuples, lists, dicts, numbers, sizes, an argument itself, the global list).

Each statement is drawn from templates and kept only if the program so far still runs eagerly on the first
call's inputs; later calls get new values, new sizes and other layouts, where eager may raise (then the
compiled call must raise the same exception type). `check(program, mode)` runs one jitted function over that
call sequence, each call against eager on identical, separate inputs and module state, and returns a Verdict:
"ok", "refused" (a CompilerError: allowed, counted by message and by whether eager raised there too), "wrong"
(a silently different result: values, dtypes, shapes, strides of arguments left behind, aliasing, identity,
module state, gradients, exception type) or "crash" (an exception that is not a refusal where eager ran, or a
hang).

Used by bench/fuzz.py (long runs) and test_fuzz_shard.py (a fixed-seed shard).
"""
from __future__ import annotations

import dataclasses
import linecache
import random
import re
import signal
import threading

import torch
import torch.nn.functional as F

import compiler
from compiler.interpreter import InterpreterError
from opinfos import T
from proxy_sweep import proxies_reachable
from same_values import tensors_in

MODES = ("constant values", "symbolic values", "no caching")

# ---------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------

DIMS = ("A", "B", "C")


@dataclasses.dataclass(frozen=True)
class Arg:
    """A tensor argument: its shape in dim names (sizes change per call), dtype and layout; or an alias of
    an earlier argument (`of`): "same" (that object), a view `view` of it ("{x}.t()"), or "window": this
    argument and argument `of` are overlapping windows base[:-1] and base[1:] of one tensor."""
    shape: tuple = ()
    dtype: torch.dtype = torch.float32
    layout: str = "contiguous"
    of: int | None = None
    alias: str = ""  # "same", "view", "window"
    view: str = ""


def _sizes(rng: random.Random, allow_small: bool) -> dict:
    pool = [2, 3, 4, 5] + ([1, 1, 6] if allow_small else [])
    return {d: rng.choice(pool) for d in DIMS}


def build_args(args: list[Arg], sizes: dict, data_seed: int, layouts: bool = True, grad: bool = False):
    """Fresh arguments for one call (identical for the same inputs): tensors, then n and s are added by the
    caller. grad: float tensors are clones of leaves that require grad (returned as the second value)."""
    gen = torch.Generator().manual_seed(data_seed)
    built, leaves, bases = [], [], {}
    for i, a in enumerate(args):
        if a.of is None:
            shape = tuple(sizes[d] if isinstance(d, str) else d for d in a.shape)
            layout = a.layout if layouts else "contiguous"
            if layout == "transposed" and len(shape) < 2 or layout in ("sliced", "expanded") and not shape:
                layout = "contiguous"
            t = T(shape, a.dtype, layout).build(gen)
            if grad and t.dtype.is_floating_point:
                # a clone of a leaf that requires grad (so in-place ops on it are legal), with t's layout
                physical = t._base if t._base is not None else t
                leaf = physical.detach().requires_grad_()
                leaves.append(leaf)
                t = leaf.clone().as_strided(t.shape, t.stride(), t.storage_offset())
            if t.dim() and t.shape[0] and any(b.alias == "window" and b.of == i for b in args):
                # this argument is base[:-1] of a base one longer in dim 0; the window argument is base[1:]
                bases[i] = torch.cat([t, t[:1] * 0.5])
                t = bases[i][:-1]
            built.append(t)
        elif a.alias == "same":
            built.append(built[a.of])
        elif a.alias == "window":
            base = bases.get(a.of)
            built.append(base[1:] if base is not None else built[a.of])
        else:
            try:
                built.append(eval(a.view.format(x="x"), {"torch": torch}, {"x": built[a.of]}))
            except (RuntimeError, IndexError):  # not a view these sizes allow: the argument itself
                built.append(built[a.of])
    return built, leaves


# ---------------------------------------------------------------------------------------------------
# Module-level state each program sees (a fresh copy per run: eager and compiled never share it)
# ---------------------------------------------------------------------------------------------------

def fresh_state() -> dict:
    return {"LOG": [], "STATE": {}, "COUNTER": [0], "G": torch.arange(4.0) - 1.5, "THRESHOLD": 0.25,
            "SEEN": {1, 2}}


STATE_NAMES = ("LOG", "STATE", "COUNTER", "G", "THRESHOLD", "SEEN", "NET")

# Module-level code every program's namespace runs first: a module the programs call and change, and a
# helper function with a default.
PRELUDE = """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.0
        self.register_buffer("offset", torch.tensor(0.5))
        self.register_parameter("w", torch.nn.Parameter(torch.tensor(1.5), requires_grad=False))
        self.calls = 0

    def forward(self, x):
        return x * self.scale * self.w + self.offset


NET = Net()


def helper(t, k=1.5):
    return t * k + len(SEEN)
"""

# Changes of the module state between two calls (run in eager's and the compiled side's namespace alike):
# every one must be seen by the next compiled call (a guard) or not matter.
MUTATIONS = ["THRESHOLD = THRESHOLD + 0.5", "SEEN.add(len(SEEN) + 10)", "helper.__defaults__ = (helper.__defaults__[0] + 1,)",
             "NET.scale = NET.scale + 1", "G.add_(1)", "G = G * 2", "LOG.clear()", "NET.train(not NET.training)",
             "NET.offset.fill_(-1.0)", "STATE.clear()", "NET.calls = 0", "COUNTER[0] = 7",
             "NET._parameters['w'] = torch.nn.Parameter(torch.tensor(-2.0), requires_grad=False)",
             "NET.forward = (lambda x: x - 1)", "vars(NET).pop('forward', None)", "helper.flag = True"]


# ---------------------------------------------------------------------------------------------------
# Statement templates. {a} {b}: tensor variables; {d} {e}: dims of {a}; {v}: the new variable; {k}: an int
# variable; {n} {s}: the number arguments (their names).
# ---------------------------------------------------------------------------------------------------

UNARY = ["{a}.sin()", "torch.relu({a})", "{a}.abs()", "-{a}", "{a} * 2", "{a}.float()", "{a}.double()",
         "{a}.to(torch.float64)", "{a}.clone()", "{a}.contiguous()", "torch.sigmoid({a})", "{a}.exp()",
         "F.softmax({a}, dim={d})", "{a}.type(torch.float32)", "torch.tanh({a})", "{a}.pow(2)",
         "{a} / ({a}.abs() + 1)", "{a}.cumsum({d})", "torch.clamp({a}, -0.5, 0.5)", "{a}.sign()",
         "torch.zeros_like({a})", "{a}.new_ones({a}.shape)", "{a}.bool()", "{a}.long()", "{a} > 0",
         "{a}.float() * {s}", "{a}.flip({d})", "{a}.roll(1, {d})", "{a}.tril()", "{a}.half().float()",
         "torch.tensor([1.0, 2.0]) * {a}.sum()", "{a}.new_tensor([{s}, 1.0])", "torch.full_like({a}, {s})"]
BINARY = ["{a} + {b}", "{a} * {b}", "{a} - {b}", "torch.maximum({a}, {b})", "torch.where({a} > 0, {a}, {b})",
          "{a} @ {b}", "{a} @ {b}.mT", "{a} + {s}", "{a} * {n}", "{a} ** 2 + {b}", "torch.cat([{a}, {b}], {d})",
          "torch.stack([{a}, {b}])", "{a} > {b}", "({a} + {b}).mean({d})", "torch.add({a}, {b}, alpha={s})",
          "{a}.expand_as({b}) + {b}", "torch.cat([{a}.flatten(), {b}.flatten()])", "{a}.new_zeros({n}, 2)",
          "torch.ones({n}, {a}.shape[{d}]) + {a}.sum()"]
REDUCE = ["{a}.sum()", "{a}.sum({d})", "{a}.mean({d}, keepdim=True)", "{a}.amax({d})", "{a}.argmax()",
          "{a}.norm()", "{a}.max({d}).values", "{a}.sum({d}, keepdim=True)", "{a}.prod({d})", "{a}.min()",
          "{a}.float().var()", "{a}.any()", "{a}.count_nonzero()"]
VIEW = ["{a}.t()", "{a}.transpose({d}, {e})", "{a}.view(-1)", "{a}.reshape(-1)", "{a}.flatten()", "{a}[0]",
        "{a}[:, 1:]", "{a}[..., ::2]", "{a}.unsqueeze({d})", "{a}.squeeze()", "{a}.narrow({d}, 0, 1)",
        "{a}.select({d}, -1)", "{a}.expand(2, *{a}.shape)", "{a}.diagonal()", "{a}.unbind({d})[0]",
        "{a}.split(2, {d})[0]", "{a}.chunk(2)[-1]", "{a}.permute(*reversed(range({a}.dim())))",
        "{a}.view_as({a})", "{a}.detach()", "{a}.reshape({a}.shape[0], -1)", "{a}[1:-1]", "{a}.movedim(0, -1)",
        "{a}[{a}.shape[0] - 1]", "{a}.view({a}.shape[-1], -1)", "{a}[:, None]", "{a}.reshape_as({a})",
        "{a}.contiguous().view(-1)", "{a}.mT", "{a}[-1:]", "{a}.as_strided((2,), (1,))"]
INPLACE = ["{a}.add_({b})", "{a}.mul_({s})", "{a}.zero_()", "{a}.fill_({s})", "{a}.copy_({b})",
           "{a}.clamp_(min=0)", "{a}[0] = {s}", "{a}[{a} > 0] = 0", "{a} += {b}", "{a} *= {n}", "{a}.t_()",
           "{a}.transpose_(0, -1)", "{a}.unsqueeze_(0)", "{a}.squeeze_()", "{a}.relu_()", "{a}.sin_()",
           "{a}.abs_()", "{a}.neg_()", "{a}.masked_fill_({a} < 0, {s})", "{a}.div_(2)",
           "{a}.sub_({b}, alpha=2)", "{a}.addcmul_({b}, {b})", "{a}.swapdims_(0, -1)", "{a}[..., 0] += 1",
           "{a}.resize_({a}.numel()).fill_(1)", "{a}.resize_(2, 1).fill_(0.5)", "{a}.index_fill_(0, torch.tensor([0]), {s})",
           "{a}.reshape(-1).add_(1)", "{a}.view(-1)[0] = 5", "{a}.flatten().mul_(2)", "{a}.detach().zero_()",
           "{a}.t().add_(1)", "{a}[1:].mul_(-1)", "{a}.unsqueeze(0).add_({s})", "{a}.set_({b})"]
READ_NUMBER = ["{k} = {a}.sum().item()", "{k} = int({a}.argmax())", "{k} = {a}.numel()", "{k} = {a}.shape[{d}]",
               "{k} = len({a})", "{k} = {a}.dim()", "{k} = float({a}.mean())", "{k} = int(({a} > 0).sum())",
               "{k} = {a}.size({d}) * {n}", "{k} = bool({a}.any())", "{k} = {a}.tolist()[0]",
               "{k} = {a}.max().item() > {s}", "{k} = {a}.stride(0)", "{k} = {a}.is_contiguous()"]
USE_NUMBER = ["{a} * {k}", "{a} + {k}", "{a}.view({k2}, -1)", "torch.full(({k2},), {k})", "{a}[:{k2}]",
              "{a}.sum() * {k}", "torch.arange({k2}) * 1.0", "{a}.split({k2})[0]", "{a}.expand({k2}, *{a}.shape)"]
VALUE_SIZED = ["{a}[{a} > 0]", "torch.nonzero({a})", "{a}.masked_select({a} > {s})", "{a}[{a} > {s}] * 2",
               "{a}.flatten()[{a}.flatten() < 0]", "{a}[{a}.abs() > 0.5].sum()", "torch.unique({a})"]
UNPACK = ["{v}, {w} = {a}.split(2, {d})", "{v}, {w} = {a}.chunk(2)", "{v}, *{w} = {a}.unbind({d})",
          "{v}, {w} = {a}.shape[0], {a}", "{v}, {w} = {a}.max({d})", "{v}, {w} = torch.sort({a})",
          "{v}, {w} = {a}.split([1, {a}.shape[{d}] - 1], {d})"]
STATE = ["LOG.append({a})", "LOG.append({a}.sum().item())", "STATE['k'] = {a}", "COUNTER[0] += 1",
         "{v} = {a} * G.sum()", "G.add_(1)", "{v} = {a} + len(LOG)", "LOG.append({a}.sin())",
         "STATE['n'] = STATE.get('n', 0) + 1", "{v} = {a} * THRESHOLD", "LOG.extend([{a}, {b}])",
         "{v} = {a} + (LOG[-1] if LOG and torch.is_tensor(LOG[-1]) and LOG[-1].shape == {a}.shape else 0)"]
MODULE = ["{v} = NET({a})", "NET.calls += 1", "{v} = NET({a}) if NET.training else {a}", "{v} = helper({a})",
          "{v} = helper({a}, 2.0)", "{v} = {a} * (2 if getattr(helper, 'flag', False) else 1)",
          "{v} = {a} + (1 if 3 in SEEN else 0) + len(SEEN)", "NET.last = {a}", "NET.seen = {a}.sum().item()",
          "{v} = {a} * NET.w", "{v} = list(NET.parameters())[0] * {a}", "NET.offset.add_(1)",
          "{v} = {a} + NET.offset", "SEEN.add({a}.shape[0])"]
RANDOM = ["{v} = F.dropout({a}, 0.5, training=True)", "{v} = torch.randn_like({a}) + {a}", "{v} = torch.rand({n}, 2)",
          "{v} = {a} * torch.bernoulli(torch.full_like({a}, 0.5))"]
# blocks that catch an error eager raises for some sizes
TRY = [("{v} = {a}.view(-1, 3)", "{v} = {a} * 1"), ("{v} = {a}[4]", "{v} = {a}.sum()"),
       ("{v} = {a} @ {b}", "{v} = {a} + 1"), ("{v} = {a}.reshape(2, -1)", "{v} = {a}.flatten()")]
# reassignments and in-place ops that keep a variable's shape: safe in a branch or loop body
BODY = ["{a} = {a} * 2 + 1", "{a} = {a}.sin()", "{a}.mul_({s})", "{a}.add_(1)", "{a} = {a} + {i}",
        "{a} = torch.where({a} > 0, {a}, -{a})", "{a}.clamp_(max=1)", "{a} = {a} - {a}.mean()", "{a}.neg_()",
        "LOG.append({a}.sum())", "COUNTER[0] += 1"]
CONDITIONS = ["{a}.sum() > 0", "({a} > 0).any()", "{a}.max().item() > {s}", "bool({a}.mean() < 0)",
              "{a}.shape[0] > 2", "{n} > 1", "{a}.numel() > 6", "float({a}.abs().sum()) > {s}", "{a}.is_contiguous()",
              "len(LOG) > 1", "{a}.dim() == 2", "{a}[0].sum() < {s}"]
RETURNS = ["return {v}", "return {v}, {w}", "return [{v}, {w}]", "return {{'x': {v}, 'y': {w}}}", "return None",
           "return", "return {v}.shape", "return {v}.sum().item()", "return {x}", "return {v}, ({w}, {k})",
           "return LOG", "return {v}, {v}", "return {k}", "return ({v},)", "return {x}, {v}",
           "return {v}, LOG", "return {w}.tolist()", "return {{'n': {k}, 't': [{v}]}}", "return {v}.dtype",
           "return {v}, None", "return {x}.shape, {x}.stride()"]


@dataclasses.dataclass
class Program:
    seed: int
    args: list
    lines: list  # (indent, text)
    grad: bool = False
    first_sizes: dict = dataclasses.field(default_factory=dict)
    mutations: tuple = ()  # (call index, code): run in both namespaces before that call

    @property
    def source(self) -> str:
        params = ", ".join([f"a{i}" for i in range(len(self.args))] + ["n", "s"])
        body = "".join("    " * (1 + indent) + text + "\n" for indent, text in self.lines) or "    pass\n"
        return f"def program({params}):\n{body}"

    def function(self, state: dict):
        """The program as a function whose module state is `state` (its own copy)."""
        filename = f"<fuzz-program-{self.seed}-{abs(hash(self.source)) % 10**8}>"
        source = self.source
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace = {"torch": torch, "F": F, **state}
        exec(compile(PRELUDE, "<fuzz-prelude>", "exec"), namespace)
        exec(compile(source, filename, "exec"), namespace)
        return namespace["program"], namespace


# ---------------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------------

def _random_args(rng: random.Random) -> list[Arg]:
    args: list[Arg] = []
    for _ in range(rng.randint(1, 3)):
        if args and rng.random() < 0.3:  # an alias of an earlier tensor argument
            j = rng.randrange(len(args))
            if args[j].of is not None:
                j = args[j].of
            kind = rng.choice(["same", "view", "view", "window"])
            if kind == "window" and any(a.alias == "window" and a.of == j for a in args):
                kind = "same"
            view = rng.choice(["{x}.t()", "{x}[1:]", "{x}[0]", "{x}.view(-1)", "{x}.unsqueeze(0)", "{x}[..., :1]",
                               "{x}.diagonal()", "{x}.expand(2, *{x}.shape)"])
            args.append(Arg(args[j].shape, args[j].dtype, of=j, alias=kind, view=view))
            continue
        ndim = rng.choice([0, 1, 2, 2, 2, 3])
        shape = tuple(rng.choice(DIMS) for _ in range(ndim))
        if ndim >= 2 and rng.random() < 0.6:  # matching dims make more binary ops valid
            shape = tuple(DIMS[:ndim]) if rng.random() < 0.5 else shape
        if args and rng.random() < 0.5:
            shape = args[0].shape[rng.randint(0, len(args[0].shape)):] if args[0].of is None else shape
        dtype = rng.choices([torch.float32, torch.float64, torch.int64, torch.bool], [10, 2, 2, 1])[0]
        layout = rng.choices(["contiguous", "transposed", "sliced", "expanded"], [6, 2, 2, 1])[0]
        args.append(Arg(shape, dtype, layout))
    return args


class _Env:
    """The program so far, run eagerly on the first call's inputs: the variables it defines."""

    def __init__(self, program: Program):
        self.program = program
        self.values: dict = {}

    def run(self, extra: list) -> dict | None:
        lines = self.program.lines + extra + [(0, "return locals()")]
        p = dataclasses.replace(self.program, lines=lines)
        fn, _ = p.function(fresh_state())
        args, _ = build_args(p.args, p.first_sizes, 1000 + p.seed)
        try:
            with _quiet():
                out = fn(*args, 2, 0.5)
        except Exception:  # noqa: BLE001 - the candidate does not run eagerly: draw another
            return None
        return out if isinstance(out, dict) else None


class _quiet:
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


def random_program(seed: int) -> Program:
    rng = random.Random(seed)
    args = _random_args(rng)
    program = Program(seed, args, [], grad=rng.random() < 0.25, first_sizes=_sizes(rng, allow_small=False))
    env = _Env(program)
    values = env.run([])
    assert values is not None, "the arguments alone must run"
    counter = [0]

    def fresh(prefix="v"):
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def tensors(values, float_only=False):
        return [k for k, v in values.items() if isinstance(v, torch.Tensor) and (not float_only or v.is_floating_point())]

    def numbers(values):
        return [k for k, v in values.items() if type(v) in (int, float, bool) and k not in ("n", "s")]

    def fill(template, values, **fixed):
        ts = tensors(values)
        fl = tensors(values, float_only=True) or ts
        a = rng.choice(fl if rng.random() < 0.8 else ts)
        b = rng.choice(fl if rng.random() < 0.8 else ts)
        nd = values[a].dim()
        d = rng.randrange(-nd, nd) if nd else 0
        e = rng.randrange(-nd, nd) if nd else 0
        ks = numbers(values)
        ints = [k for k in ks if type(values[k]) is int and 0 < values[k] <= 8]
        k = rng.choice(ks) if ks else "n"
        k2 = rng.choice(ints) if ints else "n"
        fields = dict(a=a, b=b, d=d, e=e, n="n", s="s", k=k, k2=k2, i=rng.choice(["i", "n", "1"]),
                      x=rng.choice([f"a{i}" for i in range(len(args))]))
        fields.update(fixed)
        return template.format(**fields)

    for _ in range(rng.randint(2, 9)):
        for _attempt in range(25):
            kind = rng.choices(["unary", "binary", "reduce", "view", "inplace", "read", "use", "sized", "unpack",
                                "state", "if", "loop", "raise", "module", "random", "try"],
                               [3, 4, 2, 4, 4, 2, 2, 1, 1, 2, 2, 1, 1, 2, 1, 1])[0]
            if kind in ("unary", "binary", "reduce", "view", "sized"):
                table = {"unary": UNARY, "binary": BINARY, "reduce": REDUCE, "view": VIEW, "sized": VALUE_SIZED}[kind]
                extra = [(0, f"{fresh()} = " + fill(rng.choice(table), values))]
            elif kind == "inplace":
                extra = [(0, fill(rng.choice(INPLACE), values))]
            elif kind == "read":
                extra = [(0, fill(rng.choice(READ_NUMBER), values, k=fresh("k")))]
            elif kind == "use":
                extra = [(0, f"{fresh()} = " + fill(rng.choice(USE_NUMBER), values))]
            elif kind == "unpack":
                extra = [(0, fill(rng.choice(UNPACK), values, v=fresh(), w=fresh()))]
            elif kind == "state":
                extra = [(0, fill(rng.choice(STATE), values, v=fresh()))]
            elif kind == "module":
                extra = [(0, fill(rng.choice(MODULE), values, v=fresh()))]
            elif kind == "random":
                extra = [(0, fill(rng.choice(RANDOM), values, v=fresh()))]
            elif kind == "try":
                first, fallback = rng.choice(TRY)
                v = fresh()
                extra = [(0, "try:"), (1, fill(first, values, v=v)), (0, "except (RuntimeError, IndexError):"),
                         (1, fill(fallback, values, v=v))]
            elif kind == "if":
                body = [(1, fill(rng.choice(BODY), values, i="1")) for _ in range(rng.randint(1, 2))]
                extra = [(0, "if " + fill(rng.choice(CONDITIONS), values) + ":")] + body
                if rng.random() < 0.4:
                    extra += [(0, "else:"), (1, fill(rng.choice(BODY), values, i="2"))]
            elif kind == "loop":
                header = rng.choice(["for i in range(n):", "for i in range({a}.shape[0]):", "for i in range(2):",
                                     "for i, row in enumerate({a}.unbind(0)):", "while COUNTER[0] < 3 + n:"])
                body = [(1, fill(rng.choice(BODY), values)) for _ in range(rng.randint(1, 2))]
                if header.startswith("while"):
                    body.append((1, "COUNTER[0] += 1"))
                extra = [(0, fill(header, values))] + body
            else:  # a raise that the first call does not reach, but others may
                extra = [(0, "if " + fill(rng.choice(["{a}.sum() > 3", "{a}.shape[0] > 4", "{n} > 3",
                                                       "{a}.abs().max() > 2.5"]), values) + ":"),
                         (1, rng.choice(["raise ValueError('raised by the program')",
                                         "raise IndexError('index')", "return {}['missing']"]))]
            new = env.run(extra)
            if new is None:
                continue
            big = [k for k, v in new.items() if isinstance(v, torch.Tensor) and v.numel() > 4096]
            if big:
                continue
            program.lines += extra
            values = new
            break
    program.mutations = tuple((i, rng.choice(MUTATIONS)) for i in range(1, len(CALLS)) if rng.random() < 0.4)
    vs = [k for k in tensors(values) if not k.startswith("a")] or tensors(values) or ["n"]
    for _attempt in range(20):
        ret = rng.choice(RETURNS).format(v=rng.choice(vs), w=rng.choice(vs), k=rng.choice(numbers(values) or ["n"]),
                                         x=rng.choice([f"a{i}" for i in range(len(args))]))
        if env.run([(0, ret.replace("return", "_ret =", 1) if ret != "return" else "pass")]) is not None:
            program.lines.append((0, ret))
            break
    return program


# ---------------------------------------------------------------------------------------------------
# One program against eager
# ---------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Verdict:
    status: str  # ok | refused | wrong | crash
    detail: str = ""
    call: int = -1
    mode: str = ""
    eager_raised: bool = False  # (a refusal where eager raised too: the user's program fails there either way)

    def __bool__(self):
        return self.status in ("ok", "refused")


# The call sequence: (name, sizes rule, data seed offset, layouts kept)
CALLS = (("first", "first", 0, True), ("new values", "first", 1, True), ("new sizes", "new", 2, True),
         ("contiguous", "new", 3, False), ("first again", "first", 4, True), ("small sizes", "small", 5, True))


def call_inputs(program: Program, index: int):
    name, rule, offset, layouts = CALLS[index]
    rng = random.Random(program.seed * 31 + index)
    sizes = program.first_sizes if rule == "first" else _sizes(rng, allow_small=rule == "small")
    args, leaves = build_args(program.args, sizes, 1000 + program.seed + 7919 * offset, layouts, program.grad)
    n = 2 if rule == "first" else rng.choice([0, 1, 3])
    s = 0.5 if offset == 0 else rng.choice([0.5, -1.25, 2.0])
    return args + [n, s], leaves


class _Timeout(BaseException):
    pass


def _alarm(seconds):
    """A hang check (main thread only): raises _Timeout after `seconds`."""
    if threading.current_thread() is not threading.main_thread() or not seconds:
        return None

    def handler(signum, frame):
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    return previous


def _run(fn, args, leaves, seed: int = 0):
    """(output, gradients, exception); random ops draw from `seed`."""
    grad_mode = torch.is_grad_enabled()
    try:
        with _quiet():
            torch.manual_seed(seed)
            out = fn(*args)
            grads = None
            if leaves:
                gen = torch.Generator().manual_seed(0)
                diff = [o for o in tensors_in(out) if o.requires_grad and o.is_floating_point()]
                if diff:
                    loss = sum((o * torch.randn(o.shape, generator=gen, dtype=o.dtype)).sum() for o in diff)
                    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
        return out, grads, None
    except _Timeout:
        raise
    except Exception as e:  # noqa: BLE001 - eager's errors are part of the behaviour compared
        return None, None, e
    finally:
        torch.set_grad_enabled(grad_mode)



def _message_key(e: BaseException) -> str:
    """A refusal's message without what varies between programs (names, lines, values)."""
    text = str(e).split("\n")[0]
    text = re.sub(r" at <fuzz-program[^>]*>:\d+ \(in [^)]*\)", "", text)
    text = re.sub(r"<fuzz-program[^>]*>:\d+", "<program>", text)
    text = re.sub(r"`[^`]*`", "`...`", text)
    text = re.sub(r"\b(t|v|i|f|k|a)\d+\b", r"\1#", text)
    text = re.sub(r"\d+", "N", text)
    return f"{type(e).__name__}: {text[:160]}"


def check(program: Program, mode: str, executors=None, calls=None, timeout: int = 60) -> Verdict:
    """One jitted function of `program` over the call sequence, each call compared with eager."""
    from test_differential import assert_same  # (imported late: it builds the op samples on import)

    eager_state, jit_state = fresh_state(), fresh_state()
    eager_fn, eager_ns = program.function(eager_state)
    fn, ns = program.function(jit_state)
    kw = {} if executors is None else {"executors": executors}
    jfn = compiler.jit(fn, cache=mode, **kw)
    previous = _alarm(timeout)
    index = -1
    try:
        for index in calls if calls is not None else range(len(CALLS)):
            for at, code in program.mutations:
                if at == index:
                    exec(code, eager_ns)
                    exec(code, ns)
            eager_args, eager_leaves = call_inputs(program, index)
            args, leaves = call_inputs(program, index)
            pristine, _ = call_inputs(program, index)
            expected, eager_grads, eager_error = _run(eager_fn, eager_args, eager_leaves, program.seed + index)
            try:
                actual, grads, error = _run(jfn, args, leaves, program.seed + index)
            except _Timeout:
                return Verdict("crash", "hang: the compiled call did not finish", index, mode)
            where = f"call {index} ({CALLS[index][0]})"
            if isinstance(error, (compiler.CompilerError, InterpreterError)):  # (clear refusals, as `run` treats them)
                return Verdict("refused", _message_key(error), index, mode, eager_raised=eager_error is not None)
            if eager_error is not None:
                if error is None:
                    return Verdict("wrong", f"{where}: eager raised {type(eager_error).__name__}: "
                                   f"{str(eager_error)[:200]}; compiled returned {_short(actual)}", index, mode)
                if type(error) is not type(eager_error):
                    return Verdict("wrong", f"{where}: eager raised {type(eager_error).__name__}: {str(eager_error)[:150]}; "
                                   f"compiled raised {type(error).__name__}: {str(error)[:150]}", index, mode)
            elif error is not None:
                return Verdict("crash", f"{where}: compiled raised {type(error).__name__}: {str(error)[:300]}",
                               index, mode)
            try:
                if eager_error is None:
                    assert_same(actual, expected, where=f"{where}: output",
                                float_rtol=1e-5 if executors is not None else None)
                    _assert_identity(actual, args, ns, expected, eager_args, eager_ns, where)
                    if eager_grads is not None or grads is not None:
                        assert (eager_grads is None) == (grads is None), f"{where}: gradients computed differ"
                        # (a float64 leaf's gradient summed from float32 products has float32's precision, and a
                        # fused reduction adds in another order: seed 551247 differed by 1.3e-7 relative)
                        low = executors is not None and any(
                            isinstance(t, torch.Tensor) and t.dtype in (torch.float32, torch.float16, torch.bfloat16)
                            for t in _flat(actual) + _flat(args))
                        for i, (g, e) in enumerate(zip(grads, eager_grads)):
                            assert (g is None) == (e is None), f"{where}: gradient {i}: None-ness differs"
                            if e is not None:
                                assert_same(g, e, where=f"{where}: gradient {i}",
                                            rtol=1e-4 if e.dtype == torch.float32 or low else None)
                _assert_args_like_eager(args, eager_args, pristine, where, fused=executors is not None)
                # through fusing executors, floats read from a fused reduction (`LOG.append(a.sum().item())`) within
                # float32's rounding, as tensors are (seeds 700001, 700013: one ulp of a sum)
                fused = dict(float_rtol=1e-5) if executors is not None else {}
                for name in STATE_NAMES:
                    assert_same(_comparable(ns[name]), _comparable(eager_ns[name]), where=f"{where}: module state {name}",
                                **fused)
                _assert_no_proxies(ns, actual, where)
            except AssertionError as e:
                return Verdict("wrong", str(e)[:800], index, mode)
        return Verdict("ok", mode=mode)
    except _Timeout:
        return Verdict("crash", "hang", index, mode)
    finally:
        if previous is not None:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)


def _comparable(value):
    """Module state as assert_same compares it: a set as a sorted list, the module as its attributes, buffers
    and parameters."""
    if isinstance(value, set):
        return sorted(value)
    if isinstance(value, torch.nn.Module):
        state = {k: v for k, v in vars(value).items() if not k.startswith("_") and not callable(v)}
        state.update(("buffer " + k, v) for k, v in value._buffers.items())
        state.update(("parameter " + k, v) for k, v in value._parameters.items())
        return dict(sorted(state.items()))
    return value


def _short(value) -> str:
    text = repr(value)
    return text if len(text) < 120 else text[:117] + "..."


def _assert_identity(actual, args, ns, expected, eager_args, eager_ns, where):
    """Which outputs are arguments, module state objects or other outputs (by identity), and which share
    memory with arguments: as eager's."""
    def shape(out, args, ns):
        flat = _flat(out)
        return [(tuple(i for i, a in enumerate(args) if a is o),
                 tuple(k for k in STATE_NAMES if ns[k] is o),
                 tuple(j for j, p in enumerate(flat) if p is o),
                 tuple(i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and isinstance(o, torch.Tensor)
                       and a.numel() and o.numel() and a.untyped_storage().data_ptr() == o.untyped_storage().data_ptr()))
                for o in flat if not isinstance(o, (int, float, bool, str, type(None), torch.dtype))]
    got, want = shape(actual, args, ns), shape(expected, eager_args, eager_ns)
    assert got == want, f"{where}: outputs' identities (is argument, is module state, is output, shares memory " \
                        f"with argument) {got}, eager's {want}"


def _flat(value) -> list:
    """The objects of an output whose identity the caller can observe (tuples are rebuilt by anyone)."""
    out = [] if type(value) is tuple else [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
    for v in items:
        out += _flat(v)
    return out


def _assert_args_like_eager(args, eager_args, pristine, where, fused: bool = False):
    """Arguments left as eager leaves them: bit for bit in eager order (the same kernels run); within the
    dtype's tolerance where fused regions wrote them (inductor's sin differs from ATen's by an ulp, as
    torch.compile's does)."""
    from test_differential import TOLERANCES

    for i, (a, e, p) in enumerate(zip(args, eager_args, pristine)):
        if not isinstance(e, torch.Tensor):
            continue
        assert a.shape == e.shape and a.stride() == e.stride() and a.dtype == e.dtype, \
            f"{where}: argument {i} after the call: shape {tuple(a.shape)} stride {a.stride()} {a.dtype}, eager's " \
            f"{tuple(e.shape)} {e.stride()} {e.dtype}"
        rtol, atol = TOLERANCES.get(e.dtype, (1e-5, 1e-5)) if fused and e.is_floating_point() else (0, 0)
        if not torch.equal(a, e) and not (a.is_floating_point() and
                                          torch.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True)):
            changed = "changed" if p.shape == e.shape and not torch.equal(e, p) else "?"
            raise AssertionError(f"{where}: argument {i} after the call differs from eager's (eager {changed} it)")


def _assert_no_proxies(ns, actual, where):
    found = proxies_reachable([ns[k] for k in STATE_NAMES] + [actual])
    assert not found, f"{where}: a traced proxy escaped into user state: {found[0]}"


# ---------------------------------------------------------------------------------------------------
# Minimization
# ---------------------------------------------------------------------------------------------------

def minimize(program: Program, verdict: Verdict, executors=None, budget: int = 200) -> Program:
    """Drop statements (a block with its body, and its else/except part), changes between calls, arguments'
    layouts and gradients while `check` fails the same way (same status; for "wrong"/"crash" the same first
    words of the detail)."""
    mode = verdict.mode

    def same(p):
        try:
            v = check(p, mode, executors)
        except Exception:  # noqa: BLE001 - a candidate the harness cannot run is not the same failure
            return False
        return v.status == verdict.status and _kind(v.detail) == _kind(verdict.detail)

    def block_end(lines, i):
        end = i + 1
        while end < len(lines) and lines[end][0] > lines[i][0]:
            end += 1
        if end < len(lines) and lines[end][0] == lines[i][0] and lines[end][1].startswith(("else:", "except")):
            return block_end(lines, end)  # (the else/except part goes with its block)
        return end

    current, tries, changed = program, 0, True
    while changed and tries < budget:
        changed = False
        i = 0
        while i < len(current.lines) and tries < budget:
            end = block_end(current.lines, i)
            candidate = dataclasses.replace(current, lines=current.lines[:i] + current.lines[end:])
            tries += 1
            if same(candidate):
                current, changed = candidate, True
            else:
                i = end
        for m in list(current.mutations):
            candidate = dataclasses.replace(current, mutations=tuple(x for x in current.mutations if x != m))
            tries += 1
            if same(candidate):
                current, changed = candidate, True
        for j, a in enumerate(current.args):  # simpler layouts
            if a.of is None and a.layout != "contiguous":
                candidate = dataclasses.replace(current, args=[dataclasses.replace(x, layout="contiguous")
                                                               if k == j else x for k, x in enumerate(current.args)])
                tries += 1
                if same(candidate):
                    current, changed = candidate, True
        if current.grad:
            candidate = dataclasses.replace(current, grad=False)
            tries += 1
            if same(candidate):
                current, changed = candidate, True
    return current


def _kind(detail: str) -> str:
    detail = re.sub(r"^call \d+ \([^)]*\): ", "", detail)
    return " ".join(re.sub(r"[\d\[\]()]", " ", detail).split()[:4])


def describe(program: Program) -> str:  # noqa: D103
    args = []
    for i, a in enumerate(program.args):
        if a.of is None:
            args.append(f"a{i}: {a.layout} {str(a.dtype).replace('torch.', '')}[{','.join(map(str, a.shape))}]")
        else:
            args.append(f"a{i}: {a.alias} {a.view.format(x=f'a{a.of}') if a.alias == 'view' else f'a{a.of}'}")
    changes = "".join(f"\n# before call {i}: {code}" for i, code in program.mutations)
    return f"# seed {program.seed}; sizes {program.first_sizes}; grad {program.grad}\n# " + "; ".join(args) + \
        changes + "\n" + program.source
