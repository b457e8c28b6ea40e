"""Name resolution shared by the jit rules (TL201-TL204): what a jitted function reads and writes."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from ._torch_api import compiling_checks_in, eager_only_spans, in_spans, mentions_compiling_checks
from .dotted import dotted_name


_HELPER_DEPTH = 2  # helpers of helpers are followed this far


def jitted_scopes(ctx, follow_helpers: bool = True) -> list:
    """(jit target, its scope) for every jitted function of the file, then (with ``follow_helpers``) for the
    module-level functions they call by name: a jit traces into those too, so their global reads and side
    effects are the jitted function's. Helpers decorated to run eagerly (``@torch.compiler.disable``) are not.
    Found once per file: five jit rules ask.
    """
    cache = ctx.__dict__.setdefault("_jitted_scopes", {})
    found = cache.get(follow_helpers)
    if found is None:
        found = cache[follow_helpers] = list(_jitted_scopes(ctx, follow_helpers))
    return found


def _jitted_scopes(ctx, follow_helpers: bool):
    seen = set()
    frontier = []
    for target in ctx.jitted:
        scope = ctx.function_scope(target.info)
        seen.add(id(target.info.node))
        frontier.append((target, scope))
        yield target, scope
    if not follow_helpers:
        return
    for _ in range(_HELPER_DEPTH):
        called = []
        for target, scope in frontier:
            for info in _called_helpers(ctx, scope):
                if id(info.node) in seen:
                    continue
                seen.add(id(info.node))
                helper = replace(target, info=info, how="helper", caller=target.caller or target.info.name)
                called.append((helper, ctx.function_scope(info)))
        for pair in called:
            yield pair
        frontier = called


def _called_helpers(ctx, jit_scope):
    """Module-level functions called by plain name from anywhere in ``jit_scope``."""
    out = []
    eager_only = eager_only_spans_of(ctx, jit_scope)
    for scope in jit_scope.walk():
        for call in scope.calls:
            func = call.func
            if not isinstance(func, ast.Name) or scope.owner_of(func.id) is not None:
                continue
            if eager_only and in_spans(call, eager_only):
                continue  # under `if not torch.compiler.is_compiling():`: never traced
            if ctx.index.bindings.get(func.id) != ["def"]:
                continue  # rebound, or not a function at all
            for info in ctx.index.top_functions.get(func.id, ()):
                if not _runs_eagerly(ctx, info.node):
                    out.append(info)
    return out


def eager_only_spans_of(ctx, jit_scope) -> list:
    """Spans of the jitted function that run only eagerly (``if not torch.compiler.is_compiling():``)."""
    node = jit_scope.node
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not mentions_compiling_checks(
            ctx.source.text) or not compiling_checks_in(ctx, node):
        return []  # (a function none of whose lines names a check has no eager-only block)
    cache = ctx.__dict__.setdefault("_eager_only_spans", {})  # asked by every jit rule, for each function
    spans = cache.get(id(node))
    if spans is None:
        spans = cache[id(node)] = eager_only_spans(node, ctx.facts(node).all_ifs)
    return spans


def _runs_eagerly(ctx, node) -> bool:
    """``@torch.compiler.disable`` / ``@torch._dynamo.disable`` (or a module-level alias of either): the
    compiler calls it without tracing it."""
    info = ctx.index.function_of.get(id(node))
    if info is not None and info.qualname in getattr(ctx, "eager_elsewhere", ()):
        return True  # the project index: a decorator imported from another module disables it
    aliases = disabler_aliases(ctx.index.tree, ctx.resolve)
    return any(eager_decorator(d, ctx.resolve, aliases) for d in node.decorator_list)


# What tells a compiler to run a function eagerly (dynamo skips its frame, and with recursive=True, the default,
# every frame it calls).
DISABLE = frozenset({"torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo",
                     "torch._dynamo.eval_frame.disable", "torch._dynamo.skip"})


# A custom operator's body is opaque to the compilers: torch.compile calls it as one op (its fake kernel gives the
# shapes), so its Python runs eagerly at every call, as under @torch.compiler.disable.
CUSTOM_OPS = frozenset({"torch.library.custom_op", "torch.library.triton_op", "torch._library.custom_ops.custom_op"})


def _disable_name(name: str) -> bool:
    if name in CUSTOM_OPS:
        return True
    last = name.rsplit(".", 1)[-1].lower()
    # `disable` however imported; a project's own helper named for what it does (`disable_compiler`,
    # `torch_compile_disable`, `_disable_dynamo`)
    return name in DISABLE or last == "disable" or ("disable" in last and ("compil" in last or "dynamo" in last))


def eager_decorator(dec, resolve=None, aliases=frozenset()) -> str:
    """"recursive" for a decorator (or call) that runs the function eagerly with everything it calls
    (``@torch.compiler.disable``, ``@torch._dynamo.disable(reason=...)``), "frame" for one that skips only
    its own frame (``recursive=False``: what it calls is compiled again), "" otherwise. ``aliases``: local
    names bound to one of them (``disable_compiler = torch.compiler.disable``), with their kind."""
    resolve = resolve or dotted_name
    kind = "recursive"
    target = dec
    if isinstance(dec, ast.Call):
        target = dec.func
        if (resolve(target) or "") in ("functools.partial", "partial") and dec.args:
            target = dec.args[0]  # partial(torch.compiler.disable, recursive=False)
        for kw in dec.keywords:
            if kw.arg == "recursive" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
                kind = "frame"
    if isinstance(target, ast.Name) and target.id in aliases:
        return aliases[target.id] if kind == "recursive" else kind
    name = resolve(target) or ""
    return kind if name and _disable_name(name) else ""


def disabler_aliases(tree, resolve=None) -> dict[str, str]:
    """Module-level names bound to a disable decorator (``disable_compiler = torch.compiler.disable``,
    ``no_trace = torch._dynamo.disable(recursive=False)``, also inside if/try), with its kind."""
    cached = getattr(tree, "_thunder_disablers", None)
    if cached is not None:
        return cached
    out: dict[str, str] = {}
    stack = list(tree.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = stmt.value
            # `torch.compiler.disable(recursive=False)` (no function: a decorator), or the decorator itself
            if not (isinstance(value, ast.Call) and value.args and (resolve or dotted_name)(value.func) not in (
                    "functools.partial", "partial")):
                kind = eager_decorator(value, resolve, out)
                if kind:
                    out[stmt.targets[0].id] = kind
        elif isinstance(stmt, (ast.If, ast.Try)):
            stack.extend(stmt.body)
            stack.extend(stmt.orelse)
            for h in getattr(stmt, "handlers", ()):
                stack.extend(h.body)
    try:
        tree._thunder_disablers = out
    except AttributeError:
        pass
    return out


def _is_definition_only(scope, name: str) -> bool:
    """Is ``name`` bound in ``scope`` only by def/class/import (a function or module, not data)?"""
    kinds = [node for n, node in scope.writes if n == name]
    if not kinds:
        return name in scope.imports  # otherwise a parameter of the enclosing function: data
    return all(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in kinds)


def free_reads(ctx, jit_scope):
    """(name node, kind, owner scope) for reads that leave the jitted function.

    kind is "global" (a module global that is not static), "closure" (a variable of an enclosing function
    outside the jitted one). Each name is reported once per jitted function, at its first read. Found once per
    scope: TL201 and TL202 both ask.
    """
    cache = ctx.__dict__.setdefault("_free_reads", {})
    got = cache.get(id(jit_scope))
    if got is None:
        got = cache[id(jit_scope)] = (jit_scope, tuple(_free_reads(ctx, jit_scope)))
    return got[1]  # (the scope is kept with its reads: its id is not reused while the file is linted)


def _free_reads(ctx, jit_scope) -> list:
    seen = set()
    reads = []
    eager_only = eager_only_spans_of(ctx, jit_scope)
    for scope in jit_scope.walk():
        for node in scope.loads:
            name = node.id
            if name in seen:
                continue
            if eager_only and in_spans(node, eager_only):
                continue  # under `if not torch.compiler.is_compiling():`: never traced
            owner = scope.owner_of(name)
            if owner is not None and owner.is_within(jit_scope):
                continue
            if _declared_and_written(scope, name):
                continue  # TL203 reports the write
            if owner is None:
                if ctx.index.module_name_kind(name) == "mutable" and not _fixed_namespace(ctx, jit_scope, name):
                    reads.append((node, "global", None))
                    seen.add(name)
            elif not _is_definition_only(owner, name):
                reads.append((node, "closure", owner))
                seen.add(name)
    reads.sort(key=lambda r: (r[0].lineno, r[0].col_offset))
    return reads


_NAMESPACE_USE = re.compile(r"\s*(?:\.|is\s+(?:not\s+)?None\b)")


def _fixed_namespace(ctx, jit_scope, name: str) -> bool:
    """A global bound once per import path (a kernel library or None) and used only as a namespace
    (``ops.gemm(...)``, ``ops is None``): code chosen at import, not data that changes between calls."""
    if not ctx.index.bound_at_import(name):
        return False
    for scope in jit_scope.walk():
        for node in scope.loads:
            if node.id == name and scope.owner_of(name) is None:
                # ast columns count UTF-8 bytes
                rest = ctx.source.line(node.lineno).encode("utf-8", "surrogatepass")[node.end_col_offset:].decode("utf-8", "replace")
                if not _NAMESPACE_USE.match(rest):
                    return False
    return True


def _declared_and_written(scope, name: str) -> bool:
    s = scope
    while s is not None:
        if name in s.globals or name in s.nonlocals:
            return any(n == name for n, _ in s.writes)
        if name in s.bound:
            return False
        s = s.parent
    return False
