"""Name resolution shared by the jit rules (TL201-TL204): what a jitted function reads and writes."""

from __future__ import annotations

import ast
import re
from dataclasses import replace


_HELPER_DEPTH = 2  # helpers of helpers are followed this far


def jitted_scopes(ctx, follow_helpers: bool = True):
    """(jit target, its scope) for every jitted function of the file, then (with ``follow_helpers``) for the
    module-level functions they call by name: a jit traces into those too, so their global reads and side
    effects are the jitted function's. Helpers decorated to run eagerly (``@torch.compiler.disable``) are not.
    """
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
    for scope in jit_scope.walk():
        for call in scope.calls:
            func = call.func
            if not isinstance(func, ast.Name) or scope.owner_of(func.id) is not None:
                continue
            if ctx.index.bindings.get(func.id) != ["def"]:
                continue  # rebound, or not a function at all
            for info in ctx.index.top_functions.get(func.id, ()):
                if not _runs_eagerly(ctx, info.node):
                    out.append(info)
    return out


def _runs_eagerly(ctx, node) -> bool:
    """``@torch.compiler.disable`` / ``@torch._dynamo.disable``: the compiler calls it without tracing it."""
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = ctx.resolve(target) or ""
        if name.rsplit(".", 1)[-1] in ("disable", "skip"):
            return True
    return False


def _is_definition_only(scope, name: str) -> bool:
    """Is ``name`` bound in ``scope`` only by def/class/import (a function or module, not data)?"""
    kinds = [node for n, node in scope.writes if n == name]
    if not kinds:
        return name in scope.imports  # otherwise a parameter of the enclosing function: data
    return all(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in kinds)


def free_reads(ctx, jit_scope):
    """(name node, kind, owner scope) for reads that leave the jitted function.

    kind is "global" (a module global that is not static), "closure" (a variable of an enclosing function
    outside the jitted one). Each name is reported once per jitted function, at its first read.
    """
    seen = set()
    reads = []
    for scope in jit_scope.walk():
        for node in scope.loads:
            name = node.id
            if name in seen:
                continue
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
