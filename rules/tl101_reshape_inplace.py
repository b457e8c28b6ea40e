"""TL101 reshape-inplace: an in-place write to the result of an op that may return a view or a copy."""

from __future__ import annotations

import ast
import re
import sys

from ._torch_api import (
    CAST_METHODS,
    FRESH_FUNCTIONS,
    FRESH_METHODS,
    MAYBE_VIEW_FUNCTIONS,
    MAYBE_VIEW_METHODS,
    SHARING_FUNCTIONS,
    VIEW_ATTRIBUTES,
    VIEW_METHODS,
    assigned_value,
    end,
    is_basic_index,
    start,
    written_tensor,
)
from ._cast_dtypes import cast_dtype, known_dtype
from ._option_writes import all_writes
from .base import Finding, FixRequest, RuleInfo
from .tl102_view_inplace_input import _view_of_argument

INFO = RuleInfo(
    code="TL101",
    name="reshape-inplace",
    severity="error",
    summary="In-place write to the result of reshape/flatten/contiguous/a cast, which may or may not alias its input.",
    fixable=True,
    docs="""\
## What it does
Reports an in-place write (`y.add_(...)`, `y += ...`, `y[i] = ...`, `out=y`) to the result of an operation
that returns a view *or* a copy depending on runtime facts: `reshape`, `reshape_as`, `flatten`, `ravel`,
`contiguous`, and casts such as `to`, `type`, `float` that return `self` when nothing needs converting.
It reports only when the input of that operation is observable afterwards: a function argument, an
attribute, a global, or a local that is read again after the write. A reshape of a dead temporary
changes nothing anyone can see and is not reported.

## Why is this bad?
Whether the write reaches the original tensor depends on its strides (or dtype, or device). PyTorch's
documentation says user code must not rely on either behaviour, and compilers (thunder, torch.compile)
may pick differently from eager mode: the same program then silently computes different values.

## Example
```python
def scale_(x):
    y = x.reshape(-1)
    y.mul_(2)  # changes x only when x was contiguous
    return x
```

## Use instead
Say which behaviour you want: a view that is guaranteed to alias (and fails loudly when it cannot),
```python
def scale_(x):
    y = x.view(-1)
    y.mul_(2)
    return x
```
or an explicit copy that never touches the input: `y = x.reshape(-1).clone()`.

## Fix safety
Two fixes are offered, both unsafe because they change behaviour for some inputs: "make the aliasing
explicit" (`reshape` -> `view`, `flatten(0, -2)` -> `view(-1, *x.shape[-1:])`; `view` raises on tensors
whose strides do not allow a view) and "make the copy explicit" (append `.clone()`; the input is then never
modified). They follow the evidence of the author's intent. When the written result is never read again,
the write can only have been meant for the input (a function that fills the caller's buffer through a
flattened view): the view is the fix, and the copy, which would leave the function doing nothing, is only
shown, never applied. When the input is never read again and the result is, the copy comes first. In a
jitted function the view turns the write into one through a view of an input, which TL102 reports: the
view fix's title says so.

## References
- [torch.reshape](https://pytorch.org/docs/stable/generated/torch.reshape.html)
- [Tensor views](https://pytorch.org/docs/stable/tensor_view.html)
- [lightning-thunder #957: support for reshape + in-place](https://github.com/Lightning-AI/lightning-thunder/issues/957)
""",
    valid=[
        # both outcomes handled: a copy is stored back into the argument when the reshape was no view
        # (pytorch-optimizer's DASH: the writes go through a view of the reshaped matrix)
        "import torch\ndef step(p, d):\n    matrix = p.reshape(4, -1)\n    region = matrix[0:2, 0:2]\n"
        "    region = region.view(2, 2)\n    region.add_(d)\n    if matrix.data_ptr() != p.data_ptr():\n"
        "        p.copy_(matrix.reshape_as(p))\n",
        # a fresh temporary: nobody else holds it
        "import torch\ndef f(a, b):\n    y = (a + b).reshape(-1)\n    y.add_(1)\n    return y\n",
        # an explicit copy
        "import torch\ndef f(x):\n    y = x.reshape(-1).clone()\n    y.add_(1)\n    return y\n",
        # an always-view op: the aliasing is guaranteed and deterministic
        "import torch\ndef f(x):\n    y = x.view(-1)\n    y.add_(1)\n    return x\n",
        # a dead local: the reshaped local is never read again
        "import torch\ndef f(n):\n    t = torch.zeros(n, n)\n    y = t.reshape(-1)\n    y[0] = 1\n    return y\n",
        # NumPy: flatten always copies
        "import numpy as np\nimport torch\ndef f(a):\n    arr = np.asarray(a)\n    flat = arr.flatten()\n    flat[0] = 0\n    return arr\n",
        # a cast whose input is not read again: authors cast to change the dtype
        "import torch\ndef f(image):\n    return image.to(torch.float32).mul_(1 / 255)\n",
        # an integer cast of a division's result always converts: a copy (kornia's loftr geometry)
        "import torch\ndef f(kpts, depth):\n    w = kpts / (depth + 1e-4)\n    w_long = w.long()\n    w_long[w < 0] = 0\n"
        "    return w, w_long\n",
        # the name is rebound before the write
        "import torch\ndef f(x):\n    y = x.reshape(-1)\n    y = y * 2\n    y.add_(1)\n    return y\n",
        # a cast to another dtype than the input is known to hold always copies (sglang's float64 coins cast to float32)
        "import torch\ndef f(hashed, k):\n    u = hashed.to(torch.float64) / torch.iinfo(torch.uint32).max\n"
        "    coins = u[:, :k].to(torch.float32).clamp_(max=0.5)\n    return coins, u[:, k]\n",
        # an attribute the class annotates as a NumPy array: a NumPy reshape (sglang's host-side staging table)
        "import numpy as np\nimport torch\nfrom dataclasses import dataclass\n@dataclass\nclass Plan:\n"
        "    host: np.ndarray\n    def write(self, o, rows, n):\n        table = self.host[o : o + 2 * rows].reshape(rows, 2)\n"
        "        table[:n, 0] = 1\n        return torch.from_numpy(self.host)\n",
        # the write and the later read of `t` sit in two cases of one match: no run executes both
        "import torch\ndef f(mode):\n    t = torch.zeros(4, 4)\n    y = t.reshape(-1)\n    match mode:\n"
        "        case 'flat':\n            y[0] = 1\n            out = y\n        case _:\n            out = t\n"
        "    return out\n",
    ],
    invalid=[
        "import torch\ndef f(x):\n    y = x.reshape(-1)\n    y.mul_(2)\n    return x\n",
        "import torch\ndef f(x):\n    x.flatten()[0] = 1\n",
        "import torch\ndef f(x, s):\n    y = torch.reshape(x, s)\n    y += 1\n    return y\n",
        "import torch\ndef f(n):\n    t = torch.zeros(n, n)\n    y = t.reshape(-1)\n    y[0] = 1\n    return t\n",
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        torch.add(x, 1, out=self.buf.reshape(-1))\n        return x\n",
        # a cast returns `self` when x is already float: x is read after the write
        "import torch\ndef f(x):\n    h = x.float()\n    h.mul_(0.5)\n    return x + h\n",
        # each item of a list argument is still held by the caller's list
        "import torch\ndef f(caches):\n    for c in caches:\n        flat = c.reshape(-1)\n        flat.mul_(0.5)\n",
        # an exception can skip the `return` inside the try: the code after it reads `t`
        "import torch\ndef f():\n    t = torch.zeros(4, 4)\n    y = t.reshape(-1)\n    try:\n        y[0] = 1\n"
        "        return y.cuda()\n    except RuntimeError:\n        pass\n    return t\n",
        # the argument's name is rebound after the write (torchrl's tic-tac-toe env): the caller's tensor was
        # written all the same; a rebinding stores nothing into it
        "import torch\ndef step(state):\n    board = state['board']\n"
        "    board.flatten(-2, -1).scatter_(-1, state['action'], 1)\n    state = dict(board=board)\n    return state\n",
        # the write spelled as an option: relu writes the flattened tensor, which may or may not be x's memory
        "import torch\nimport torch.nn.functional as F\ndef f(x):\n    F.relu(x.flatten(1), inplace=True)\n    return x\n",
        # the input is known to be float32 already: `to(torch.float32)` returns it, and clamp_ writes it
        "import torch\ndef f(hashed, k):\n    u = hashed.float() / 7\n"
        "    coins = u[:, :k].to(torch.float32).clamp_(max=0.5)\n    return coins, u\n",
        # the argument's name rebound to the copy: the caller's tensor gets nothing when the reshape copied
        "import torch\ndef step(p, d):\n    matrix = p.reshape(4, -1)\n    region = matrix[0:2, 0:2]\n"
        "    region.add_(d)\n    p = matrix.reshape_as(p)\n    return p\n",
        # the same table annotated as a tensor: the reshape may or may not be a view of it
        "import torch\nfrom dataclasses import dataclass\n@dataclass\nclass Plan:\n    host: torch.Tensor\n"
        "    def write(self, o, rows, n):\n        table = self.host[o : o + 2 * rows].reshape(rows, 2)\n"
        "        table[:n, 0] = 1\n        return self.host\n",
        # a copy that is read after the write; storing it into the object it was copied from writes no base
        "import torch\ndef step(state):\n    board = state['board'].clone()\n"
        "    board.flatten(-2, -1).scatter_(-1, state['action'], 1)\n    wins = board.sum(-1)\n"
        "    state = dict(board=board, wins=wins)\n    return state\n",
    ],
)

