"""rules.walks.walk lists what ast.walk yields but the context and operator singletons, in its order, and leaves no
reference cycle on the tree."""

import ast
import gc
import weakref
from pathlib import Path

import pytest

from rules.walks import walk

REPO = Path(__file__).resolve().parents[2]
# `Load`, `Store`, `Add`, `Eq`, `And`, `Not`...: the walks leave them out
SINGLETONS = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)


def _walked(nodes):
    return [id(n) for n in nodes if not isinstance(n, SINGLETONS)]
# real code of every shape: the rules, the analyzer and the compiler's interpreter
SOURCES = sorted(REPO.glob("rules/*.py")) + sorted(REPO.glob("analyzer/static/*.py")) + sorted(
    REPO.glob("compiler/frontend/interpreter/*.py"))


@pytest.mark.parametrize("path", SOURCES[:40], ids=lambda p: p.name)
def test_same_nodes_in_the_same_order_as_ast_walk(path):
    tree = ast.parse(path.read_text())
    subtrees = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.If))]
    for node in subtrees:
        expected = _walked(ast.walk(node))
        assert [id(n) for n in walk(node)] == expected
        assert [id(n) for n in walk(node)] == expected  # the second time from the list kept


def test_fields_that_are_absent_or_optional():
    tree = ast.parse("def f(a, /, b=1, *c, d, **e) -> int:\n    return [x async for x in y if x]\n"
                     "match p:\n    case {'k': [1, *rest]} if rest:\n        pass\n")
    del tree.body[0].returns  # a field missing altogether: ast.walk skips it, so must walk
    assert [id(n) for n in walk(tree)] == _walked(ast.walk(tree))


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
    from rules.walks import preorder

    tree = ast.parse(path.read_text())
    for node in [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        assert [id(n) for n in preorder(node)] == _walked(fast_walk(node))


# -- line_roots / lines_with: the subtrees that hold every node with a token on given lines ---------------------

def _tokens_on(tree, lines):
    """Every expression-level node (with a position) that spans one of ``lines``: what must be found (statements and
    clauses are containers; their parts are what a search looks at)."""
    want = set(lines)
    return {id(n) for n in ast.walk(tree) if hasattr(n, "lineno")
            and not isinstance(n, (ast.stmt, ast.excepthandler, ast.match_case))
            and any(n.lineno <= line <= n.end_lineno for line in want)}


@pytest.mark.parametrize("path", SOURCES[:40], ids=lambda p: p.name)
def test_line_roots_hold_every_expression_on_the_lines(path):
    from rules.walks import line_roots, nodes

    tree = ast.parse(path.read_text())
    n_lines = len(path.read_text().splitlines())
    for lines in ([1], list(range(1, n_lines + 1, 7)), list(range(3, n_lines + 1, 31)), [n_lines]):
        found = {id(n) for root in line_roots(tree, lines) for n in nodes(root)}
        assert _tokens_on(tree, lines) <= found
        # and not the whole file: statements on no wanted line are left out
        if lines == [1]:
            assert len(found) < len(list(ast.walk(tree))) or n_lines < 3


def test_line_roots_reach_headers_of_compound_statements():
    from rules.walks import line_roots, nodes

    src = ("@deco(\n    f)\nclass A(Base):\n    def m(self, x=g):\n        try:\n            pass\n"
           "        except h:\n            pass\n        match x:\n            case K.v if f(x):\n                pass\n"
           "        with w(f) as y:\n            pass\n")
    tree = ast.parse(src)
    for name, line in (("f", 2), ("g", 4), ("h", 7), ("K", 10), ("w", 12)):
        found = [n for root in line_roots(tree, [line]) for n in nodes(root)]
        assert any(isinstance(n, ast.Name) and n.id == name for n in found), name


def test_lines_with_counts_lines_as_ast_does_and_refuses_respelled_identifiers():
    from rules.walks import lines_with

    assert lines_with("a = 1\r\nfoo()\rbar = foo\n", "foo") == [2, 3]  # \r\n and a lone \r end lines, as for ast
    assert lines_with("x = 1\n", "foo") == []
    # `ﬁx` (a ligature) is the identifier `fix` once NFKC-normalized: a text search for "fix" would miss it
    assert ast.parse("ﬁx()\n").body[0].value.func.id == "fix"
    assert lines_with("ﬁx()\n", "fix") is None
    assert lines_with("é = fix()  # café\n", "fix") == [1]  # non-ASCII, already normalized: searched
    assert lines_with("x = 1\n", "é") is None


@pytest.mark.parametrize("path", SOURCES[:40], ids=lambda p: p.name)
def test_tl205_source_order_from_the_shared_list_is_the_depth_first_one(path):
    """TL205 sorts the nodes it looks at by position, from the breadth-first list the other rules share: the same
    order as from its former depth-first walk (nodes starting at one place are an ancestor and its descendants)."""
    from rules.tl205_module_state import _LOOKED_AT, _in_order
    from rules.walks import preorder

    tree = ast.parse(path.read_text())
    for node in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        depth_first = sorted(preorder(node, _LOOKED_AT), key=lambda n: (n.lineno, n.col_offset))
        assert [id(n) for n in _in_order(node)] == [id(n) for n in depth_first]
