"""TL302 data-dependent-control-flow: control flow or Python values decided by tensor data."""

from __future__ import annotations

import ast

from ._jit_scopes import eager_only_spans_of, jitted_scopes
from ._torch_api import compiled_operands, in_spans
from ._values import DATA_READ_FUNCTIONS, Values
from .dynamo_settings import scalar_outputs_captured
from .compilers import compiled_message
from .base import Finding, RuleInfo
from .walks import nodes, walk

_CONVERSIONS = frozenset({"bool", "int", "float"})

INFO = RuleInfo(
    code="TL302",
    name="data-dependent-control-flow",
    severity="warning",
    summary="A jitted function turns tensor data into Python values: .item(), .tolist(), bool(t), `if t.sum() > 0:`.",
    docs="""\
## What it does
Inside a jitted function, reports `.item()`, `.tolist()` and `.numpy()` calls, `torch.equal`/`allclose` (a Python
bool of the data), `bool(t)`/`int(t)`/`float(t)` of a tensor, a tensor used as a slice bound
(`buf[:, t[0]:t[1]]`), and `if`/`while`/conditional expressions/`assert` whose test is a tensor
(`if t.sum() > 0:`, `if mask.any():`). Tensors are arguments annotated or used as tensors, registered buffers and
parameters (`float(self.num_batches_tracked)`), and what the module's own functions and methods return when
every `return` there gives a tensor. An argument of another class (a jagged-tensor container with `.keys()`),
NumPy arrays built from sizes and names an `isinstance` check shows to be Python numbers are not. A helper's block
that no call in its file takes (`if mask is None:` where every call passes a size) is skipped.

## Why is this bad?
The compiled trace is built from one call's data. A value read out of a tensor becomes a constant of the
trace (or forces a graph break); later calls with other data reuse the trace built for the first one, or
pay for a device synchronisation and a recompilation each time.

## Example
```python
@thunder.jit
def f(x):
    if x.sum() > 0:
        return x
    return -x
```

## Use instead
```python
@thunder.jit
def f(x):
    return torch.where(x.sum() > 0, x, -x)
```

## Fix safety
There is no automatic fix.

## References
- [torch.compile: data-dependent control flow](https://pytorch.org/docs/stable/torch.compiler_faq.html)
- [lightning-thunder #262](https://github.com/Lightning-AI/lightning-thunder/issues/262)
""",
    valid=[
        # called with Python numbers (and a name bound to a tensor only in one of its bindings): no tensor data
        "import torch\ndef as_int(x):\n    return int(x)\ncompiled = torch.compile(as_int)\ncompiled(3.7)\n"
        "v = torch.ones(1)\nv = 2.5\ncompiled(v)\n",
        # short-circuited away under a compiler: `not is_torchdynamo_compiling()` is false there
        "import torch\nfrom transformers.utils import is_torchdynamo_compiling\n@torch.compile\ndef f(x, ids):\n"
        "    if not is_torchdynamo_compiling() and (ids == 0).any():\n        raise ValueError('bad ids')\n    return x\n",
        "import thunder, torch\n@thunder.jit\ndef f(x):\n    return torch.where(x.sum() > 0, x, -x)\n",
        "import thunder\n@thunder.jit\ndef f(x, mask=None):\n    if mask is not None:\n        x = x * mask\n    return x\n",
        "def f(x):\n    return x.item()\n",  # not jitted
        # a parameter that is called is a module, even with `.type` (ultralytics' _profile_one_layer)
        "import torch\n@torch.compile\ndef f(m, x, first):\n    c = m == first and isinstance(x, list)\n"
        "    if c:\n        print(m.type)\n    return m(x)\n",
        # a `list[int]` parameter, rebound to a tensor only after the test (ultralytics' HungarianMatcher)
        "import torch\n@torch.compile\ndef f(x, groups: list[int]):\n    if sum(groups) == 0:\n        return x\n"
        "    groups = torch.as_tensor(groups).cumsum(0)\n    return x + groups\n",
        # a loop's index is a Python int, though the name holds a tensor later (kornia's sift scale space)
        "import torch\n@torch.compile\ndef f(levels):\n    out = []\n    for octave, level in enumerate(levels):\n"
        "        out.append(level * float(2**octave))\n    octave = torch.cat(out)\n    return octave\n",
        # dtypes are no tensors, even with `.is_floating_point` (torchvision's `to_dtype_image`)
        "import torch\n@torch.compile\ndef f(image: torch.Tensor, dtype: torch.dtype = torch.float):\n"
        "    if image.dtype == dtype:\n        return image\n    if dtype.is_floating_point:\n        return image.to(dtype)\n"
        "    return image\n",
        "import torch\n@torch.compile\ndef f(image, dtype=torch.float):\n    if dtype.is_floating_point and image.dtype == dtype:\n"
        "        return image\n    return image.float()\n",
        # an argument of another class whose name ends in Tensor: a jagged-tensor container's methods return
        # Python bools and lists of strings (torchrec's KeyedJaggedTensor, issue 31)
        "import torch\nfrom torchrec.sparse.jagged_tensor import KeyedJaggedTensor\n@torch.compile\n"
        "def f(x, features: KeyedJaggedTensor, names: list[str]):\n    if features.variable_stride_per_key():\n"
        "        return x\n    if names != features.keys():\n        return x * 2\n    return x + 1\n",
        "import torch\nclass JaggedTensor:\n    def __init__(self, lengths: list[int]):\n        self.lengths = lengths\n"
        "    def max(self) -> int:\n        return max(self.lengths)\n@torch.compile\ndef f(x, jt: JaggedTensor):\n"
        "    if jt.max() > 4:\n        return x[:4]\n    return x\n",
        # a NumPy array built from a shape holds sizes, not tensor data
        # NumPy of sizes, and NumPy's metadata of an array, are Python values
        "import numpy as np, torch\n@torch.compile\ndef f(x):\n    if np.ndim(x) == 2 and np.prod(x.shape) > 4:\n"
        "        return x[:2]\n    return x\n",
        "import numpy as np, torch\n@torch.compile\ndef f(x):\n    pad = np.array(x.shape[-2:]) % 8\n    if pad.any():\n"
        "        x = x[..., : x.shape[-2] - pad[0], : x.shape[-1] - pad[1]]\n    return x\n",
        # `t != 1` runs only when `t` is a Python number; past `if isinstance(lo, Tensor): return`, `lo` is one
        "import torch\n@torch.compile\ndef f(x, t):\n    if isinstance(t, (int, float)) and t != 1:\n        return x * t\n"
        "    return x * t.to(x.dtype)\n",
        "import torch\n@torch.compile\ndef f(x, lo):\n    if isinstance(lo, torch.Tensor):\n        return x.clamp(min=lo.to(x))\n"
        "    if lo > 0:\n        return x.clamp(min=lo)\n    return x\n",
        "import torch\n@torch.compile\ndef f(x, scale):\n    if torch.is_tensor(scale):\n        scale = scale.to(x.dtype)\n"
        "    else:\n        scale = float(scale)\n    return x * scale\n",
        # values that are Python at every call site: the `isinstance(v, torch.Tensor)` branch is never taken and
        # `s != 1` compares a number (a private helper every call of which passes a constant)
        "import torch\ndef _as_float(v):\n    if isinstance(v, torch.Tensor):\n        return v.item()\n    return float(v)\n"
        "def _scale(x, s):\n    if isinstance(s, torch.Tensor):\n        s = s.to(x.dtype)\n    if s != 1:\n"
        "        return x * s\n    return x\n@torch.compile\ndef f(x):\n    return _scale(x, 2.0) * _as_float(0.5)\n",
        # `bool()` of a comparison in the else of `if isinstance(v, Tensor):` compares Python values
        # (sentence-transformers' merge_feature_batches)
        "import torch\nfrom torch import Tensor\n@torch.compile\ndef f(x, first: dict, rest: list):\n"
        "    for key, v in first.items():\n        if isinstance(v, Tensor):\n            x = x + v.sum()\n        else:\n"
        "            if any(bool(r[key] != v) for r in rest):\n                return x\n    return x\n",
        # sizes compared, not data: `torch.numel(x)` is an int, and `n` holds a size where it is tested though it
        # is rebound to a tensor further down (sentence-transformers' BatchSemiHardTripletLoss)
        "import torch\n@torch.compile\ndef f(x, labels):\n    if labels.numel() != torch.numel(x):\n"
        "        raise ValueError('one label per element')\n    return x * labels\n",
        "import torch\n@torch.compile\ndef f(x, labels):\n    n = x.shape[0]\n    if labels.numel() != n:\n"
        "        raise ValueError('one label per row')\n    n = labels.sum()\n    return x / n\n",
        # `.item()` of a NumPy value built from a shape tuple holds no tensor data (stable-baselines3's
        # is_image_space_channels_first; round 3)
        "import numpy as np, torch\ndef channels_first(space):\n    smallest = np.argmin(space.shape).item()\n"
        "    return smallest == 0\n@torch.compile\ndef f(x, space):\n    if channels_first(space):\n"
        "        return x.transpose(0, 1)\n    return x\n",
        "import numpy as np, torch\n@torch.compile\ndef f(x, shape: tuple):\n    n = np.prod(shape)\n"
        "    return x.reshape(-1, n.item()), np.array(shape).tolist()\n",
        # a read in an assert's message runs only once the assert's own data check failed: the check is the
        # finding (torchtitan's vision encoders; round 3)
        "import torch\n@torch.compile\ndef f(x, grid: torch.Tensor):\n    assert bool((grid[:, 0] == 1).all()), (  # noqa: TL302\n"
        "        f'only T == 1, got {grid[:, 0].tolist()}')\n    return x * 2\n",
        # a Python number already read out of a tensor: the `.item()` is the finding, not the `int()`
        "import torch\n@torch.compile\ndef f(x: torch.Tensor, t, w: int):\n    h = t[0]\n    h = h.item()  # noqa: TL302\n"
        "    return x * int(h * w)\n",
    ],
    invalid=[
        "import thunder\n@thunder.jit\ndef f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n",
        # the file calls the compiled function with tensors: `int()` of its argument reads data (pytorch #111652,
        # #93457's boxes)
        "import torch\ndef as_int(x):\n    return int(x)\ncompiled = torch.compile(as_int)\ncompiled(torch.ones(1))\n",
        "import torch\ndef extent(box):\n    return int(box[2] + box[0])\ncf = torch.compile(extent)\n"
        "boxes = [torch.randint(0, 99, (4,)) for _ in range(3)]\nprint([cf(b) for b in boxes])\n",
        # the same through a direct call of the jit call's result, and a decorated function called by name (each a
        # way the file's compile sites are found)
        "import torch\ndef as_int(x):\n    return int(x)\nprint(torch.compile(\n    as_int)(torch.ones(1)))\n",
        "import torch\n@torch.compile(dynamic=True)\ndef as_int(x):\n    return int(x)\n\n\nas_int(torch.ones(1))\n",
        # a parameter times a number is no Python value, and rebinding it in the branch keeps it a tensor at the
        # test (a merge of two precision fixes had taken `y = x * 2.0` for a Python value, then for a size)
        "import torch\n@torch.compile\ndef f(x):\n    y = x * 2.0\n    if y.sum() > 0:\n        y = y + 1\n    return y\n",
        "import torch\nstate = {'s': 2.0}\n@torch.compile\ndef f(x):\n    y = x * state['s']\n    if y.sum() > 0:\n"
        "        return y\n    return -y\n",
        # NumPy routines on arrays: torch.compile traces them as tensor ops, so a branch on one reads data
        # (pytorch #119186)
        "import numpy as np\nimport torch\ndef propagate(clauses, table):\n    for clause in clauses:\n"
        "        res = np.logical_xor(clause, table[table.shape[0] - 1])\n        if np.count_nonzero(res) == 1:\n"
        "            table = table | res\n    return table\ncompiled = torch.compile(propagate)\n",
        "import torch\n@torch.compile\ndef f(x):\n    n = x.max().item()\n    return x / n\n",
        "import thunder, torch\n@thunder.jit\ndef f(x: torch.Tensor):\n    while x:\n        x = x - 1\n    return x\n",
        # the operand before the eager-only check is still evaluated compiled
        "import torch\n@torch.compile\ndef f(x):\n    if x.any() and not torch.compiler.is_compiling():\n"
        "        x = x + 1\n    return x\n",
        # `not` calls bool() on the tensor just the same
        "import torch\n@torch.compile\ndef f(x):\n    while not torch.isfinite(x).all():\n        x = torch.nan_to_num(x)\n"
        "    return x\n",
        # an untyped argument used like a tensor (`x.norm(...)`) is a tensor
        "import torch\n@torch.compile\ndef f(x, eps=1e-6):\n    norm = x.norm(dim=-1, keepdim=True)\n"
        "    if (norm < eps).any():\n        norm = norm.clamp(min=eps)\n    return x / norm\n",
        # the items of a tensor are tensors (torchtune's `for h, w in aspect_ratio:`)
        "import torch\n@torch.compile\ndef f(x, aspect_ratio: torch.Tensor):\n    n = 0\n    for h, w in aspect_ratio:\n"
        "        n = n + int(h * w)\n    return x[:n]\n",
        # a flag that becomes a tensor, even annotated bool
        "import torch\n@torch.compile\ndef f(x: torch.Tensor, c: float):\n    clipped: bool = False\n"
        "    clipped = clipped or (x.abs().max() >= c)\n    if clipped:\n        x = x.clamp(-c, c)\n    return x\n",
        # builtin `sum` over a tensor gives a tensor
        "import torch\n@torch.compile\ndef f(x, lengths: torch.Tensor):\n    if sum(lengths) == 0:\n        return x\n"
        "    return x * 2\n",
        # the operand after `isinstance(t, torch.Tensor) and` is a tensor's test
        "import torch\n@torch.compile\ndef f(x, t):\n    if isinstance(t, torch.Tensor) and t.any():\n        return x\n"
        "    return x * t.sum()\n",
        # reads beyond `.item()` (issue 31, miss 7): `.numpy()` in a helper the compiled forward calls
        "import torch\ndef to_np(x):\n    return x.detach().cpu().numpy()\nclass M(torch.nn.Module):\n"
        "    def forward(self, x):\n        return x * 2, to_np(x)\nm = torch.compile(M())\n",
        # a tensor element as a slice bound
        "import torch\n@torch.compile\ndef f(x, t: torch.Tensor, buf: torch.Tensor):\n    buf[:, t[0]:t[1]] = x\n"
        "    return buf\n",
        # a registered buffer
        "import torch\nclass BN(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('num_batches_tracked', torch.tensor(0))\n    def forward(self, x):\n"
        "        self.num_batches_tracked.add_(1)\n        return x * (1.0 / float(self.num_batches_tracked))\n"
        "m = torch.compile(BN())\n",
        # what the module's own function or method returns
        "import torch\ndef spans(x):\n    return torch.nonzero(x).flatten()\n@torch.compile\ndef f(x):\n"
        "    s = spans(x)\n    return x[: int(s.max())]\n",
        "import torch\nclass Env(torch.nn.Module):\n    def _done(self, x):\n        return (x < 0).all()\n"
        "    def forward(self, x):\n        any_done = self._done(x)\n        if any_done:\n"
        "            return x.clamp(min=0)\n        return x\nm = torch.compile(Env())\n",
        # the same private helper, called with a tensor
        "import torch\ndef _as_float(v):\n    if isinstance(v, torch.Tensor):\n        return v.item()\n    return float(v)\n"
        "@torch.compile\ndef f(x):\n    return x * _as_float(x.mean())\n",
        # `torch.equal` gives a Python bool of the data
        "import torch\n@torch.compile\ndef f(x, ref):\n    same = torch.equal(x, ref)\n    return x * 2, same\n",
        # a size rebound to a tensor in the loop around the test: the next iteration tests the tensor
        "import torch\n@torch.compile\ndef f(x, labels):\n    n = x.shape[0]\n    for i in range(3):\n        if n > 2:\n"
        "            x = x * 2\n        n = labels.sum()\n    return x / n\n",
        # a random draw is tensor data too
        "import torch\n@torch.compile\ndef f(x, p: float):\n    if torch.randint(0, 100, (1,)) < p * 100:\n"
        "        x = x.flip(0)\n    return x\n",
    ],
)


