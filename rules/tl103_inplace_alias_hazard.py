"""TL103 inplace-alias-hazard: a jitted function writes into an input in place and reads it again."""

from __future__ import annotations

import ast

from ._torch_api import (
    METADATA_ATTRIBUTES,
    METADATA_METHODS,
    VIEW_ATTRIBUTES,
    VIEW_METHODS,
    end,
    is_basic_index,
    is_none_check,
    start,
    written_tensor,
)
from ._values import Values
from ._option_writes import all_writes
from .compilers import compiled_message
from .base import Finding, RuleInfo
from .walks import walk

INFO = RuleInfo(
    code="TL103",
    name="inplace-alias-hazard",
    severity="warning",
    summary="A jitted function writes an input in place and reads it (or a value read from it before) again.",
    docs="""\
## What it does
Inside a jitted function, reports an in-place write into an input of the compiled function
(`q.index_copy_(...)`, `k += v`, `out=q`, `F.relu(q, inplace=True)`, a module built with `inplace=True`
applied to `q`) when the input is read again, or written again, later in the function; or when a value read
from it before the write is still used after it (`y = torch.log(x); x.log_(); return y`); and an indexed
update of an input (`y[idx] += y[idx]`) or an update from its own values at other positions (`x.add_(x.flip(0))`,
`torch._foreach_add_([x], [x.flip(0)])`), a read-modify-write of the caller's memory whether or not it is read
again. The result of an in-place call used as an operand (`a.exp_() * b`, `p.mul_(b).sum()`) is a read of the
written input (a chain of in-place calls, `x.mul_(a).mul_(b)`, is not); a foreach op writes each tensor of its first list. A function the compiled code calls is checked
with what its callers pass: its argument is an input only where a compiled caller hands it one of its own inputs. The trace check (`analyzer.check`,
`analyzer.jit`) walks the traced call as the functionalization does: it reports each input (arguments,
module parameters and buffers) that one op writes and a later op reads, views of the input included, at the
first write, and lists eager's order of those writes and reads. Stores that do not read the input
(`out[:, i] = v`, `index_copy_`) and returning the input are no reads.

## Why is this bad?
A compiler functionalizes the write (computes a new tensor) and copies the result back into the input
buffer at some point of the fused region. Reads of the input after the write must see the new values,
and two write-backs into one buffer must happen in order. When the compiler reorders the copy-back, or
lets the copy's destination alias its source, a later read sees the wrong memory (lightning-thunder #1193:
`q.index_copy_` followed by attention over `q`).

## Example
```python
@partial(thunder.jit, disable_inplace_copy_check=True)
def f(q, k, v, mask, idx, src):
    q.index_copy_(2, idx, src)
    k.index_copy_(2, idx, src)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, mask)
```

## Use instead
Use the out-of-place op and the new tensor:
```python
@thunder.jit
def f(q, k, v, mask, idx, src):
    q2 = q.index_copy(2, idx, src)
    k2 = k.index_copy(2, idx, src)
    return torch.nn.functional.scaled_dot_product_attention(q2, k2, v, mask)
```

## Fix safety
There is no automatic fix.

## References
- [lightning-thunder #1193: prims.copy_to_out_](https://github.com/Lightning-AI/lightning-thunder/pull/1193)
- [pytorch #93283: `stack` + inplace operator](https://github.com/pytorch/pytorch/issues/93283),
  [#94777: an inplace op changes the result of the ops before it](https://github.com/pytorch/pytorch/issues/94777),
  [#174074: advanced indexing with duplicate indices](https://github.com/pytorch/pytorch/issues/174074)
""",
    valid=[
        # the out-parameter idiom: the written input is only returned
        "import torch\n@torch.compile\ndef f(result, x, w):\n    result += x @ w\n    return result\n",
        # disjoint slices written in a loop, never read
        "import torch\n@torch.compile\ndef f(out: torch.Tensor, xs, n: int):\n    for i in range(n):\n"
        "        out[:, i] = xs[i] * 2\n    return out\n",
        "import thunder, torch\n@thunder.jit\ndef f(q, idx, src):\n    q2 = q.index_copy(2, idx, src)\n    return q2.sum()\n",
        # written once and never read again
        "import thunder\n@thunder.jit\ndef f(x, y):\n    x.add_(y)\n",
        # not jitted
        "import torch\ndef f(q, idx, src):\n    q.index_copy_(2, idx, src)\n    return q.sum()\n",
        # read before the write for its shape only: no value is read
        "import torch\n@torch.compile\ndef f(x):\n    n = x.shape[0]\n    x.mul_(2)\n    return n\n",
        # the read before the write is not used after it
        "import torch\n@torch.compile\ndef f(x):\n    s = x.sum()\n    x.div_(s)\n    return x\n",
        # an inplace option on a fresh tensor, and one of another library (pandas writes its receiver)
        "import torch\nimport torch.nn.functional as F\n@torch.compile\ndef f(x, frame):\n    rt = torch.stack([x])\n"
        "    F.relu(x * 2, inplace=True)\n    frame.fillna(x, inplace=True)\n    return rt\n",
        # `counts[k] += 1` on a dict: an indexed update of no tensor
        "import torch\n@torch.compile\ndef f(x, counts, k):\n    counts[k] += 1\n    return x * 2\n",
        # the state an optimizer keeps for a parameter, looked up by it: no value computed from the parameter
        "import torch\nclass Opt(torch.optim.Optimizer):\n    def __init__(self, params):\n"
        "        super().__init__(params, {'lr': 0.1})\n        self._update = torch.compile(self._update_param)\n"
        "    def _update_param(self, p, group):\n        state = self.state[p]\n"
        "        state['avg'].mul_(0.9).add_(p.grad)\n        p.add_(state['avg'], alpha=-group['lr'])\n"
        "        state['step'] += 1\n",
        # another input given only the input's shape before the write
        "import torch\n@torch.compile\ndef f(dst, src):\n    dst.resize_(src.shape)\n    src.add_(1)\n",
        # an update from the same positions (elementwise) reads each element before writing it; the in-place result
        # returned or bound is no further read
        "import torch\n@torch.compile\ndef f(x, g):\n    x.add_(x * 2)\n    return x\n",
        "import torch\n@torch.compile\ndef f(xs, ys):\n    torch._foreach_mul_(xs, 0.5)\n    torch._foreach_add_([ys[0]], [ys[1].flip(0)])\n",
        "import torch\n@torch.compile\ndef f(x):\n    return x.exp_()\n",
        "import torch\n@torch.compile\ndef f(x, noise, s):\n    x.mul_(noise).mul_(s)\n    return x\n",
    ],
    invalid=[
        # read again inside a loop: the next iteration reads what the write-back must already have stored
        "import torch\n@torch.compile\ndef blend(a: torch.Tensor, b: torch.Tensor, n: int):\n    for y in range(n):\n"
        "        b[:, y] = a[:, -n + y] * (1 - y / n) + b[:, y] * (y / n)\n    return b\n",
        "import torch\nimport thunder\nfrom functools import partial\n\n"
        "@partial(thunder.jit, disable_inplace_copy_check=True)\ndef f(q, k, v, mask, idx, src):\n"
        "    q.index_copy_(2, idx, src)\n    k.index_copy_(2, idx, src)\n"
        "    return torch.nn.functional.scaled_dot_product_attention(q, k, v, mask)\n",
        "import torch\n@torch.compile\ndef f(x, y):\n    x += y\n    x.mul_(2)\n",
        # read, then written in place while the read's result is still used (pytorch #94777)
        "import torch\n@torch.compile\ndef func(x):\n    y = torch.log(x)\n    x.log_()\n    return y\n",
        # the same with the write spelled as an option (pytorch #93283)
        "import torch\n@torch.compile\ndef fn(input):\n    rt = torch.stack([input])\n"
        "    v = torch.nn.functional.silu(input, inplace=True)\n    return rt\n",
        # an alias of the input taken before the write and read after it
        "import torch\nimport torch.nn.functional as F\n@torch.compile\ndef f(x):\n    identity = x\n"
        "    F.relu(x, inplace=True)\n    return identity * 2\n",
        # an option-spelled write read again after it
        "import torch\nimport torch.nn.functional as F\n@torch.compile\ndef f(x):\n    F.relu(x, inplace=True)\n"
        "    return x * 2\n",
        # a module built with inplace=True applied to the input, which is read again
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.act = nn.ReLU(inplace=True)\n        self.lin = nn.Linear(2, 2)\n    def forward(self, x):\n"
        "        h = self.lin(x)\n        self.act(x)\n        return h + x\nmodel = torch.compile(Net())\n",
        # an indexed update of an input: written whether or not it is read again (pytorch #174074)
        "import torch\nfrom torch.nn import Module\nclass Model(Module):\n    def forward(self, x):\n"
        "        x[[0, 0]] += x[[0, 0]]\n        return x\ncompiled_model = torch.compile(Model())\n",
        "import torch\n@torch.compile\ndef f(y: torch.Tensor, idx):\n    y[idx] += y[idx]\n",
        "import torch\n@torch.compile\ndef f(y, idx: torch.Tensor):\n    y[idx] += 1\n",
        # untyped, with the index computed at run time: the update reads the elements it writes (pytorch #138908)
        "import torch\n@torch.compile(dynamic=True)\ndef f(idx, y):\n    idx = idx + 10\n    y[idx] += y[idx]\n",
        # computed from the input through other locals before the write (pytorch #118961)
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, i):\n        t1 = torch.fliplr(input=i)\n"
        "        r1 = torch.diagflat(input=t1, offset=100)\n"
        "        t3 = torch.nn.functional.relu6(inplace=True, input=i)\n        return r1\nm = torch.compile(M())\n",
        # stored into another input before the write: the caller reads it (pytorch #198131)
        "import torch\n@torch.compile\ndef f(dst, src):\n    dst[0:, :] = src[0:, :]\n    src.add_(1)\n    return src\n",
        "import torch\n@torch.compile\ndef f(out, x):\n    out.copy_(x)\n    x.mul_(2)\n    return x\n",
        # an input updated from its own values at other positions, as a foreach op (pytorch #198033)
        "import torch\n@torch.compile\ndef f(x):\n    torch._foreach_add_([x], [x.flip(0)])\n    return x\n",
        "import torch\n@torch.compile\ndef f(x):\n    x.add_(x.transpose(0, 1))\n    return x\n",
        # the in-place result used as an operand reads the written input (lightning-thunder #2766)
        "import thunder\n@thunder.jit\ndef f(a, b):\n    return a.exp_() * b.tanh_()\n",
    ],
)


