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
from .dotted import dotted_parts
from .statements import own_nodes, own_statements

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
    line = target.compile_line
    if line is None or jit_scope.parent is None:
        return None
    owner = jit_scope.parent
    while owner is not None and owner.kind not in ("function", "lambda"):
        owner = owner.parent
    if owner is None or not isinstance(owner.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    func = owner.node
    for stmt in own_statements(func.body):
        if stmt.lineno != line:
            continue
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets) \
                and isinstance(stmt.value, ast.Call):
            return func, line
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Call):
            return func, line  # torch.compile(chunk)(x)
    return None


def rebound_after(func, name: str, line: int) -> bool:
    """Does ``func`` bind ``name`` again after the compile on ``line``, or anywhere in a loop around it?"""
    loops = [s for s in own_statements(func.body) if isinstance(s, (ast.For, ast.AsyncFor, ast.While))
             and s.lineno <= line <= (s.end_lineno or s.lineno)]
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            if node.lineno > line or any(lp.lineno <= node.lineno <= lp.end_lineno for lp in loops):
                return True
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names and node is not func:
            return True
    return False


def is_tensor(ctx, func, name: str, depth: int = 2) -> bool:
    """Evidence in ``func`` (the closure's maker, closure included) that ``name`` holds a tensor (or None): a tensor
    annotation, a tensor-only attribute or method used on it (``weight.requires_grad``, ``acc.add_(...)``),
    ``torch.zeros_like(name)``, ``name @ w``, a bias added to a matmul product under an ``is not None`` test,
    every assignment a torch call (``torch.zeros(())``, ``torch.zeros_like(w) if grad else None``), or ``name``
    passed to a function of this module whose parameter has such evidence (``depth`` calls deep)."""
    if _is_tensor_here(ctx, func, name):
        return True
    if _optional_bias(func, name):
        return True
    return depth > 0 and _passed_as_tensor(ctx, func, name, depth - 1)


def _is_tensor_here(ctx, func, name: str) -> bool:
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


def _optional_bias(func, name: str) -> bool:
    """``y = x @ w`` then ``y += name`` (or ``x @ w + name``) with ``name is not None`` tested: a linear layer's
    optional bias. Only an addition to a matmul product, and only an optional one: a Python scale (``y * s``,
    ``y + 1.0``) is no evidence, and a number is rarely passed where None means "no term"."""
    optional = products = False
    added = []
    for node in ast.walk(func):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == name \
                and isinstance(node.ops[0], ast.IsNot) and isinstance(node.comparators[0], ast.Constant) \
                and node.comparators[0].value is None:
            optional = True
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and _is_name(node.value, name) \
                and isinstance(node.target, ast.Name):
            added.append(node.target.id)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _is_name(node.right, name) \
                and _is_matmul(node.left):
            products = True
    if not optional:
        return False
    if products:
        return True
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and _is_matmul(node.value) \
                and any(isinstance(t, ast.Name) and t.id in added for t in node.targets):
            return True
    return False


def _is_name(node, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_matmul(node) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)


# torch.func transforms called as transform(f, ...)(args): the args go to f.
_TRANSFORMS = frozenset({"torch.func.grad", "torch.func.grad_and_value", "torch.func.vmap", "torch.vmap",
                         "functorch.grad", "functorch.grad_and_value", "functorch.vmap"})


def _passed_as_tensor(ctx, func, name: str, depth: int) -> bool:
    """Is ``name`` passed, as a bare argument, to a function defined in this module whose parameter there has
    tensor evidence? Calls through ``functools.partial`` names and torch.func transforms are followed."""
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        at = [i for i, a in enumerate(node.args) if _is_name(a, name)]
        kws = [k.arg for k in node.keywords if k.arg and _is_name(k.value, name)]
        if not at and not kws:
            continue
        callee = _callee(ctx, func, node.func)
        if callee is None:
            continue
        target, skip = callee
        params = target.args.posonlyargs + target.args.args
        names = [params[i + skip].arg for i in at if i + skip < len(params)]
        names += [k for k in kws if any(p.arg == k for p in params + target.args.kwonlyargs)]
        if any(is_tensor(ctx, target, p, depth) for p in names):
            return True
    return False