_MAX_DEPTH = 8


def _maybe_view(ctx, call) -> tuple[str, ast.AST] | None:
    """(op name, its input) when ``call`` may return a view or a copy."""
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in MAYBE_VIEW_METHODS:
            if ctx.resolve(func) in MAYBE_VIEW_FUNCTIONS and call.args:  # torch.reshape(x, s)
                return func.attr, call.args[0]
            return func.attr, func.value
        if func.attr in CAST_METHODS:
            # `x.type()` with no argument returns a string; `to(..., copy=True)` always copies.
            if func.attr == "type" and not call.args and not call.keywords:
                return None
            if any(k.arg == "copy" for k in call.keywords):
                return None
            return func.attr, func.value
    return None


def _is_numpy(ctx, facts, expr, depth=0) -> bool:
    """Is ``expr`` (conservatively) a NumPy array? Those are not PyTorch's concern."""
    if depth > _MAX_DEPTH:
        return False
    node = expr
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
                and node.attr in _numpy_fields(ctx, facts.node):
            return True  # `host: np.ndarray` in the class body (sglang's staging tables)
        if isinstance(node, ast.Call):
            name = ctx.resolve(node.func) or ""
            if name.startswith(("numpy.", "np.")):
                return True
            if isinstance(node.func, ast.Attribute) and node.func.attr == "numpy":
                return True
            node = node.func
        else:
            node = node.value
    if isinstance(node, ast.Name):
        if (ctx.resolve(node) or "").startswith("numpy"):
            return True
        if node is not expr or isinstance(expr, ast.Name):
            b = facts.binding_at(node.id, start(expr))
            if b == "param":
                ann = facts.annotations.get(node.id)
                return ann is not None and "ndarray" in ast.dump(ann)
            if b is not None and not isinstance(b, str) and b.value is not None:
                return _is_numpy(ctx, facts, b.value, depth + 1)
    return False