def _writes(ctx, facts):
    """(mutation, the tensor it writes) for each write; a foreach op (``torch._foreach_add_([x, y], ...)``) writes
    each tensor of its first list."""
    for mutation in all_writes(ctx, facts):
        written = written_tensor(ctx, facts, mutation)
        if isinstance(written, (ast.List, ast.Tuple)) and _foreach(mutation):
            for element in written.elts:
                yield mutation, element
        else:
            yield mutation, written


def _foreach(mutation) -> bool:
    call = mutation.node
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr.startswith("_foreach_")


# Ops that read a tensor's elements at other positions than they write them.
_MOVING = frozenset({"flip", "fliplr", "flipud", "roll", "rot90", "t", "transpose", "permute", "swapaxes", "swapdims",
                     "movedim", "T", "mT", "H", "mH"})


def _reads_itself_elsewhere(ctx, mutation, name) -> bool:
    """Does the in-place call read ``name`` through a position-moving op in its own operands (``x.add_(x.flip(0))``,
    ``torch._foreach_add_([x], [x.flip(0)])``)? Each output element then depends on another element of the same
    memory, which the write may already have changed."""
    call = mutation.node
    if mutation.kind != "method" or not isinstance(call, ast.Call):
        return False
    operands = [*call.args, *(k.value for k in call.keywords)]
    if written_by_argument(call):
        operands = operands[1:]  # `torch.add_(x, ...)`, `torch._foreach_add_([x], ...)`: the first is the written one
    for operand in operands:
        for n in ast.walk(operand):
            moved = n.value if isinstance(n, ast.Attribute) and n.attr in _MOVING else None
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MOVING:
                moved = n.args[0] if n.args and isinstance(n.func.value, ast.Name) and n.func.value.id == "torch" \
                    else n.func.value
            if isinstance(moved, ast.Name) and moved.id == name:
                return True
    return False


