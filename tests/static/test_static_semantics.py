"""The semantic layer on its own: scopes/bindings (name resolution) and per-function flow facts."""

import ast

from analyzer.static.flow import build_facts
from analyzer.static.scopes import build_scopes


def scope_of(src, name):
    tree = ast.parse(src)
    root = build_scopes(tree.body[0])
    for s in root.walk():
        if getattr(s.node, "name", None) == name or (name == "<comp>" and s.kind == "comprehension"):
            return root, s
    raise AssertionError(name)


def owner_name(scope, name):
    owner = scope.owner_of(name)
    return None if owner is None else getattr(owner.node, "name", owner.kind)


def test_class_body_is_invisible_to_its_methods():
    src = "def outer():\n    k = 1\n    class C:\n        k = 2\n        def m(self):\n            return k\n"
    _, m = scope_of(src, "m")
    assert owner_name(m, "k") == "outer"


def test_comprehension_variables_are_their_own_and_the_first_iterable_is_outside():
    src = "def f(xs):\n    i = 0\n    return [i for i in xs if i]\n"
    root, comp = scope_of(src, "<comp>")
    assert owner_name(comp, "i") == "comprehension"
    assert any(n.id == "xs" for n in root.loads)  # the first iterable is evaluated in f


def test_walrus_in_a_comprehension_binds_in_the_function():
    src = "def f(xs):\n    [y := x for x in xs]\n    return y\n"
    root, _ = scope_of(src, "<comp>")
    assert "y" in root.bound


def test_nonlocal_and_global_resolution():
    src = (
        "def outer():\n    a = 1\n    def mid():\n        def inner():\n            nonlocal a\n"
        "            global g\n            a = 2\n            g = 3\n        return inner\n    return mid\n"
    )
    _, inner = scope_of(src, "inner")
    assert owner_name(inner, "a") == "outer"
    assert inner.owner_of("g") is None
    assert ("a", ) == tuple(n for n, _ in inner.writes if n == "a")


def test_defaults_and_decorators_evaluate_in_the_enclosing_scope():
    src = "def f(d):\n    def g(x=d, *, y=len):\n        return x\n    h = lambda z=d: z\n    return g, h\n"
    root, g = scope_of(src, "g")
    assert sum(1 for n in root.loads if n.id == "d") == 2
    assert not any(n.id == "d" for n in g.loads)


def facts_of(src):
    return build_facts(ast.parse(src).body[0])


def test_binding_at_follows_source_order():
    f = facts_of("def f(x):\n    y = x.reshape(-1)\n    y = y + 1\n    return y\n")
    assert f.binding_at("x", (2, 0)) == "param"
    assert ast.unparse(f.binding_at("y", (3, 4)).value) == "x.reshape(-1)"
    assert ast.unparse(f.binding_at("y", (4, 4)).value) == "y + 1"
    assert f.binding_at("z", (4, 4)) is None


def test_read_after_respects_rebinding_branches_loops_and_metadata():
    src = (
        "def f(x, flag):\n"  # 1
        "    y = x.reshape(-1)\n"  # 2
        "    y.add_(1)\n"  # 3
        "    if flag:\n"  # 4
        "        return x.shape\n"  # 5  metadata only
        "    else:\n"  # 6
        "        x = 0\n"  # 7
        "    return x\n"  # 8  reads the rebound x
    )
    f = facts_of(src)
    assert not f.read_after("x", (3, 13), since=(2, 8))
    loop = facts_of("def f(t, xs):\n    for x in xs:\n        s = t.sum()\n        t.add_(x)\n    return s\n")
    (m,) = loop.mutations
    assert loop.read_after("t", (4, 16), m.loop)  # read again at the top of the next iteration
    assert not loop.read_after("t", (4, 16))


def test_mutation_kinds():
    src = "def f(a, b):\n    a.add_(1)\n    a += 1\n    a[0] = 1\n    a[0] += 1\n    torch.mul(a, b, out=b)\n    a.requires_grad_()\n"
    kinds = [(m.kind, ast.unparse(m.target)) for m in facts_of(src).mutations]
    assert sorted(kinds) == sorted(
        [("method", "a"), ("augassign", "a"), ("setitem", "a"), ("setitem", "a"), ("out", "b")]
    )