def _numpy_fields(ctx, func) -> frozenset:
    """The attributes that the class body of ``func``'s class annotates as NumPy arrays (``host: np.ndarray``)."""
    cache = ctx.__dict__.setdefault("_numpy_fields", {})
    got = cache.get(id(func))
    if got is None:
        names = set()
        for cls in ast.walk(ctx.tree):
            if isinstance(cls, ast.ClassDef) and any(s is func for s in cls.body):
                for stmt in cls.body:
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                            and (ctx.resolve(stmt.annotation) or "") in ("numpy.ndarray", "np.ndarray"):
                        names.add(stmt.target.id)
                break
        got = cache[id(func)] = frozenset(names)
    return got


_INTEGER_CASTS = frozenset({"long", "int", "short", "byte", "char"})
_FLOAT_CASTS = frozenset({"float", "double", "half", "bfloat16"})
_FLOAT_FACTORIES = frozenset({"torch.rand", "torch.randn", "torch.rand_like", "torch.randn_like", "torch.linspace",
                              "torch.logspace"})


def _floating(ctx, facts, e, pos, depth=0) -> bool:
    """Is ``e`` (as of ``pos``) known to hold floating-point values: a true division of tensors, a float cast,
    a floating random draw, or a name bound to one of those?"""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(e, ast.Name):
        got = assigned_value(facts, e.id, pos)
        return _floating(ctx, facts, *got, depth + 1) if got else False
    if isinstance(e, ast.BinOp):
        return isinstance(e.op, ast.Div)
    if isinstance(e, ast.Call):
        if isinstance(e.func, ast.Attribute) and e.func.attr in _FLOAT_CASTS and not e.args:
            return True
        return (ctx.resolve(e.func) or "") in _FLOAT_FACTORIES and not any(k.arg == "dtype" for k in e.keywords)
    return False