def _callee(ctx, func, expr, hops: int = 4):
    """The module function ``expr`` calls, with how many leading positional parameters a partial binds."""
    if hops == 0:
        return None
    if isinstance(expr, ast.Call):
        made = ctx.resolve(expr.func) or ""
        if made in _TRANSFORMS and expr.args:  # grad_and_value(f, argnums=...)(...): the arguments go to f
            return _callee(ctx, func, expr.args[0], hops - 1)
        if made == "functools.partial" and expr.args:  # partial(f, a, k=v)(...): after a, they go to f
            inner = _callee(ctx, func, expr.args[0], hops - 1)
            return inner and (inner[0], inner[1] + len(expr.args) - 1)
        return None
    if isinstance(expr, ast.Name):
        bound = [n.value for n in ast.walk(func) if isinstance(n, ast.Assign)
                 and any(_is_name(t, expr.id) for t in n.targets)]
        if len(bound) == 1 and isinstance(bound[0], ast.Call):
            return _callee(ctx, func, bound[0], hops - 1)  # loss_fn = partial(f, ...)
        a = func.args
        if bound or any(p.arg == expr.id for p in a.posonlyargs + a.args + a.kwonlyargs):
            return None  # a local value or a parameter, not the module's function of that name
    return _module_def(ctx.tree, expr)


def _module_def(tree, expr):
    """``f`` or ``Class.f`` defined at the top of the module: (def, 0); a method called through its class takes its
    ``self`` explicitly, so the positions line up either way."""
    parts = dotted_parts(expr)
    if parts is None:
        return None
    body = tree.body
    for i, part in enumerate(parts):
        found = next((s for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      and s.name == part), None)
        if found is None:
            return None
        if not isinstance(found, ast.ClassDef):
            return (found, 0) if i == len(parts) - 1 else None
        body = found.body
    return None


def _tensor_made(ctx, value) -> bool:
    if isinstance(value, ast.IfExp):
        branches = [b for b in (value.body, value.orelse)
                    if not (isinstance(b, ast.Constant) and b.value is None)]
        return bool(branches) and all(_tensor_made(ctx, b) for b in branches)
    if isinstance(value, ast.Call):
        callee = ctx.resolve(value.func) or ""
        return callee.startswith("torch.") and not callee.startswith(_TORCH_NON_TENSOR)
    return False


def memoized(ctx, func, name: str) -> bool:
    """Is ``name`` bound in ``func`` only by ``name = build()``, where the module function ``build`` memoizes its
    result in a module global (``global _OP; if _OP is not None: return _OP; ...; _OP = op; return _OP``) that
    nothing else in the file binds but to None at the top? Then every call of ``func`` captures the same object:
    torch.compile's guard on the cell holds, no recompile (tests/rules/test_rule_tl202_torch_compile.py)."""
    bound = [n.value for n in ast.walk(func) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
             and any(_is_name(t, name) for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    if len(bound) != 1 or not isinstance(bound[0], ast.Call) or bound[0].args or bound[0].keywords \
            or not isinstance(bound[0].func, ast.Name):
        return False
    a = func.args
    if any(p.arg == bound[0].func.id for p in a.posonlyargs + a.args + a.kwonlyargs):
        return False  # a builder passed in, not the module's function of that name
    found = _module_def(ctx.tree, bound[0].func)
    if found is None:
        return False
    build = found[0]
    cache = next((g for s in build.body if isinstance(s, ast.Global) for g in s.names), None)
    if cache is None:
        return False
    returns = [n for n in own_nodes(build) if isinstance(n, ast.Return)]
    if not returns or not all(_is_name(r.value, cache) for r in returns):
        return False
    guard = next((i for i, s in enumerate(build.body) if isinstance(s, ast.If) and _is_cached(s.test, cache)
                  and len(s.body) == 1 and isinstance(s.body[0], ast.Return)), None)
    stores = [i for i, s in enumerate(build.body) if any(_stores(n, cache) for n in ast.walk(s))]
    if guard is None or any(i <= guard for i in stores):
        return False  # no early return of the cached value before the cache is filled: built anew each call
    for node in ast.walk(ctx.tree):  # the cache's other bindings: only `_OP = None` at the top of the module
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not build \
                and any(_stores(n, cache) for n in ast.walk(node)) \
                and any(isinstance(n, ast.Global) and cache in n.names for n in ast.walk(node)):
            return False
    for stmt in ctx.tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            for n in ast.walk(stmt):
                if _stores(n, cache) and not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)
                                              and stmt.value.value is None):
                    return False
    return True