def written_by_argument(call) -> bool:
    """``torch.add_(x, ...)`` / ``torch._foreach_add_([x], ...)``: a module function writing its first argument."""
    return isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and call.func.value.id == "torch"


def _result_used(mutation) -> bool:
    """Is the in-place call's result (the written tensor itself) an operand of a larger expression (``a.exp_() *
    b``, ``p.mul_(0.9).sum()``)? That use reads the input after the write, as a later statement would. A chain of
    in-place calls (``x.mul_(a).mul_(b)``) reads nothing in between and is left alone."""
    call = mutation.node
    if mutation.kind != "method" or not isinstance(call, ast.Call):
        return False
    stmt = mutation.stmt
    if isinstance(stmt, (ast.Expr, ast.Return, ast.Assign)) and stmt.value is call:
        return False
    for parent in ast.walk(stmt):
        for child in ast.iter_child_nodes(parent):
            if child is call:
                if isinstance(parent, ast.Attribute) and parent.attr.endswith("_") and not parent.attr.startswith("_"):
                    return False  # `x.mul_(a).mul_(b)`: one in-place chain on the input, no read in between
                return not isinstance(parent, (ast.stmt, ast.Await, ast.IfExp, ast.BoolOp, ast.Tuple, ast.List))
    return False


def _only_returned(func, facts, name, after, loop) -> bool:
    """Are all the later uses of ``name`` a plain ``return name``? Returning the written input reads no
    memory inside the compiled region, so no reordered write-back can be seen."""
    returned = set()
    for n in walk(func):
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id == name:
            returned.add((n.value.lineno, n.value.col_offset))
        elif isinstance(n, ast.Assign):
            # `out[:, i:j] = v` in a loop stores into `out` without reading it
            for t in n.targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name:
                    returned.add((t.value.lineno, t.value.col_offset))
    if not returned:
        return False
    later = [p for p in facts.loads.get(name, ()) if p > after and facts.reachable(after, p)]
    if loop is not None:
        lo, hi = (loop.lineno, loop.col_offset), (loop.end_lineno, loop.end_col_offset)
        later += [p for p in facts.loads.get(name, ()) if lo <= p <= hi]
    return all(p in returned for p in later)


