"""Name resolution shared by the jit rules (TL201-TL204): what a jitted function reads and writes."""

from __future__ import annotations

import ast


def jitted_scopes(ctx):
    """(jit target, its scope) for every jitted function of the file."""
    for target in ctx.jitted:
        yield target, ctx.function_scope(target.info)


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
                if ctx.index.module_name_kind(name) == "mutable":
                    reads.append((node, "global", None))
                    seen.add(name)
            elif not _is_definition_only(owner, name):
                reads.append((node, "closure", owner))
                seen.add(name)
    reads.sort(key=lambda r: (r[0].lineno, r[0].col_offset))
    return reads


def _declared_and_written(scope, name: str) -> bool:
    s = scope
    while s is not None:
        if name in s.globals or name in s.nonlocals:
            return any(n == name for n, _ in s.writes)
        if name in s.bound:
            return False
        s = s.parent
    return False