def check(ctx):
    for target, jit_scope in jitted_scopes(ctx):  # and the module's helpers they call: a jit traces into those
        facts = ctx.facts(target.info.node)
        values = Values(ctx, target.info, facts)
        reported = set()
        eager_only = eager_only_spans_of(ctx, jit_scope)  # (found once per function for every jit rule)
        in_guarded_raise = _raises_under_data_checks(facts, values, target.info.node)
        dead = values.dead_spans  # `if isinstance(v, torch.Tensor):` where every call passes a number for v
        for call in facts.calls:
            if eager_only and in_spans(call, eager_only):
                continue
            if dead and in_spans(call, dead):
                continue
            if in_guarded_raise and in_spans(call, in_guarded_raise):
                continue  # `if (x < 0).any(): raise ValueError(f"{x.min().item()}")`: the check is the finding
            func = call.func
            read = _data_read(ctx, values, call)
            if read:
                reported.add((call.lineno, call.col_offset))
                captured = read in ("`.item()`", "`.tolist()`") and scalar_outputs_captured(ctx)
                yield Finding(
                    call,
                    **compiled_message(
                        target,
                        f"{read} in {target.subject} reads tensor data into Python",
                        "keep it a tensor, or read it outside compiled code",
                        "—the compiled trace bakes the value in (or breaks the graph)",
                        _captured_note(captured, target.info.node, facts, call) if captured else
                        "breaks the graph where the value reaches Python (right results; the function runs as "
                        "separate graphs with a device sync between them)",
                        "TL302",
                    ),
                )
            elif isinstance(func, ast.Name) and func.id in _CONVERSIONS and len(call.args) == 1:
                if values.is_tensor_at(call.args[0], (call.lineno, call.col_offset)) and not facts.is_local(func.id):
                    reported.add((call.lineno, call.col_offset))
                    captured = func.id != "bool" and scalar_outputs_captured(ctx)
                    yield Finding(
                        call,
                        **compiled_message(
                            target,
                            f"`{func.id}()` of a tensor in {target.subject} reads tensor data",
                            "keep it a tensor, or read it outside compiled code",
                            "—the compiled trace bakes the value in",
                            _captured_note(captured, target.info.node, facts, call) if captured else
                            "breaks the graph here to read it, or, for a tensor argument, specializes on its value "
                            "and recompiles for each new one (right results either way)",
                            "TL302",
                        ),
                    )
        for bounds in _slice_bounds(target.info.node):
            bound = next((b for b in bounds if values.is_tensor_at(b, (b.lineno, b.col_offset))), None)
            if bound is not None and not (eager_only and in_spans(bound, eager_only)) and not in_spans(bound, dead):
                yield Finding(
                    bound,
                    **compiled_message(
                        target,
                        f"a tensor as a slice bound in {target.subject} reads its value",
                        "slice with sizes, or use `torch.narrow`/masks/`index_select`",
                        "—the trace bakes the bound in",
                        "breaks the graph here to read it (`Tensor.item()`; separate graphs and a device sync)",
                        "TL302",
                    ),
                )
        for kind, test in facts.tests:
            if kind == "for" or (test.lineno, test.col_offset) in reported:
                continue
            if _has_item(test):
                continue  # the .item() is reported already
            if eager_only and in_spans(test, eager_only):
                continue
            if dead and in_spans(test, dead):
                continue
            if any(_decides_on_tensor(values, part) for part in compiled_operands(test)):
                yield Finding(
                    test,
                    **compiled_message(
                        target,
                        f"control flow on tensor data in {target.subject}",
                        "use `torch.where`/masks, or decide outside compiled code",
                        "—the branch is taken while tracing and replayed for other data",
                        "breaks the graph here and takes the right branch (the cost: separate graphs and a "
                        "device sync)",
                        "TL302",
                    ),
                )


