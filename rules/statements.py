"""Walks over statements, shared by the rules and the analyzer's static engine and project index (which import it
from here: the rules cannot import the analyzer)."""

from __future__ import annotations

import ast


def nested_statements(stmt) -> list:
    """The statements directly inside ``stmt``'s blocks: body, orelse, finalbody, except handlers, match cases."""
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
