"""Walks over statements, shared by the rules and the analyzer's static engine and project index (which import it
from here: the rules cannot import the analyzer)."""

from __future__ import annotations

import ast


# Statements that hold no statements (most of them): answered without looking for blocks (the walks over a
# method's statements test it first, too).
NO_BLOCKS = frozenset({ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Pass, ast.Break,
                      ast.Continue, ast.Delete, ast.Assert, ast.Nonlocal, ast.Global, ast.Import, ast.ImportFrom})


def nested_statements(stmt) -> list:
    """The statements directly inside ``stmt``'s blocks: body, orelse, finalbody, except handlers, match cases."""
    if type(stmt) in NO_BLOCKS:
        return []
    nested = []
    for attr in ("body", "orelse", "finalbody"):
        v = getattr(stmt, attr, None)
        if isinstance(v, list) and v and isinstance(v[0], ast.stmt):
            nested.extend(v)
    for h in getattr(stmt, "handlers", ()) or ():
        nested.extend(h.body)
    for c in getattr(stmt, "cases", ()) or ():
        nested.extend(c.body)
    return nested


def own_statements(body):
    """A scope's statements in order, nested blocks included, never nested functions' or classes' bodies."""
    stack = list(reversed(body))
    while stack:
        s = stack.pop()
        yield s
        if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(reversed(nested_statements(s)))


def own_nodes(func):
    """Every node of ``func``'s body that runs in its frame: the bodies of nested functions, classes and lambdas
    left out (a nested def's decorators, defaults and bases run here and are kept)."""
    stack = list(func.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt))
        else:
            stack.extend(ast.iter_child_nodes(node))
