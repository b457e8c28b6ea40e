"""rules._walk.walk lists what ast.walk yields, in its order, and leaves no reference cycle on the tree."""

import ast
import gc
import weakref
from pathlib import Path

import pytest

from rules._walk import walk

REPO = Path(__file__).resolve().parents[2]
# real code of every shape: the rules, the analyzer and the compiler's interpreter
SOURCES = sorted(REPO.glob("rules/*.py")) + sorted(REPO.glob("analyzer/static/*.py")) + sorted(
    REPO.glob("compiler/frontend/interpreter/*.py"))


@pytest.mark.parametrize("path", SOURCES[:40], ids=lambda p: p.name)
def test_same_nodes_in_the_same_order_as_ast_walk(path):
    tree = ast.parse(path.read_text())
    subtrees = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.If))]
    for node in subtrees:
        expected = list(ast.walk(node))
        assert [id(n) for n in walk(node)] == [id(n) for n in expected]
        assert [id(n) for n in walk(node)] == [id(n) for n in expected]  # the second time from the list kept


def test_fields_that_are_absent_or_optional():
    tree = ast.parse("def f(a, /, b=1, *c, d, **e) -> int:\n    return [x async for x in y if x]\n"
                     "match p:\n    case {'k': [1, *rest]} if rest:\n        pass\n")
    del tree.body[0].returns  # a field missing altogether: ast.walk skips it, so must walk
    assert [id(n) for n in walk(tree)] == [id(n) for n in ast.walk(tree)]


def test_the_kept_list_makes_no_cycle():
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        tree = ast.parse("def f(x):\n    return x + 1\n" * 50)
        for stmt in tree.body:
            list(walk(stmt))
        list(walk(tree))
        ref = weakref.ref(tree)
        del tree, stmt
        assert ref() is None  # freed by reference counting alone, with the collector off
    finally:
        if was:
            gc.enable()


@pytest.mark.parametrize("path", SOURCES[:12], ids=lambda p: p.name)
def test_preorder_is_fast_walks_order(path):
    from rules._module_state import fast_walk
    from rules._walk import preorder

    tree = ast.parse(path.read_text())
    for node in [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        assert [id(n) for n in preorder(node)] == [id(n) for n in fast_walk(node)]