def check(ctx):
    for target in ctx.jitted:
        facts = ctx.facts(target.info.node)
        values = None
        reported = set()
        for mutation, written in _writes(ctx, facts):
            if not isinstance(written, ast.Name) or written.id in reported or written.id in ("self", "cls"):
                continue
            if facts.binding_at(written.id, start(mutation.node)) != "param":
                continue
            name = written.id
            indexed = mutation.kind == "setitem" and isinstance(mutation.stmt, ast.AugAssign)
            if mutation.kind in ("augassign", "setitem"):
                values = values or Values(ctx, target.info, facts)
                if indexed and not indexed_update(values, mutation, name):
                    continue  # `x[i] += v` writes through the view x[i]: TL102's finding
                if name not in values.tensors and not (indexed and (_tensor_index(values, mutation.node.slice)
                                                                    or _doubles_indexed(mutation, name))):
                    continue  # `n += 1` on a number rebinds; `kwargs["k"] = v` writes a dict, not a tensor
            later, earlier, self_read = False, None, False
            if indexed:
                # `y[idx] += y[idx]`: one read-modify-write of the caller's tensor (index_put), read again or not
                subject = f"{target.subject} updates its input `{name}` in place through an index"
                hazard = (f"—the read of `{name}[...]` and the write-back into `{name}` are one read-modify-write of "
                          f"the caller's memory: a compiler that fuses them reads what the write already changed "
                          f"(pytorch #174074)")
            elif (self_read := _reads_itself_elsewhere(ctx, mutation, name)):
                # `torch._foreach_add_([x], [x.flip(0)])`: the new values come from other positions of `x` itself
                subject = f"{target.subject} updates its input `{name}` in place from its own values at other positions"
                hazard = (f"—the reads of `{name}` and the write-back into it are one pass over the caller's memory: a "
                          f"compiler that fuses them reads elements the write already changed (pytorch #198033)")
            else:
                later = (facts.read_after(name, end(mutation.stmt), mutation.loop) and not _only_returned(
                    target.info.node, facts, name, end(mutation.stmt), mutation.loop)) or _result_used(mutation)
                earlier = None if later else _earlier_read_used_after(ctx, facts, name, mutation)
                if not later and earlier is None:
                    continue
                alias = earlier is not None and _is_alias(facts, earlier, name, mutation)
                if later or alias:
                    through = f" (through `{earlier}`)" if alias else ""
                    subject = f"{target.subject} writes its input `{name}` in place and uses it again{through}"
                    hazard = (f"—the compiler must copy the result back into `{name}` before that use, and reordered or "
                              f"aliased write-backs make it read the wrong memory")
                elif earlier in facts.params:
                    subject = (f"{target.subject} writes its input `{name}` in place after copying it into its "
                               f"input `{earlier}`")
                    hazard = (f"—the store into `{earlier}` must read `{name}` before the write reaches it; a compiler "
                              f"that reorders the write-back fills `{earlier}` with the new values (pytorch #198131)")
                else:
                    subject = (f"{target.subject} writes its input `{name}` in place while `{earlier}`, computed from "
                               f"it before, is still used")
                    hazard = (f"—`{earlier}` must be computed from `{name}` before the write reaches it; a compiler that "
                              f"reorders the write-back gives `{earlier}` the new values (pytorch #93283, #94777)")
            note = STORED_TORCH_COMPILE if earlier is not None and earlier in facts.params and not later \
                else SELF_READ_TORCH_COMPILE if self_read else TORCH_COMPILE
            if not real_input(ctx, target, name):
                continue  # a helper's argument that its compiled caller computed: no caller's tensor is written
            reported.add(name)
            yield Finding(
                mutation.node,
                **compiled_message(target, subject, "use the out-of-place op and its result", hazard, note,
                                   "TL103"),
            )


