"""What every call of a function in its own file passes, and the branches no such call can take.

A helper that compiled code calls (`self.pad(x)`, `adaptive_pool(x, pool_type="avg")`) is traced with the values
its callers pass, and Python values are constants to every compiler. Where every call in the file passes literals
for a parameter or leaves its literal default (`verbose=False`), a branch that none of those calls takes
(`if verbose:`, `if pool_type != "avg":`, `if isinstance(v, torch.Tensor):` for a number) is never traced: a
finding there is about code no call runs (issue 31, false class 9).

Only calls in the same file are seen. A function is left alone (no call facts) when something in the file refers
to it other than by calling it (a callback, `torch.compile(f)`, `partial(f, ...)`), when a call passes `*args` or
`**kwargs`, when it is decorated (a jit entry point, a wrapper), nested, a dunder, or `forward` (modules are
called through `__call__`, by their users).
"""

from __future__ import annotations

import ast

from .walks import line_roots, lines_with, nodes
from .dotted import chain_root

NOT_NONE = object()  # an argument whose value is unknown but certainly not None (`x.shape[1]`, `a + b`)
UNKNOWN = object()
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod"})


def _references(ctx, key: str) -> list:
    """[(reference node, the call it is the function of, or None)] for every load of the name ``key`` (a Name) or,
    for ``key`` ".attr", of the attribute ``attr``. Only the statements on lines whose text holds the word are
    walked (the whole file where the text could spell an identifier otherwise): a few names are asked per file,
    and each has few lines. (The list's order is no fact: its callers ask whether any, or every, reference does
    something.)"""
    cache = ctx.__dict__.setdefault("_call_site_refs", {})
    got = cache.get(key)
    if got is None:
        attr = key.startswith(".")
        name = key[1:] if attr else key
        lines = lines_with(ctx.source.text, name)
        roots = [ctx.tree] if lines is None else line_roots(ctx.tree, lines)
        Call, Name, Attribute, Load = ast.Call, ast.Name, ast.Attribute, ast.Load
        found, called = [], {}
        for root in roots:
            for node in nodes(root):
                kind = type(node)
                if kind is Call:
                    called[id(node.func)] = node
                elif kind is (Attribute if attr else Name) and type(node.ctx) is Load \
                        and (node.attr if attr else node.id) == name:
                    found.append(node)
        got = cache[key] = [(node, called.get(id(node))) for node in found]
    return got


def _argument(e):
    """A Python literal's value, NOT_NONE for an expression that cannot be None, else UNKNOWN."""
    try:
        return ast.literal_eval(e)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(e, (ast.JoinedStr, ast.BinOp, ast.Compare, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp,
                      ast.DictComp, ast.SetComp, ast.GeneratorExp, ast.Lambda)):
        return NOT_NONE
    if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) and e.value.attr == "shape":
        return NOT_NONE  # `x.shape[1]`
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in ("size", "numel", "dim"):
        return NOT_NONE
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in ("len", "int", "float", "str", "bool"):
        return NOT_NONE
    return UNKNOWN


def call_arguments(ctx, info) -> list[dict] | None:
    """For each call of ``info``'s function in the file, {parameter: value} (a literal's value, NOT_NONE or
    UNKNOWN; a parameter left out holds its default). None when the calls cannot all be seen or there are none."""
    cache = ctx.__dict__.setdefault("_call_site_args", {})
    key = id(info.node)
    if key not in cache:
        cache[key] = _call_arguments(ctx, info)
    return cache[key]


def _call_arguments(ctx, info):
    node = info.node
    if isinstance(node, ast.Lambda) or info.name == "forward" or info.name.startswith("__"):
        return None
    decorators = {d.id if isinstance(d, ast.Name) else None for d in node.decorator_list}
    if not decorators <= _PLAIN_DECORATORS:
        return None
    method = info.class_node is not None
    if method and info.parents[-1] is not info.class_node or not method and info.parents:
        return None  # nested: called from its enclosing function, with that function's values
    args = node.args
    names = [a.arg for a in args.posonlyargs + args.args]
    if method and "staticmethod" not in decorators:
        names = names[1:]
    defaults = dict(zip([a.arg for a in args.posonlyargs + args.args][-len(args.defaults):], args.defaults)) \
        if args.defaults else {}
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    accepted = set(names) | {a.arg for a in args.kwonlyargs}
    refs = _references(ctx, ("." if method else "") + info.name)
    if not method and ctx.index.bindings.get(info.name) != ["def"]:
        return None  # rebound at module level: calls by that name may reach something else
    out = []
    for ref, call in refs:
        if call is None:
            return None  # passed around, compiled or wrapped: called where this file does not show
        root = chain_root(ref.value if method else ref)
        if method and isinstance(root, ast.Name) and root.id in ctx.index.imports:
            continue  # `F.pad(...)`, `torch.nn.functional.pad(...)`: a module's function of the same name
        positional = list(call.args)
        if method and isinstance(ref.value, ast.Name) and ref.value.id == info.class_node.name \
                and "staticmethod" not in decorators and "classmethod" not in decorators:
            positional = positional[1:]  # `Cls.m(self, ...)`
        if any(isinstance(a, ast.Starred) for a in positional) or any(k.arg is None for k in call.keywords):
            return None
        if method and (len(positional) > len(names) and args.vararg is None
                       or any(k.arg not in accepted for k in call.keywords) and args.kwarg is None):
            continue  # another class's method of the same name: this one could not take these arguments
        given = dict(zip(names, positional))
        given.update({k.arg: k.value for k in call.keywords})
        values = {}
        for p in accepted:
            e = given.get(p, defaults.get(p))
            values[p] = _argument(e) if e is not None else UNKNOWN
        out.append(values)
    return out or None