def _captured_note(where: str, func, facts, call) -> str:
    """torch.compile's side where the project sets ``capture_scalar_outputs = True``: the read is a symbolic scalar
    in the graph, no graph break; a branch or a loop on it still breaks the graph (tests/rules/
    test_rule_tl302_scalar_outputs.py)."""
    setting = f"the project sets `capture_scalar_outputs = True` ({where})"
    if _decides_control_flow(func, facts, call):
        return (f"breaks the graph at the branch or loop this value decides, though {setting}: the read itself is "
                "captured as a symbolic scalar, the decision still needs the data (with `fullgraph=True`, an error)")
    return (f"captures it as a symbolic scalar, since {setting}: no graph break here; a branch or a loop on it "
            "would still break the graph")


def _decides_control_flow(func, facts, call) -> bool:
    """Does the value ``call`` reads decide a test of ``func`` (an `if`/`while`/`assert`/ternary, a `for` loop's
    iterable), directly or through the names assigned from it (in the function's own statements)?"""
    tests = [t for _, t in facts.tests]
    if in_spans(call, [((t.lineno, t.col_offset), (t.end_lineno, t.end_col_offset)) for t in tests]):
        return True
    assigns = [n for n in walk(func) if type(n) in (ast.Assign, ast.AnnAssign, ast.AugAssign) and n.value is not None]
    tainted: set[str] = set()
    changed = True
    while changed:
        changed = False
        for a in assigns:
            if not any(n is call or (type(n) is ast.Name and n.id in tainted) for n in ast.walk(a.value)):
                continue
            for t in (a.targets if type(a) is ast.Assign else [a.target]):
                for n in ast.walk(t):
                    if type(n) is ast.Name and n.id not in tainted:
                        tainted.add(n.id)
                        changed = True
    return bool(tainted) and any(type(n) is ast.Name and n.id in tainted for t in tests for n in ast.walk(t))