# What torch.compile does with each pattern above: tests/rules/test_rule_tl103_torch_compile.py runs them under the
# eager, aot_eager and inductor backends against eager PyTorch.
TORCH_COMPILE = ("matches eager here (torch 2.13): it functionalizes the write, keeps eager's order of the reads "
                 "around it and stores the new values into the caller's tensor; older releases reordered such "
                 "writes (pytorch #93283, #94777, #174074)")

# A value of the input stored into another input before the write: inductor (torch 2.13) runs the store after the
# write (pytorch #198131, still open); tests/rules/test_rule_tl103_torch_compile.py checks it.
STORED_TORCH_COMPILE = ("with the inductor backend (torch 2.13) moves the store after the in-place write: the other "
                        "input receives the new values, unlike eager (pytorch #198131); eager and aot_eager match eager")


# An input updated from its own values at other positions: tests/rules/test_rule_tl103_torch_compile.py runs both forms.
SELF_READ_TORCH_COMPILE = ("with the inductor backend (torch 2.13) gets the foreach form wrong on CPU: its kernel reads "
                           "elements it already wrote (pytorch #198033, also after an `index_put_`, #198270); the "
                           "method form (`x.add_(x.flip(0))`), eager and aot_eager match eager")

# Reading these gives metadata, not the values a write changes.
_METADATA = METADATA_ATTRIBUTES | METADATA_METHODS


def indexed_update(values, mutation, name) -> bool:
    """Is ``name[index] += v`` an indexed update (index_put on the input, TL103's) rather than a write through the
    view ``name[index]`` (TL102's)? It is when the index is a tensor or a list, or when the update reads ``name``
    itself (``y[idx] += y[idx]``) with an index that is no constant."""
    index = mutation.node.slice
    if is_basic_index(index):
        return False
    return _tensor_index(values, index) or _reads_values(mutation.stmt.value, name)


def _doubles_indexed(mutation, name) -> bool:
    """``y[idx] += y[idx]`` with an index computed at run time: the update reads the very elements it writes, the
    read-modify-write of pytorch #138908 (a container holding Python values is rarely doubled in place this way)."""
    stmt, index = mutation.stmt, mutation.node.slice
    if not isinstance(stmt, ast.AugAssign) or isinstance(index, (ast.Constant, ast.Slice)):
        return False
    dumped = ast.dump(mutation.node.slice)
    return any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == name
               and ast.dump(n.slice) == dumped for n in ast.walk(stmt.value))


def _tensor_index(values, index) -> bool:
    """An index only a tensor (or an array) takes: a list (``x[[0, 0]]``) or a tensor of indices or a mask."""
    if isinstance(index, ast.Tuple):
        return any(_tensor_index(values, e) for e in index.elts)
    return isinstance(index, ast.List) or (isinstance(index, ast.Name) and index.id in values.tensors)


