"""Scopes and bindings in the style of pyflakes, for the few functions that need name resolution.

A ``Scope`` knows the names bound in it, its ``global``/``nonlocal`` declarations, every Name it reads
and writes, and its parent. ``resolve`` follows Python's rules (class bodies are invisible to the
functions inside them; comprehensions and lambdas are scopes of their own).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .children import child_fields

_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
# Node types the scope builder only descends through (a fast path: no isinstance chain for them).
_PLAIN = frozenset({ast.Attribute, ast.Constant, ast.BinOp, ast.Subscript, ast.keyword, ast.Tuple, ast.List, ast.Expr,
                    ast.Assign, ast.Return, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.If, ast.For, ast.While,
                    ast.Slice, ast.Starred, ast.Dict, ast.IfExp, ast.JoinedStr, ast.FormattedValue, ast.With,
                    ast.withitem, ast.Assert, ast.Raise, ast.Pass, ast.Break, ast.Continue, ast.Load, ast.Store,
                    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult, ast.USub,
                    ast.Not, ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot,
                    ast.In, ast.NotIn, ast.arguments, ast.arg})


@dataclass(eq=False)
class Scope:
    kind: str  # "function" | "lambda" | "class" | "comprehension"
    node: ast.AST
    parent: "Scope | None"
    bound: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    imports: set[str] = field(default_factory=set)  # names bound by import statements
    loads: list[ast.Name] = field(default_factory=list)
    writes: list[tuple[str, ast.AST]] = field(default_factory=list)  # Store/Del of a name, AugAssign
    calls: list[ast.Call] = field(default_factory=list)
    children: list["Scope"] = field(default_factory=list)

    def walk(self):
        stack = [self]
        while stack:
            s = stack.pop()
            yield s
            stack.extend(reversed(s.children))

    def owner_of(self, name: str) -> "Scope | None":
        """The function-like scope that binds ``name`` as seen from this scope; None = module or builtin."""
        if name in self.globals:
            return None
        if name in self.bound and name not in self.nonlocals:
            return self
        s = self.parent
        while s is not None:
            if s.kind != "class":
                if name in s.globals:
                    return None
                if name in s.bound and name not in s.nonlocals:
                    return s
            s = s.parent
        return None

    def is_within(self, other: "Scope") -> bool:
        s = self
        while s is not None:
            if s is other:
                return True
            s = s.parent
        return False


def _bind_args(scope: Scope, args: ast.arguments) -> None:
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        scope.bound.add(a.arg)
    if args.vararg:
        scope.bound.add(args.vararg.arg)
    if args.kwarg:
        scope.bound.add(args.kwarg.arg)


def _arg_exprs(args: ast.arguments):
    """Expressions of a signature evaluated in the enclosing scope: defaults and annotations."""
    yield from args.defaults
    yield from (d for d in args.kw_defaults if d is not None)
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None and a.annotation is not None:
            yield a.annotation


def build_scopes(root: ast.AST, parent: Scope | None = None) -> Scope:
    """The scope tree of a function (or lambda/class) node and everything nested in it."""
    kind = "class" if isinstance(root, ast.ClassDef) else "lambda" if isinstance(root, ast.Lambda) else "function"
    top = Scope(kind, root, parent)
    if parent is not None:
        parent.children.append(top)
    work: list[tuple[ast.AST, Scope]] = []
    if isinstance(root, ast.ClassDef):
        work.extend((s, top) for s in reversed(root.body))
    else:
        _bind_args(top, root.args)
        body = root.body if isinstance(root.body, list) else [root.body]
        work.extend((s, top) for s in reversed(body))
    pop, push, AST = work.pop, work.append, ast.AST
    while work:
        node, scope = pop()
        t = type(node)
        if t is ast.Name:
            if type(node.ctx) is ast.Load:
                scope.loads.append(node)
            else:
                scope.bound.add(node.id)
                scope.writes.append((node.id, node))
            continue
        if t in _PLAIN:  # most nodes: nothing to record, only children to visit (_push_children, inline)
            for name in child_fields(t):
                value = getattr(node, name, None)
                if type(value) is list:
                    for item in value:
                        if isinstance(item, AST):
                            push((item, scope))
                elif isinstance(value, AST):
                    push((value, scope))
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if not isinstance(node, ast.Lambda):
                scope.bound.add(node.name)
                scope.writes.append((node.name, node))
                work.extend((d, scope) for d in node.decorator_list)
                if node.returns is not None:
                    work.append((node.returns, scope))
            work.extend((e, scope) for e in _arg_exprs(node.args))
            child = Scope("lambda" if isinstance(node, ast.Lambda) else "function", node, scope)
            scope.children.append(child)
            _bind_args(child, node.args)
            body = node.body if isinstance(node.body, list) else [node.body]
            work.extend((s, child) for s in reversed(body))
            continue
        if isinstance(node, ast.ClassDef):
            scope.bound.add(node.name)
            scope.writes.append((node.name, node))
            work.extend((e, scope) for e in node.decorator_list + node.bases + [k.value for k in node.keywords])
            child = Scope("class", node, scope)
            scope.children.append(child)
            work.extend((s, child) for s in reversed(node.body))
            continue
        if isinstance(node, _COMPS):
            gens = node.generators
            work.append((gens[0].iter, scope))
            child = Scope("comprehension", node, scope)
            scope.children.append(child)
            for i, g in enumerate(gens):
                work.append((g.target, child))
                work.extend((c, child) for c in g.ifs)
                if i:
                    work.append((g.iter, child))
            if isinstance(node, ast.DictComp):
                work.extend([(node.key, child), (node.value, child)])
            else:
                work.append((node.elt, child))
            continue
        if isinstance(node, ast.Global):
            scope.globals.update(node.names)
            continue
        if isinstance(node, ast.Nonlocal):
            scope.nonlocals.update(node.names)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    local = alias.asname or alias.name.split(".")[0]
                    scope.bound.add(local)
                    scope.imports.add(local)
            continue
        if isinstance(node, ast.NamedExpr):
            target_scope = scope
            while target_scope.kind == "comprehension" and target_scope.parent is not None:
                target_scope = target_scope.parent
            target_scope.bound.add(node.target.id)
            target_scope.writes.append((node.target.id, node.target))
            work.append((node.value, scope))
            continue
        if isinstance(node, ast.ExceptHandler) and node.name:
            scope.bound.add(node.name)
            scope.writes.append((node.name, node))
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            scope.bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            scope.bound.add(node.rest)
        elif isinstance(node, ast.AnnAssign) and scope.kind == "function":
            # `hypos: List[Hypothesis] = []` in a function: Python never evaluates a local variable's annotation
            work.append((node.target, scope))
            if node.value is not None:
                work.append((node.value, scope))
            continue
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            # `x += 1` reads x too (its Name has Store context only).
            scope.loads.append(node.target)
        elif isinstance(node, ast.Call):
            scope.calls.append(node)
        _push_children(node, t, scope, work)
    return top


def _push_children(node: ast.AST, t: type, scope: Scope, work: list) -> None:
    """``work.append((child, scope))`` for each child node, in ``ast.iter_child_nodes`` order."""
    for name in child_fields(t):
        value = getattr(node, name, None)
        if isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    work.append((item, scope))
        elif isinstance(value, ast.AST):
            work.append((value, scope))