def _source_of_write(ctx, facts, target, pos, depth=0):
    """The maybe-view call whose result ``target`` is (or is a view of), with its op and input."""
    if depth > _MAX_DEPTH:
        return None
    found = _maybe_view(ctx, target)
    if found:
        return target, found[0], found[1]
    if isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute) and target.func.attr in VIEW_METHODS:
        return _source_of_write(ctx, facts, target.func.value, pos, depth + 1)
    if isinstance(target, ast.Subscript):
        if not is_basic_index(target.slice):
            return None  # advanced indexing copies: writes to the result reach nothing else
        return _source_of_write(ctx, facts, target.value, pos, depth + 1)
    if isinstance(target, ast.Attribute) and target.attr in VIEW_ATTRIBUTES:
        return _source_of_write(ctx, facts, target.value, pos, depth + 1)
    if isinstance(target, ast.Name):
        got = assigned_value(facts, target.id, pos)
        return _source_of_write(ctx, facts, *got, depth + 1) if got else None
    return None


def _observer(ctx, facts, base, pos, mutation, depth=0) -> tuple[str, bool] | None:
    """Who can see a write through ``base`` (as of ``pos``): (description, read after the write?)."""
    if depth > _MAX_DEPTH or _is_numpy(ctx, facts, base):
        return None
    after = end(mutation.stmt)
    if isinstance(base, ast.Name):
        name = base.id
        b = facts.binding_at(name, pos)
        read_later = facts.read_after(name, after, mutation.loop, since=pos)
        if b == "param":
            if name in ("self", "cls"):
                return None
            return f"the argument `{name}`", read_later
        if b is None:
            if ctx.index.module_name_kind(name) == "mutable":
                return f"the global `{name}`", read_later
            return None
        if isinstance(facts.node, ast.Module):
            # at module level every name is a global: any function (or importer) can read it later
            if b == "unknown" or b.value is None or _is_fresh(ctx, b.value) or _view_input(ctx, b.value) is None:
                return f"the global `{name}`", read_later
        if b != "unknown" and b.kind == "loop":
            # `for v in videos:` — each item is still held by the container the loop walks
            owner = _loop_owner(facts, b)
            if owner is not None:
                return f"an item of the argument `{owner}` (through `{name}`)", read_later
        if b == "unknown" or b.value is None:
            return (f"the local `{name}`", True) if read_later else None
        if b.kind == "assign" and _is_held_elsewhere(b.value):
            # `h = outputs.last_hidden_state`: the object that owns the tensor still holds it
            return f"`{ctx.segment(b.value)}` (through `{name}`)", read_later
        # `part = x[:, :2] if first else x[:, 2:]`: either arm may be what the name holds
        arms = _arms(b.value) if b.kind == "assign" else []
        for value in arms:
            if _is_fresh(ctx, value):
                continue
            inner = _view_input(ctx, value)
            if inner is not None:
                seen = _observer(ctx, facts, inner, start(b.stmt), mutation, depth + 1)
                if seen is not None:
                    return seen[0], seen[1] or read_later
        return (f"the local `{name}` (read after the write)", True) if read_later else None
    if isinstance(base, ast.Attribute):
        if base.attr in VIEW_ATTRIBUTES:
            return _observer(ctx, facts, base.value, pos, mutation, depth + 1)
        return f"the attribute `{ctx.segment(base)}`", False
    if _is_held_elsewhere(base):
        return f"`{ctx.segment(base)}`", False
    if isinstance(base, ast.IfExp):
        for arm in _arms(base):
            seen = _observer(ctx, facts, arm, pos, mutation, depth + 1)
            if seen is not None:
                return seen
        return None
    inner = _view_input(ctx, base)
    if inner is not None:
        return _observer(ctx, facts, inner, pos, mutation, depth + 1)
    return None


def _arms(expr) -> list:
    """The values an expression may have: both arms of (nested) conditional expressions."""
    if isinstance(expr, ast.IfExp):
        return _arms(expr.body) + _arms(expr.orelse)
    return [expr]