def _reads_values(expr, name) -> bool:
    """Does ``expr`` read the values of the tensor ``name`` (not only its shape, dtype or identity)?"""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            if node.id == name:
                return True
            continue
        if isinstance(node, ast.Attribute) and node.attr in _METADATA and isinstance(node.value, ast.Name):
            continue  # `x.shape`, `x.size(0)`, `x.dtype`
        if is_none_check(node):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("len", "isinstance"):
            continue
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _earlier_read_used_after(ctx, facts, name, mutation) -> str | None:
    """A local computed from the input ``name`` before its in-place write and used after it (``rt =
    torch.stack([x]); F.silu(x, inplace=True); return rt``), directly or through other locals computed before the
    write (``t1 = torch.fliplr(i); r1 = torch.diagflat(t1); F.relu6(i, inplace=True); return r1``), or another
    input that such a value was stored into (``dst[:] = src[:]; src.add_(1)``: the caller reads ``dst``): its
    name, or None."""
    write_at, after = start(mutation.stmt), end(mutation.stmt)
    derived = {name}  # the input and the locals computed from it before the write
    found = []  # (the local, the position of its binding)
    for _ in range(_CHAIN_DEPTH):
        grew = False
        for other, bindings in facts.bindings.items():
            if other in derived:
                continue
            for b in bindings:
                if b.kind != "assign" or b.value is None or not b.pos <= write_at:
                    continue
                if not facts.reachable(b.pos, write_at) or not any(_reads_values(b.value, d) for d in derived):
                    continue
                if _keyed_lookup(b.value, derived) and _used_as_mapping(facts.node, other):
                    continue  # `state = self.state[p]`: an entry a dict keeps for `p`, not values computed from it
                derived.add(other)
                found.append((other, b.pos))
                grew = True
                break
        if not grew:
            break
    for other, pos in found:
        if facts.read_after(other, after, mutation.loop, since=pos):
            return other
    return _stored_into_input(facts, name, derived, mutation)


def _keyed_lookup(value, derived) -> bool:
    """``table[x]`` with the input itself as the whole key."""
    return isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Name) and value.slice.id in derived


def _used_as_mapping(func, name) -> bool:
    """Is ``name`` indexed with a string somewhere (``state["step"]``)? Only a mapping takes a string key: an
    optimizer's per-parameter state looked up by the parameter, not a tensor gathered with it as the index."""
    return any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == name
               and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str) for n in walk(func))


# How many locals deep a value computed from the input is followed (t1 = f(x); t2 = g(t1); r = h(t2)).
_CHAIN_DEPTH = 4


def _stored_into_input(facts, name, derived, mutation) -> str | None:
    """Another parameter that a store before the write filled with values read from ``name`` (``dst[0:, :] =
    src[0:, :]``, ``dst.copy_(src)``): the caller reads it after the call, so the store must read ``name`` before
    the write reaches it (pytorch #198131)."""
    write_at = start(mutation.stmt)
    for m in facts.mutations:
        if m is mutation or not start(m.stmt) < write_at or not facts.reachable(start(m.stmt), write_at):
            continue
        root = _view_root(m.target)
        if not isinstance(root, ast.Name) or root.id == name or root.id in ("self", "cls") \
                or root.id not in facts.params or facts.binding_at(root.id, start(m.stmt)) != "param":
            continue
        if isinstance(m.stmt, (ast.Assign, ast.AugAssign)) and m.kind in ("setitem", "augassign"):
            sources = [m.stmt.value]
        elif m.kind == "method" and isinstance(m.node, ast.Call):
            sources = [*m.node.args, *(k.value for k in m.node.keywords)]
        else:
            continue
        if any(_reads_values(e, d) for e in sources for d in derived):
            return root.id
    return None


def _is_alias(facts, other, name, mutation) -> bool:
    """Does ``other`` hold ``name`` itself or a view of it at the write (``identity = x``, ``row = x[0]``)?"""
    b = facts.binding_at(other, start(mutation.stmt))
    root = _view_root(getattr(b, "value", None))
    return isinstance(root, ast.Name) and root.id == name


_INPUT_DEPTH = 4


def real_input(ctx, target, name, depth=0, seen=None) -> bool:
    """Is the parameter ``name`` of ``target`` an input of the compiled function (a tensor its caller holds)?

    A compiled entry point's parameters are. A function the compiled code calls (a helper, a method, a
    submodule's forward) gets what its callers pass: an input only where a compiled caller in this file passes
    one of its own inputs. A function reached from another file's compiled code, whose call is not in sight,
    is not reported."""
    how = getattr(target, "how", "")
    if how != "reached" and not how.startswith("submodule of"):
        return True  # named by a compile call (or a decorator): its parameters are what the caller passes in
    seen = set() if seen is None else seen
    key = (id(target.info.node), name)
    if depth > _INPUT_DEPTH or key in seen:
        return False
    seen.add(key)
    for caller, call in _call_sites(ctx, target):
        arg = _view_root(_argument_for(target.info, call, name))
        if not isinstance(arg, ast.Name) or arg.id in ("self", "cls"):
            continue
        if not _may_hold_argument(ctx.facts(caller.info.node), arg.id, start(call)):
            continue
        if real_input(ctx, caller, arg.id, depth + 1, seen):
            return True
    return False