def _is_cached(test, cache: str) -> bool:
    if _is_name(test, cache):
        return True
    return isinstance(test, ast.Compare) and _is_name(test.left, cache) and isinstance(test.ops[0], ast.IsNot) \
        and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None


def _stores(node, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load) or (
        isinstance(node, (ast.Delete,)) and any(_is_name(t, name) for t in node.targets))


def looked_up_function(ctx, func, scope_node, name: str) -> bool:
    """Is ``name`` a function the closure calls, bound once in ``func`` to a lookup on an imported class or module
    (``original = Quant.to_q``, ``fn = F.gelu``) that this file never assigns, or to the saved-original idiom
    ``original = _SAVED or Quant.to_q`` where the module global ``_SAVED`` is bound only to None or to that same
    lookup (a patch saves the original there before replacing it)? Then every call of ``func`` captures the same
    function object and torch.compile's identity guard on the cell holds: no recompile
    (tests/rules/test_rule_tl202_torch_compile.py, unsloth's nvfp4 verify())."""
    if not any(isinstance(n, ast.Call) and _is_name(n.func, name) for n in ast.walk(scope_node)):
        return False  # only a called value is known to be a function
    bound = [n for n in ast.walk(func) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For))
             and any(_is_name(t, name) for t in _targets(n))]
    if len(bound) != 1 or not isinstance(bound[0], ast.Assign):
        return False
    value = bound[0].value
    saved = None
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and len(value.values) == 2 \
            and isinstance(value.values[0], ast.Name):
        saved, value = value.values[0].id, value.values[1]
    lookup = dotted_parts(value)
    if lookup is None or len(lookup) < 2 or not _imported(ctx, func, lookup[0]):
        return False
    patched = False
    for node in ast.walk(ctx.tree):
        for target in _targets(node) if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) else ():
            if dotted_parts(target) == lookup:
                patched = True
            if saved is not None and _is_name(target, saved):
                v = node.value
                if not (isinstance(v, ast.Constant) and v.value is None) and dotted_parts(v) != lookup:
                    return False  # the saved global holds something else at some point
    if saved is not None:
        return _module_bound(ctx.tree, saved)
    return not patched


def _targets(node):
    if isinstance(node, ast.Assign):
        out = []
        for t in node.targets:
            out.extend(t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])
        return out
    return [node.target]


def _imported(ctx, func, root: str) -> bool:
    """``root`` names an import: at the module's top, or inside ``func`` itself (``from m import Cls``)."""
    for stmt in list(ctx.tree.body) + [n for n in ast.walk(func) if isinstance(n, (ast.Import, ast.ImportFrom))]:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name.split(".")[0]) == root for a in stmt.names):
            return True
    return False


def _module_bound(tree, name: str) -> bool:
    """``name`` is a global of the module: bound at its top level."""
    return any(isinstance(s, (ast.Assign, ast.AnnAssign)) and any(_is_name(t, name) for t in _targets(s))
               for s in tree.body)