def _written_back(ctx, facts, target, call, base, mutation) -> bool:
    """Is the written result stored back into ``base`` after the write (``mod.weight.data = w``,
    ``base.copy_(w)``, ``setattr(mod, "weight", w)``)? Then the base gets the new values either way.

    What counts is the base's memory at the write: a store into an object the base was only copied from
    (``board = state["board"].clone()``), or a rebinding of an argument's name (``state = TensorDict(...)``:
    the caller's tensor is not written), is no write-back."""
    root = target
    while isinstance(root, (ast.Subscript, ast.Attribute)) or (
        isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute)
    ):
        if root is call:
            return False  # `board.flatten(-2, -1).scatter_(...)`: the written result has no name to store back
        root = root.func.value if isinstance(root, ast.Call) else root.value
    if not isinstance(root, ast.Name) or isinstance(base, ast.IfExp):
        return False
    name = root.id

    # The base, and what it was taken from (`w = module.weight.data` ... `w = w.reshape(...)`), up to the first
    # fresh value: storing the result into any of those is a write-back. A name counts only as a local.
    wants, copied_into = set(), set()
    expr, pos = base, start(mutation.node)
    for _ in range(_MAX_DEPTH):
        if isinstance(expr, ast.Name):
            b = facts.binding_at(expr.id, pos)
            if b == "param":
                copied_into.add(expr.id)  # `p.copy_(...)` writes the caller's tensor; `p = ...` does not
            if b is None or isinstance(b, str):
                break  # an argument or a global: rebinding the name writes nothing the caller holds
            wants.add(expr.id)
            if b.kind != "assign" or b.value is None:
                break
            value, pos = b.value, start(b.stmt)
        else:
            wants.add(_strip_data(ctx.segment(expr)))
            value = expr
        fresh = False
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            fresh = fresh or _is_fresh(ctx, value)
            value = value.func.value  # w.reshape(...).to(...) -> w
        if fresh or _is_fresh(ctx, value):
            break  # `board = state["board"].clone()`: new memory, nothing it came from is written
        if isinstance(value, ast.Subscript) and not isinstance(value.value, ast.Name):
            wants.add(_strip_data(ctx.segment(value)))
        while isinstance(value, ast.Subscript):
            value = value.value
        if not isinstance(value, ast.Name):
            wants.add(_strip_data(ctx.segment(value)))
            break
        expr = value
    after = end(mutation.stmt)
    stores = _store_backs(ctx, facts)
    # the written name, and the names it is a view of up to the reshaped result (`region = matrix[r:, c:].view(...)`
    # written, `p.copy_(matrix.reshape_as(p))` stored back: pytorch-optimizer's DASH)
    written = _viewed_names(ctx, facts, name, start(mutation.node))
    for want in wants | copied_into:
        for pos, names, rebinds, copy in stores.get(want, ()):
            if (copy or want not in copied_into) and pos >= after and \
                    any(n in names and n not in rebinds for n in written):
                return True
    return False


def _viewed_names(ctx, facts, name: str, pos) -> list[str]:
    """``name``, then the local names its value is a view of (through basic indexing and view methods)."""
    out = [name]
    for _ in range(_MAX_DEPTH):
        got = assigned_value(facts, out[-1], pos)
        if got is None:
            break
        value, pos = got
        while True:
            if isinstance(value, ast.Subscript) and is_basic_index(value.slice):
                value = value.value
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                    and value.func.attr in VIEW_METHODS:
                value = value.func.value
            else:
                break
        if not isinstance(value, ast.Name) or value.id in out and value.id != out[-1]:
            break
        if value.id != out[-1]:
            out.append(value.id)
    return out


def _strip_data(text: str) -> str:
    return text[:-5] if text.endswith(".data") else text


def _store_backs(ctx, facts) -> dict:
    """What the scope stores values into, keyed by the destination's text without ``.data``: for each
    store (an assignment, ``dest.copy_(v)``, ``setattr(obj, "name", v)``) its position, the names the
    stored value reads and the names the statement rebinds. Built once per scope, so checking many writes
    stays linear in the scope's size."""
    cached = getattr(facts, "_tl101_store_backs", None)
    if cached is not None:
        return cached
    found: dict = {}

    def add(dest: str, node, value, rebinds=frozenset(), copy=False):
        names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        found.setdefault(_strip_data(dest), []).append(((node.lineno, node.col_offset), names, rebinds, copy))

    for node in ast.walk(facts.node):
        if isinstance(node, ast.Assign):
            rebinds = frozenset(t.id for t in node.targets if isinstance(t, ast.Name))
            for t in node.targets:
                if isinstance(t, (ast.Attribute, ast.Subscript, ast.Name)):
                    add(ctx.segment(t), node, node.value, rebinds)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "copy_":
                add(ctx.segment(func.value), node, node.args[-1], copy=True)
            elif isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) == 3:
                attr = node.args[1]
                if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                    add(f"{ctx.segment(node.args[0])}.{attr.value}", node, node.args[-1])
    facts._tl101_store_backs = found
    return found


def _loop_owner(facts, binding) -> str | None:
    """The argument whose items a loop variable takes: ``for v in xs`` or ``for v, m in zip(xs, ms)``."""
    loop = binding.stmt
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return None
    iters = [loop.iter]
    if isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "zip":
        target = loop.target
        if not isinstance(target, ast.Tuple) or len(target.elts) != len(loop.iter.args):
            return None
        iters = [a for t, a in zip(target.elts, loop.iter.args) if isinstance(t, ast.Name) and t.id == binding.name]
    elif not isinstance(loop.target, ast.Name):
        return None
    for it in iters:
        if isinstance(it, ast.Name) and facts.binding_at(it.id, (loop.lineno, loop.col_offset)) == "param":
            return None if it.id in ("self", "cls") else it.id
    return None


def _is_held_elsewhere(expr) -> bool:
    """An attribute (``obj.t``) or a string-keyed item (``state["t"]``): some object keeps the tensor."""
    if isinstance(expr, ast.Attribute):
        return expr.attr not in VIEW_ATTRIBUTES
    if isinstance(expr, ast.Subscript):
        return isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, str)
    return False


def _is_fresh(ctx, expr) -> bool:
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Attribute) and expr.func.attr in FRESH_METHODS:
            return True
        return ctx.resolve(expr.func) in FRESH_FUNCTIONS
    return False


def _view_input(ctx, expr):
    """The tensor that ``expr`` is (or may be) a view of; None for fresh values."""
    if isinstance(expr, ast.Subscript):
        return expr.value if is_basic_index(expr.slice) else None
    if isinstance(expr, ast.Attribute) and expr.attr in VIEW_ATTRIBUTES:
        return expr.value
    found = _maybe_view(ctx, expr)
    if found:
        return found[1]
    if isinstance(expr, ast.Call) and expr.args and ctx.resolve(expr.func) in SHARING_FUNCTIONS:
        return expr.args[0]  # torch.from_numpy(a) shares a's memory
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in VIEW_METHODS:
        if (ctx.resolve(expr.func) or "").startswith("torch."):
            return expr.args[0] if expr.args else None
        return expr.func.value
    if isinstance(expr, ast.Name):
        return expr
    return None


def _describe(mutation) -> str:
    if mutation.kind == "option":
        return mutation.method
    if mutation.kind == "method":
        return f"`{mutation.method}`"
    if mutation.kind == "augassign":
        return "augmented assignment"
    if mutation.kind == "setitem":
        return "item assignment"
    return "`out=`"


# Text pre-filter: a function can only hold a finding if its text has a maybe-view call and a write.
MAYBE_VIEW_TEXT = re.compile(
    r"\.(?:reshape|reshape_as|flatten|ravel|contiguous|to|type|type_as|float|half|double|bfloat16|int|long|"
    r"short|bool|byte|char|cpu|cuda)\s*\("
)


class _AnyOf:
    """A text matches where one of ``patterns`` does: ``search`` (all its callers ask) tries each in turn."""

    def __init__(self, *patterns: str):
        self.patterns = tuple(re.compile(p) for p in patterns)

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize):
        for pattern in self.patterns:
            found = pattern.search(text, pos, endpos)
            if found is not None:
                return found
        return None


# `[a-z0-9]_\s*\(|[-+*/%@&|^]=|<<=|>>=|\]\s*=[^=]|\bout\s*=|\binplace\s*=\s*True`, one branch at a time, each starting
# with a literal: the regex engine then skips, in C, to that character, where one alternation stops at every `_`,
# `o`, `i`, `=`... (3x slower over the transformers sources). The operators and `(` are found from their last
# character, their first ones looked behind at: a match starts a character or two later, ends at the same place, and
# the look-behind never reaches past the start of a function's first line (what functions_matching searches from).
INPLACE_TEXT = _AnyOf(
    r"=(?:(?<=[-+*/%@&|^]=)|(?<=<<=)|(?<=>>=))",
    r"\]\s*=[^=]",
    r"\((?<=[a-z0-9]_\()",
    r"_(?<=[a-z0-9]_)\s+\(",
    r"out(?<!\wout)\s*=",
    r"inplace(?<!\winplace)\s*=\s*True",
)


def check(ctx):
    text = ctx.source.text
    if "torch" not in text and "thunder" not in text and "Tensor" not in text:
        return  # no PyTorch in this file: reshape/flatten here are NumPy's or someone else's
    maybe_view_lines = ctx.text_lines(MAYBE_VIEW_TEXT)
    if not maybe_view_lines:
        return
    scopes = [info.node for info in ctx.functions_matching(maybe_view_lines, INPLACE_TEXT)]
    if ctx.module_code_matches(maybe_view_lines, INPLACE_TEXT):
        scopes.append(ctx.tree)  # script code at module level
    for scope in scopes:
        facts = ctx.facts(scope)
        reported = set()
        for mutation in all_writes(ctx, facts):
            target = written_tensor(ctx, facts, mutation)
            if target is None:
                continue
            src = _source_of_write(ctx, facts, target, start(mutation.node))
            if src is None:
                continue
            call, op, base = src
            if id(call) in reported:
                continue
            seen = _observer(ctx, facts, base, start(call), mutation)
            if seen is None:
                continue
            who, read_later = seen
            if op in _INTEGER_CASTS and _floating(ctx, facts, base, start(call)):
                continue  # an integer cast of floating-point values converts: always a copy (kornia's loftr
                # `w_kpts0_long = w_kpts0.long()` of a division's result)
            if op in CAST_METHODS:
                held = known_dtype(ctx, facts, base, start(call))
                if held is not None and cast_dtype(ctx, call) not in (None, held):
                    continue  # a cast to another dtype than the one its input is known to hold: always a copy
            if op in CAST_METHODS and not read_later:
                # A cast aliases only when nothing needs converting; authors usually know the dtypes
                # differ. Report it only where this function would see the aliasing itself.
                continue
            if _written_back(ctx, facts, target, call, base, mutation):
                continue  # the result is stored back into the base: it gets the new values either way
            reported.add(id(call))
            yield Finding(
                mutation.node,
                f"in-place {_describe(mutation)} writes to the result of `{op}`, a view of {who} or a copy: make it "
                f"explicit (`view` or `.clone()`)\n"
                f"which one depends on strides, dtype and device; compiled code may differ from eager here",
                _fixes(ctx, facts, call, op, base, read_later, _result_read_after(facts, target, mutation)),
            )


def _result_read_after(facts, target, mutation) -> bool:
    """Is the tensor written by ``mutation`` (``flat`` in ``flat[i] = v`` / ``flat.add_(1)``) read afterwards?"""
    root = target
    while isinstance(root, (ast.Subscript, ast.Attribute)):
        root = root.value
    if not isinstance(root, ast.Name):
        return False  # `x.reshape(-1).add_(1)`: the result has no name, nothing reads it again
    return facts.read_after(root.id, end(mutation.stmt), mutation.loop)


# -- fixes ----------------------------------------------------------------------------------------


def _fixes(ctx, facts, call, op, base, base_read_later, result_read_later) -> tuple[FixRequest, ...]:
    """The view and the copy, ordered by the evidence of intent.

    The written result never read again: the write can only have been meant for the base (filling the caller's
    buffer through ``freqs.flatten(0, -2)``), so the copy would make it dead code; it is shown, never applied.
    The base never read again and the result read: the copy is the likelier intent and comes first."""
    fixes = []
    view = _view_rewrite(ctx, call, op)
    if view is not None:
        title = "Make the aliasing explicit (use `view`)"
        arg = _jitted_input_behind(ctx, facts, base, call)
        if arg is not None:
            title = f"Make the aliasing explicit (use `view`; TL102 then reports the write to the input `{arg}`)"
        fixes.append(FixRequest(title, call, view, text_rewrite=getattr(view, "text", None)))
    if result_read_later:
        clone = FixRequest("Make the copy explicit (append `.clone()`)", call, _append_clone,
                           text_rewrite=_text_append_clone)
    else:
        clone = FixRequest("Make the copy explicit (append `.clone()`; the write would then reach nothing)", call, _append_clone, "display", text_rewrite=_text_append_clone)
    fixes.append(clone)
    if result_read_later and not base_read_later:
        fixes.reverse()  # the result is used and nobody reads the input again: the copy is the likelier intent
    return tuple(fixes)


def _jitted_input_behind(ctx, facts, base, call) -> str | None:
    """The argument of a jitted function that ``base`` is (or is a view of): after the `view` fix the write
    goes through a view of that input, which TL102 reports."""
    if not any(t.info.node is facts.node for t in ctx.jitted):
        return None
    return _view_of_argument(facts, base, start(call), through_view=True)


def _append_clone(node):
    import libcst as cst

    return cst.Call(func=cst.Attribute(value=node, attr=cst.Name("clone")))


def _int_constant(expr) -> int | None:
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return expr.value
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        v = _int_constant(expr.operand)
        return -v if v is not None else None
    return None