def _view_root(expr):
    """``x`` for ``x``, ``x[0]``, ``x.T``, ``x.view(-1)[1:]``: the tensor whose memory a view of it shares."""
    for _ in range(8):
        if isinstance(expr, ast.Subscript) and is_basic_index(expr.slice):
            expr = expr.value
        elif isinstance(expr, ast.Attribute) and expr.attr in VIEW_ATTRIBUTES:
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in VIEW_METHODS:
            expr = expr.func.value
        else:
            break
    return expr


def _may_hold_argument(facts, name, pos) -> bool:
    """May ``name`` still hold its argument at ``pos``: a parameter rebound before only inside a branch or a
    loop that ``pos`` is not in (``if input.shape[1] == 1: input = input.repeat(...)``: the other path passes the
    caller's tensor on)?"""
    if name not in facts.params:
        return False
    if facts.binding_at(name, pos) == "param":
        return True
    blocks = _conditional_blocks(facts)
    for b in facts.bindings.get(name, ()):
        if b.pos >= pos:
            break
        at = start(b.stmt)
        if not any(lo <= at <= hi and not lo <= pos <= hi for lo, hi in blocks):
            return False  # rebound on every path to the call
    return True


def _conditional_blocks(facts):
    """Spans of the blocks of ``facts``' function that a run may skip: if/else arms (not both, when both rebind
    the same name: then the name is rebound either way, which the caller's check of each binding sees as two
    skippable arms; rare enough to accept) and loop bodies."""
    cached = getattr(facts, "_tl103_blocks", None)
    if cached is None:
        cached = []
        for node in walk(facts.node):
            if isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While)):
                for block in (node.body, node.orelse):
                    if block:
                        cached.append((start(block[0]), end(block[-1])))
        facts._tl103_blocks = cached
    return cached


def _call_sites(ctx, target):
    """(compiled caller, call) for each call of ``target`` in this file's other compiled functions: by plain name,
    as ``self.<name>(...)`` from its own class, and, for a ``forward``, as ``self.<attr>(...)`` where the caller's
    class holds an instance of ``target``'s class in ``self.<attr>``."""
    info = target.info
    holders = {}
    for caller in ctx.jitted:
        if caller.info.node is info.node:
            continue
        facts = ctx.facts(caller.info.node)
        for call in facts.calls:
            f = call.func
            if info.class_node is None:
                if isinstance(f, ast.Name) and f.id == info.name and not facts.is_local(f.id) and not info.parents:
                    yield caller, call
                continue
            if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self"):
                continue
            if caller.info.class_node is info.class_node:
                if f.attr == info.name:
                    yield caller, call
            elif info.name == "forward" and caller.info.class_node is not None:
                key = id(caller.info.class_node)
                if key not in holders:
                    holders[key] = _attributes_holding(caller.info.class_node, info.class_node.name)
                if f.attr in holders[key]:
                    yield caller, call


def _attributes_holding(cls, held: str) -> set[str]:
    """``self.<attr> = <held>(...)`` anywhere in the class ``cls``: its submodules of the class named ``held``."""
    out = set()
    for node in walk(cls):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            f = node.value.func
            if isinstance(f, ast.Name) and f.id == held:
                out.update(t.attr for t in node.targets if isinstance(t, ast.Attribute)
                           and isinstance(t.value, ast.Name) and t.value.id == "self")
    return out


def _argument_for(info, call, name):
    """The expression ``call`` passes for the parameter ``name`` of ``info``'s function (None if unknown)."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    args = info.node.args
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    if info.class_node is not None and params and not _is_static(info.node):
        params = params[1:]  # `self.helper(h)`: h is the parameter after self
    if name not in params:
        return None
    i = params.index(name)
    for a in call.args[: i + 1]:
        if isinstance(a, ast.Starred):
            return None
    return call.args[i] if i < len(call.args) else None


def _is_static(func) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list)