def _data_read(ctx, values, call) -> str | None:
    """How ``call`` reads tensor data into Python, if it does: `.item()`, `.tolist()`, `.numpy()`, `torch.equal(a, b)`
    and `a.equal(b)`/`a.allclose(b)` (a Python bool of the data)."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in ("item", "tolist", "numpy") and not call.args:
            if values.python_operand(func.value):
                return None  # `np.argmin(space.shape).item()`: a NumPy or Python value, no tensor data
            return f"`.{func.attr}()`"
        if func.attr in ("equal", "allclose") and call.args and values.is_tensor(func.value, (call.lineno, call.col_offset)):
            return f"`.{func.attr}()`"
        if func.attr not in _DATA_READ_LAST:
            return None  # (resolving maps the first name only: `a.b.f` resolves to a name that ends in `.f`)
    name = ctx.resolve(func) or ""
    if name in DATA_READ_FUNCTIONS and not (isinstance(func, ast.Name) and values.facts.is_local(func.id)):
        return f"`{name}()`"
    return None


_DATA_READ_LAST = frozenset(name.rsplit(".", 1)[-1] for name in DATA_READ_FUNCTIONS)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _slice_bounds(func):
    """The bounds of each slice in ``func``'s body (`t[0]` in `buf[:, t[0]:t[1]]`), not in nested functions or classes.
    From the function's node list that the other jit rules walk too: the slices in the body's span and in no
    nested definition's span (decorators included)."""
    body = func.body if isinstance(func.body, list) else [func.body]  # (a lambda's body is an expression)
    if not body:
        return
    lo, hi = (body[0].lineno, body[0].col_offset), (body[-1].end_lineno, body[-1].end_col_offset)
    slices, nested = [], []
    for node in walk(func):
        if type(node) is ast.Slice:
            slices.append(node)
        elif isinstance(node, _NESTED) and node is not func:
            first = node.decorator_list[0] if getattr(node, "decorator_list", None) else node
            nested.append(((first.lineno, first.col_offset), (node.end_lineno, node.end_col_offset)))
    for node in slices:
        pos = (node.lineno, node.col_offset)
        if lo <= pos <= hi and not any(a <= pos <= b for a, b in nested):
            yield [b for b in (node.lower, node.upper, node.step) if b is not None]