def _view_rewrite(ctx, call, op):
    """A libcst rewrite of ``call`` into a ``view`` with the same shape, or None when there is no such view."""
    if op not in ("reshape", "reshape_as", "flatten", "ravel"):
        return None
    is_function = ctx.resolve(call.func) in MAYBE_VIEW_FUNCTIONS
    args = call.args[1:] if is_function else call.args
    keywords = [k.arg for k in call.keywords]
    if op == "reshape_as":
        return None if is_function else _rename_method("view_as")
    if op == "reshape":
        if keywords and keywords != ["shape"]:
            return None
        return _function_to_view if is_function else _reshape_method_to_view
    # flatten(start_dim, end_dim) / ravel(): only constant dims have a view spelling
    if keywords:
        return None
    dims = [_int_constant(a) for a in args]
    if any(d is None for d in dims) or len(dims) > 2:
        return None
    start_dim = dims[0] if dims else 0
    end_dim = dims[1] if len(dims) > 1 else -1
    if (start_dim < 0) == (end_dim < 0) and end_dim < start_dim:
        return None  # flatten raises there; with mixed signs only the tensor's rank can tell
    return _flatten_to_view(is_function, start_dim, end_dim)


def _rename_method(new):
    def rewrite(node):
        import libcst as cst

        return node.with_changes(func=node.func.with_changes(attr=cst.Name(new)))

    rewrite.text = lambda segment, call: _text_method_to(new, segment, call, keywords_positional=False)
    return rewrite


def _reshape_method_to_view(node):
    """x.reshape(s) -> x.view(s); `shape=` becomes positional (Tensor.view has no `shape` keyword)."""
    import libcst as cst

    args = [a.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT) if a.keyword else a for a in node.args]
    return node.with_changes(func=node.func.with_changes(attr=cst.Name("view")), args=args)


_reshape_method_to_view.text = lambda segment, call: _text_method_to("view", segment, call, keywords_positional=True)


# The libcst rewrites above done on the call's text (analyzer.fixes: ``text_rewrite``): (text, its ast.Call) -> the code
# libcst renders, or None (libcst builds it). libcst keeps every token of a node it does not change, so renaming
# the method and dropping `shape=` are text edits at the ast's positions.
def _text_append_clone(segment, call):
    return segment + ".clone()"


def _text_method_to(new, segment, call, keywords_positional):
    """``x.<method>(args)`` -> ``x.<new>(args)``, keywords (``shape=``) made positional if asked."""
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    lines = _segment_line_starts(segment)
    end = lines[call.func.end_lineno - 1] + call.func.end_col_offset
    start = end - len(call.func.attr)
    if segment[start:end] != call.func.attr:
        return None
    pieces, last = [], len(segment)
    for kw in reversed(call.keywords if keywords_positional else ()):  # libcst drops the keyword and its `=` with their whitespace
        if kw.arg is None:
            return None
        kw_start = lines[kw.lineno - 1] + kw.col_offset
        value_start = lines[kw.value.lineno - 1] + kw.value.col_offset
        if segment[kw_start:kw_start + len(kw.arg)] != kw.arg or not _EQUAL.fullmatch(segment, kw_start + len(kw.arg), value_start):
            return None  # a parenthesized value starts before the ast's position
        pieces += [segment[value_start:last]]
        last = kw_start
    pieces += [segment[end:last], new, segment[:start]]
    return "".join(reversed(pieces))


_EQUAL = re.compile(r"[ \t\n]*=[ \t\n]*")


def _segment_line_starts(segment):
    starts = [0]
    for i, ch in enumerate(segment):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _function_to_view(node):
    """torch.reshape(x, s) -> x.view(s)"""
    import libcst as cst

    tensor = node.args[0].value
    rest = [a.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT) for a in node.args[1:]]
    if rest:
        rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return cst.Call(func=cst.Attribute(value=tensor, attr=cst.Name("view")), args=rest)


def _flatten_to_view(is_function, start_dim, end_dim):
    def rewrite(node):
        import libcst as cst

        tensor = node.args[0].value if is_function else node.func.value
        if start_dim == 0 and end_dim == -1:
            minus_one = cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer("1"))
            return cst.Call(func=cst.Attribute(value=tensor, attr=cst.Name("view")), args=[cst.Arg(minus_one)])
        if not isinstance(tensor, (cst.Name, cst.Attribute)):
            return None  # the shape spelling would evaluate the tensor expression twice
        src = cst.Module([]).code_for_node(tensor)
        parts = []
        if start_dim != 0:
            parts.append(f"*{src}.shape[:{start_dim}]")
        parts.append("-1")
        if end_dim != -1:
            parts.append(f"*{src}.shape[{end_dim + 1}:]")
        return cst.parse_expression(f"{src}.view({', '.join(parts)})")

    return rewrite
