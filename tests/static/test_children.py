"""The walks in flow.py and scopes.py visit a node's children through ``child_fields``: every child node that
``ast.iter_child_nodes`` yields, in its order, except the context and operator singletons and the ``alias`` nodes
of imports (both walks read an import from its statement)."""

from __future__ import annotations

import ast
from pathlib import Path

from analyzer.static.children import child_fields

REPO = Path(__file__).resolve().parents[2]
SKIPPED = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.alias)
EVERY_SYNTAX = """\
import a.b as c
from .d import e as f, g
async def h(x, /, y: int = 1, *args, z, **kw) -> None:
    global q
    async with x as (u, v), y:
        async for i in x:
            await i
    s = [j async for j in x if j]
    return {k: v for k, v in kw.items()}, {*args}, (w := 3), lambda p=1: p, f"{x!r:>{y}}"
class K(Base, metaclass=M):
    t: int = 0
    def m(self):
        nonlocal_free = 1
        def inner():
            nonlocal nonlocal_free
            nonlocal_free += 1
            del self.x[1:2, ::3]
            raise ValueError() from None
        try:
            yield from inner()
        except* (TypeError, KeyError) as e:
            pass
        else:
            assert not -x, "message"
        finally:
            x = a if b else c
        match x:
            case [1, *rest] | {"k": 2, **more} if rest:
                pass
            case K(a=1, b=[_, None]) as matched:
                pass
"""


def test_child_fields_keep_every_child_but_singletons_and_aliases():
    sources = [EVERY_SYNTAX] + [p.read_text(encoding="utf-8") for p in sorted((REPO / "analyzer").rglob("*.py"))]
    checked = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            want = [c for c in ast.iter_child_nodes(node) if not isinstance(c, SKIPPED)]
            got = []
            for name in child_fields(type(node)):
                value = getattr(node, name, None)
                got.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, ast.AST))
            assert got == want, (type(node).__name__, ast.dump(node)[:200])
            checked.add(type(node))
    assert len(checked) > 80  # the sample holds most node types


def test_child_fields_hold_only_nodes():
    """A walk pushes every value of these fields as a node: a field of strings among them (a class pattern's
    keyword names, a mapping pattern's `**rest`) crashed the project summary on every file with such a `match`
    (sglang 0.5.23, bench/precision_round4.md)."""
    for node in ast.walk(ast.parse(EVERY_SYNTAX + "match y:\n    case {**rest}:\n        pass\n")):
        for name in child_fields(type(node)):
            value = getattr(node, name, None)
            for v in value if isinstance(value, list) else [value]:
                assert v is None or isinstance(v, ast.AST), (type(node).__name__, name, v)