def _raises_under_data_checks(facts, values, func) -> list:
    """Spans of `raise` statements that an `if` on tensor data guards, and of the messages of asserts whose test
    reads tensor data: they run only once that check has already read the data (and failed), so an `.item()` in
    them is no second finding."""
    spans = []
    for node in facts.ifs:
        if any(isinstance(s, ast.Raise) for s in node.body):
            if _checks_data(values, node.test):
                for s in node.body:
                    if isinstance(s, ast.Raise):
                        spans.append(((s.lineno, s.col_offset), (s.end_lineno, s.end_col_offset)))
    if any(kind == "assert" for kind, _ in facts.tests):
        for node in walk(func):  # (the function's node list, shared with the other jit rules)
            if type(node) is ast.Assert and node.msg is not None and _checks_data(values, node.test):
                m = node.msg
                spans.append(((m.lineno, m.col_offset), (m.end_lineno, m.end_col_offset)))
    return spans


def _checks_data(values, test) -> bool:
    """Does deciding ``test`` read tensor data (`.item()`, `bool(t)`, `if t.any():`)?"""
    if _has_item(test) or any(_decides_on_tensor(values, p) for p in compiled_operands(test)):
        return True
    return any(type(n) is ast.Call and isinstance(n.func, ast.Name) and n.func.id in _CONVERSIONS
               and len(n.args) == 1 and values.is_tensor(n.args[0]) for n in nodes(test))


def _decides_on_tensor(values, test) -> bool:
    """Does Python call ``bool()`` on a tensor to decide ``test``? (`not t.any()` and `a and t` do too.)"""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.BoolOp):
        return any(_decides_on_tensor(values, v) for v in test.values)
    return values.is_tensor(test, (test.lineno, test.col_offset))


def _has_item(expr) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("item", "tolist", "numpy")
        for n in nodes(expr)  # (ast.walk's nodes but the singletons, listed without a generator)
    )
