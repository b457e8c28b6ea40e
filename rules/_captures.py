"""Closures compiled anew on every call of the function that makes them, and what they capture.

``def forward(...): acc = torch.zeros(()); def chunk(c): acc.add_(...); chunk = torch.compile(chunk)`` compiles a
fresh closure on each call of ``forward``: its captured cells hold that call's values, read when the compiled
closure runs. torch.compile caches by code object and guards the cells: a captured tensor is a graph input (a
new tensor each call: one graph), a Python value is guarded (a recompile per new value; a float turns dynamic);
thunder's jit, made anew each call, traces anew. So a captured tensor is no hidden input there, unless the
enclosing function rebinds it after the compile (a loop that calls the compiled closure again).
tests/rules/test_rule_tl202_torch_compile.py runs each case under torch.compile on CPU.
"""

from __future__ import annotations

import ast

from ._values import is_tensor_annotation

_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# Attributes and methods only tensors have among the values a function captures (lists, dicts, numbers and
# callables have none of them).
_TENSOR_ATTRIBUTES = frozenset({"shape", "device", "dtype", "requires_grad", "grad", "ndim", "T", "mT", "is_cuda",
                                "grad_fn", "data"})
_TENSOR_METHODS = frozenset({"view", "reshape", "t", "transpose", "permute", "contiguous", "clone", "detach",
                             "unsqueeze", "squeeze", "numel", "dim", "size", "matmul", "float", "half", "bfloat16",
                             "new_zeros", "new_ones", "new_empty", "new_full", "type_as", "expand", "masked_fill", "sum",
                             "mean", "softmax", "log_softmax", "exp", "log", "sigmoid", "tanh", "relu", "norm",
                             "flatten", "chunk", "gather", "cpu", "cuda", "to"})
# torch.* calls that return Python values or objects, not tensors.
_TORCH_NON_TENSOR = ("torch.is_", "torch.Size", "torch.cuda", "torch.jit", "torch.compiler", "torch.get_",
                     "torch.backends", "torch.distributed", "torch.finfo", "torch.iinfo", "torch.device",
                     "torch.dtype", "torch.no_grad", "torch.enable_grad", "torch.autocast", "torch._", "torch.func",
                     "torch.compile", "torch.nn", "torch.utils", "torch.library", "torch.ops")


def compiled_per_call(ctx, target, jit_scope):
    """The function node that compiles ``target``'s closure on each of its calls, with the compile call's line:
    (function, line), or None. The compile call sits in the function that defines the closure (not in a nested
    function) and its result is a local name or called at once: a compiled closure stored on an object or
    returned outlives the call, and its cells keep one call's values."""
    how = getattr(target, "how", "")
    if not how.startswith("line ") or getattr(target, "elsewhere", "") or jit_scope.parent is None:
        return None
    try:
        line = int(how.split()[1])
    except (IndexError, ValueError):
        return None
    owner = jit_scope.parent
    while owner is not None and owner.kind not in ("function", "lambda"):
        owner = owner.parent
    if owner is None or not isinstance(owner.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    func = owner.node
    for stmt in _own_statements(func):
        if stmt.lineno != line:
            continue
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets) \
                and isinstance(stmt.value, ast.Call):
            return func, line
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Call):
            return func, line  # torch.compile(chunk)(x)
    return None


def _own_statements(func):
    """Statements of ``func``, nested blocks included, nested functions and classes not."""
    stack = list(func.body)
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, (*_FUNC, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            block = getattr(stmt, name, None)
            if isinstance(block, list):
                stack.extend(s for s in block if isinstance(s, ast.stmt))
        for h in getattr(stmt, "handlers", ()) or ():
            stack.extend(h.body)


def rebound_after(func, name: str, line: int) -> bool:
    """Does ``func`` bind ``name`` again after the compile on ``line``, or anywhere in a loop around it?"""
    loops = [s for s in _own_statements(func) if isinstance(s, (ast.For, ast.AsyncFor, ast.While))
             and s.lineno <= line <= (s.end_lineno or s.lineno)]
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            if node.lineno > line or any(lp.lineno <= node.lineno <= lp.end_lineno for lp in loops):
                return True
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names and node is not func:
            return True
    return False


def is_tensor(ctx, func, name: str) -> bool:
    """Evidence in ``func`` (the closure's maker, closure included) that ``name`` holds a tensor (or None): a tensor
    annotation, a tensor-only attribute or method used on it (``weight.requires_grad``, ``acc.add_(...)``),
    ``torch.zeros_like(name)``, ``name @ w``, or every assignment a torch call (``torch.zeros(())``,
    ``torch.zeros_like(w) if grad else None``)."""
    args = func.args
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        if a.arg == name and a.annotation is not None and is_tensor_annotation(a.annotation):
            return True
    assigned = []
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name:
            if node.attr in _TENSOR_ATTRIBUTES:
                return True
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == name and (
                    f.attr in _TENSOR_METHODS or (f.attr.endswith("_") and not f.attr.startswith("_"))):
                return True  # an in-place tensor method: add_, copy_, zero_
            if node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == name:
                callee = ctx.resolve(f) or ""
                if callee.startswith("torch.") and callee.endswith("_like"):
                    return True
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            if any(isinstance(s, ast.Name) and s.id == name for s in (node.left, node.right)):
                return True
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            assigned.append(node.value)
    return bool(assigned) and all(_tensor_made(ctx, v) for v in assigned)


def _tensor_made(ctx, value) -> bool:
    if isinstance(value, ast.IfExp):
        branches = [b for b in (value.body, value.orelse)
                    if not (isinstance(b, ast.Constant) and b.value is None)]
        return bool(branches) and all(_tensor_made(ctx, b) for b in branches)
    if isinstance(value, ast.Call):
        callee = ctx.resolve(value.func) or ""
        return callee.startswith("torch.") and not callee.startswith(_TORCH_NON_TENSOR)
    return False