def _span(body):
    return (body[0].lineno, body[0].col_offset), (body[-1].end_lineno, body[-1].end_col_offset)


def dead_spans(ctx, info, facts) -> list:
    """Spans of the blocks of ``info``'s function that no call in the file takes: the body of an `if` whose test
    is false for every call's values (or the `else` where it is true for all). Only tests on parameters that hold
    their argument there: never rebound, or rebound only inside blocks found dead (`s = s.to(x.dtype)` under
    `if isinstance(s, torch.Tensor):` when every call passes a number)."""
    return _dead(ctx, info, facts)[0]


def fixed_parameters(ctx, info, facts) -> set:
    """The parameters that hold their argument wherever the function runs (see ``dead_spans``)."""
    return _dead(ctx, info, facts)[1]


def _dead(ctx, info, facts):
    cache = ctx.__dict__.setdefault("_call_site_dead", {})
    key = id(info.node)
    if key not in cache:
        spans, fixed = [], set()
        calls = call_arguments(ctx, info)
        if calls:
            _walk(ctx, facts, info.node.body, calls, spans, ())
            fixed = {p for p in set(calls[0]) - facts.aug_names
                     if all(any(lo <= b.pos <= hi for lo, hi in spans) for b in facts.bindings.get(p, ()))}
        cache[key] = (spans, fixed)
    return cache[key]


def _walk(ctx, facts, stmts, live, spans, loops):
    for stmt in stmts:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, ast.If):
            env = _Env(facts, stmt.test, loops)
            results = [_evaluate(ctx, stmt.test, env.of(call)) for call in live]
            taken = [c for c, r in zip(live, results) if r is not False]
            other = [c for c, r in zip(live, results) if r is not True]
            if taken:
                _walk(ctx, facts, stmt.body, taken, spans, loops)
            else:
                spans.append(_span(stmt.body))
            if stmt.orelse:
                if other:
                    _walk(ctx, facts, stmt.orelse, other, spans, loops)
                else:
                    spans.append(_span(stmt.orelse))
            continue
        inner = loops + (stmt,) if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)) else loops
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                _walk(ctx, facts, block, live, spans, inner)
        for handler in getattr(stmt, "handlers", ()):
            _walk(ctx, facts, handler.body, live, spans, inner)


class _Env:
    """The parameters that hold their argument at a test: not rebound before it, nor anywhere in a loop around it."""

    def __init__(self, facts, test, loops):
        pos = (test.lineno, test.col_offset)
        spans = [((lp.lineno, lp.col_offset), (lp.end_lineno, lp.end_col_offset)) for lp in loops]
        self.names = set()
        for n in ast.walk(test):
            if isinstance(n, ast.Name) and facts.binding_at(n.id, pos) == "param" and not any(
                    lo <= b.pos <= hi for b in facts.bindings.get(n.id, ()) for lo, hi in spans):
                self.names.add(n.id)

    def of(self, call) -> dict:
        return {p: v for p, v in call.items() if p in self.names}


def _evaluate(ctx, e, env):
    """True, False or None (unknown) for the test ``e`` with the parameters' values ``env``."""
    if isinstance(e, ast.Constant):
        return bool(e.value)
    if isinstance(e, ast.Name):
        v = env.get(e.id, UNKNOWN)
        return None if v is UNKNOWN or v is NOT_NONE else bool(v)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        r = _evaluate(ctx, e.operand, env)
        return None if r is None else not r
    if isinstance(e, ast.BoolOp):
        results = [_evaluate(ctx, v, env) for v in e.values]
        stop = isinstance(e.op, ast.Or)  # `or` stops at the first true operand, `and` at the first false one
        if stop in results:
            return stop  # (an unknown operand before it still gives that value or stops earlier with its own)
        return None if None in results else not stop
    if isinstance(e, ast.Compare) and len(e.ops) == 1:
        left, right = _operand(e.left, env), _operand(e.comparators[0], env)
        op = e.ops[0]
        if isinstance(op, (ast.Is, ast.IsNot)):
            if left is None and right is None:
                same = True
            elif (left is None and right is NOT_NONE) or (right is None and left is NOT_NONE):
                same = False
            elif UNKNOWN in (left, right) or NOT_NONE in (left, right):
                return None
            else:
                same = left is right if isinstance(left, (bool, type(None))) else None
                if same is None:
                    return None
            return same if isinstance(op, ast.Is) else not same
        if UNKNOWN in (left, right) or NOT_NONE in (left, right):
            return None
        try:
            if isinstance(op, ast.Eq):
                return bool(left == right)
            if isinstance(op, ast.NotEq):
                return bool(left != right)
            if isinstance(op, ast.In):
                return left in right
            if isinstance(op, ast.NotIn):
                return left not in right
        except TypeError:
            return None
        return None
    if isinstance(e, ast.Call) and len(e.args) >= 1 and isinstance(e.args[0], ast.Name):
        v = env.get(e.args[0].id, UNKNOWN)
        if v is UNKNOWN or v is NOT_NONE:
            return None
        name = ctx.resolve(e.func) or ""
        if name == "torch.is_tensor":
            return False  # a literal is no tensor
        if isinstance(e.func, ast.Name) and e.func.id == "isinstance" and len(e.args) == 2:
            types = e.args[1].elts if isinstance(e.args[1], ast.Tuple) else [e.args[1]]
            if all((ctx.resolve(t) or "").startswith("torch.") and (ctx.resolve(t) or "").endswith("Tensor")
                   for t in types):
                return False
    return None


def _operand(e, env):
    if isinstance(e, ast.Name) and e.id in env:
        return env[e.id]
    try:
        return ast.literal_eval(e)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN
