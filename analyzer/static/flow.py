"""Per-function facts in source order: where each local name is bound and read, and every in-place write.

Built by one walk of a function (nested functions are walked for their reads only: a closure that reads
a name reads it). Control flow is approximated by source order, which is what "read again after the
mutation" needs; a mutation inside a loop also counts reads anywhere in that loop (the next iteration).
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field

from .children import child_fields

# `add_`, `masked_fill_`, `copy_`: PyTorch's in-place method convention (not dunders, not `_private`), and the
# in-place foreach ops (`torch._foreach_add_([x, y], ...)`: each tensor of the first list is written).
_INPLACE = re.compile(r"^(?:_foreach_)?[a-z][a-z0-9_]*[a-z0-9]_$")
# Trailing-underscore methods that change flags or storage bookkeeping, not the tensor's values.
NOT_DATA_WRITES = frozenset({"requires_grad_", "share_memory_", "retain_grad_", "record_stream_", "pin_memory_"})

# Reading these attributes reads a tensor's metadata, not its values: such a read observes no write.
METADATA_READS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout", "size", "dim", "numel",
                            "requires_grad", "is_floating_point", "is_contiguous", "stride"})

# In-place methods that overwrite every element without reading the old ones: `x.copy_(y)` is no read of x.
OVERWRITES = frozenset({"copy_", "fill_", "zero_", "set_", "normal_", "uniform_", "random_", "bernoulli_",
                        "exponential_", "geometric_", "cauchy_", "log_normal_"})

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def is_inplace_method(name: str) -> bool:
    return bool(_INPLACE.match(name)) and name not in NOT_DATA_WRITES


@dataclass
class Binding:
    name: str
    pos: tuple[int, int]  # where the binding takes effect: the end of its statement
    value: ast.AST | None  # the bound expression, when it is one plain expression
    kind: str  # "assign" | "loop" | "with" | "other"
    stmt: ast.stmt


@dataclass
class Mutation:
    kind: str  # "method" (x.add_()), "augassign" (x += 1), "setitem" (x[i] = v / x[i] += v), "out" (out=x)
    target: ast.AST  # the expression whose memory is written
    node: ast.AST  # what to report
    stmt: ast.stmt
    loop: ast.AST | None  # innermost enclosing loop
    method: str = ""


@dataclass
class FunctionFacts:
    node: ast.AST
    params: list[str] = field(default_factory=list)
    annotations: dict[str, ast.AST] = field(default_factory=dict)
    defaults: dict[str, ast.AST] = field(default_factory=dict)
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    loads: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    mutations: list[Mutation] = field(default_factory=list)
    calls: list[ast.Call] = field(default_factory=list)  # own scope only
    tests: list[tuple[str, ast.AST]] = field(default_factory=list)  # ("if"|"while"|"ifexp"|"assert"|"for", expr)
    ifs: list[ast.If] = field(default_factory=list)  # every `if` statement of the function's own scope
    all_ifs: list[ast.If] = field(default_factory=list)  # ... and of the functions nested in it
    aug_names: set[str] = field(default_factory=set)
    attribute_uses: dict[str, list[ast.Attribute]] = field(default_factory=dict)  # name -> name.attr nodes
    subscript_uses: set[str] = field(default_factory=set)
    # Groups of (start, end) spans of which one run executes at most one: the two arms of an if/else, the
    # cases of a match, the handlers of a try together with its else block.
    branches: list[tuple[tuple[tuple[int, int], tuple[int, int]], ...]] = field(default_factory=list)
    returns: list[tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=list)  # return/raise spans
    # (start of its block, start, end) of every return/raise: code after it is unreachable from its block
    exits: list[tuple[tuple[int, int], tuple[int, int], tuple[int, int]]] = field(default_factory=list)
    # Blocks whose return/raise does not end every path: a try body with handlers (an exception before the
    # return continues after the try) and the blocks of a try with a finally (the finally still runs).
    guarded: list[tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=list)

    # Indexes over the lists above, built on first query (the facts do not change after build_facts).
    _index: _FlowIndex | None = field(default=None, repr=False, compare=False)

    # -- queries ---------------------------------------------------------------------------------
    def is_local(self, name: str) -> bool:
        return name in self.bindings or name in self.params

    def _flow(self) -> _FlowIndex:
        if self._index is None:
            self._index = _FlowIndex(self)
        return self._index

    def binding_at(self, name: str, pos: tuple[int, int]) -> Binding | str | None:
        """What ``name`` holds just before ``pos``: a Binding, "param", "unknown" (bound only later), or None (not local)."""
        items = self.bindings.get(name)
        if items:
            i = bisect.bisect_left(self._flow().stores(name), pos)
            if i:
                return items[i - 1]
        if name in self.params:
            return "param"
        return "unknown" if items else None

    def read_after(
        self, name: str, after: tuple[int, int], loop: ast.AST | None = None, since: tuple[int, int] | None = None
    ) -> bool:
        """Is the value ``name`` held at ``since`` still read after ``after`` (or anywhere in ``loop``)?

        A rebinding of ``name`` between ``since`` and ``after`` (``x = x.reshape(...)``) means later reads
        see another value.
        """
        loads = self.loads.get(name, ())
        stores = self._flow().stores(name)
        if since is not None:
            k = bisect.bisect_right(stores, since)
            if k < len(stores) and stores[k] <= after:
                return False
        j = bisect.bisect_right(stores, after)
        next_store = stores[j] if j < len(stores) else (1 << 30, 0)
        i = bisect.bisect_right(loads, after)
        exits = self._ends_path(after)
        if not exits:
            while i < len(loads) and loads[i] < next_store:
                if self.reachable(after, loads[i]):
                    return True
                i += 1
        if loop is not None:
            span_start, span_end = (loop.lineno, loop.col_offset), (loop.end_lineno, loop.end_col_offset)
            k = bisect.bisect_left(stores, span_start)
            rebound_in_loop = k < len(stores) and stores[k] <= span_end
            if not rebound_in_loop:
                k = bisect.bisect_left(loads, span_start)
                if k < len(loads) and loads[k] <= span_end:
                    return True
        return False

    def reachable(self, a: tuple[int, int], b: tuple[int, int]) -> bool:
        """Can execution get from position ``a`` to the later position ``b`` (ignoring loops)?

        Not when they sit in two exclusive arms (if/else, match cases, except handlers and the try's else),
        nor when a return/raise of a block holding ``a`` comes between them.
        """
        flow = self._flow()
        return not flow.exclusive(a, b) and not flow.exit_between(a, b)

    def _ends_path(self, pos: tuple[int, int]) -> bool:
        """Is ``pos`` inside a return/raise statement (nothing after it runs)?"""
        return self._flow().returns.innermost(pos) is not None


class _NestedSpans:
    """Closed spans that nest or are disjoint (statement blocks), each with a payload: which hold a point?

    Sorted by start (outer before inner on ties) with each span's parent, so a query is one bisect plus a
    walk up the parents: O(log n + nesting depth) instead of a scan of every span.
    """

    def __init__(self, spans):
        spans = sorted(spans, key=lambda s: (s[0], (-s[1][0], -s[1][1])))
        self.los = [s[0] for s in spans]
        self.his = [s[1] for s in spans]
        self.payloads = [s[2] for s in spans]
        self.parents = []
        stack: list[int] = []
        for k, hi in enumerate(self.his):
            while stack and self.his[stack[-1]] < hi:
                stack.pop()
            self.parents.append(stack[-1] if stack else -1)
            stack.append(k)

    def innermost(self, p) -> int | None:
        k = bisect.bisect_right(self.los, p) - 1
        while k >= 0 and self.his[k] < p:
            k = self.parents[k]
        return k if k >= 0 else None

    def holding(self, p):
        """Payloads of the spans holding ``p``, innermost first."""
        k = self.innermost(p)
        while k is not None and k >= 0:
            yield self.payloads[k]
            k = self.parents[k]


class _FlowIndex:
    """The position indexes behind FunctionFacts' queries, so each costs a bisect, not a scan of the function."""

    def __init__(self, facts: FunctionFacts):
        self._bindings = facts.bindings
        self._stores: dict[str, list[tuple[int, int]]] = {}
        # every arm of every exclusive group, as (group number, arm number)
        self.arms = _NestedSpans(
            (lo, hi, (g, k)) for g, group in enumerate(facts.branches) for k, (lo, hi) in enumerate(group)
        )
        self.returns = _NestedSpans((lo, hi, None) for lo, hi in facts.returns)
        guarded = _NestedSpans((lo, hi, hi) for lo, hi in facts.guarded)
        # Per statement block holding a return/raise: its exits in order, each with the end of the innermost
        # guarded block around it (a path may leave that block before the exit and go on after it).
        by_block: dict[tuple[int, int], list] = {}
        for block, r_start, r_end in facts.exits:
            escape = next(guarded.holding(r_start), None)
            by_block.setdefault(block, []).append((r_start, r_end, escape))
        for exits in by_block.values():
            exits.sort()
        # A block's span is cut at its last exit: only a point before an exit can be cut off by it.
        self.exit_blocks = _NestedSpans((block, exits[-1][0], exits) for block, exits in by_block.items())

    def stores(self, name: str) -> list[tuple[int, int]]:
        s = self._stores.get(name)
        if s is None:
            s = self._stores[name] = [b.pos for b in self._bindings.get(name, ())]
        return s

    def exclusive(self, a, b) -> bool:
        """Do ``a`` and ``b`` sit in two different arms of one group (so no single run reaches both)?"""
        arms_a = dict(self.arms.holding(a))
        if not arms_a:
            return False
        return any(g in arms_a and arms_a[g] != k for g, k in self.arms.holding(b))

    def exit_between(self, a, b) -> bool:
        """Does a return/raise of a block holding ``a`` come between ``a`` and ``b`` on every path?

        In one block the first exit after ``a`` decides: a later one ends later, inside the same guarded
        blocks, so it cuts off no ``b`` that the first does not.
        """
        for exits in self.exit_blocks.holding(a):
            i = bisect.bisect_right(exits, (a, (1 << 30, 0), None))
            if i < len(exits):
                _, r_end, escape = exits[i]
                if r_end <= b and (escape is None or escape >= b):
                    return True
        return False


def _span(stmts) -> tuple[tuple[int, int], tuple[int, int]]:
    return _start(stmts[0]), _end(stmts[-1])


def _end(node) -> tuple[int, int]:
    return (node.end_lineno, node.end_col_offset)


def _start(node) -> tuple[int, int]:
    return (node.lineno, node.col_offset)


def _names_in_target(target, value):
    """(Name, value-or-None) pairs of an assignment target, pairing tuple elements when both sides are tuples."""
    if isinstance(target, ast.Name):
        yield target, value
    elif isinstance(target, (ast.Tuple, ast.List)):
        vals = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) else None
        for k, t in enumerate(target.elts):
            if isinstance(t, ast.Starred):
                t = t.value
            yield from _names_in_target(t, vals[k] if vals else None)
    elif isinstance(target, ast.Starred):
        yield from _names_in_target(target.value, None)


# Which node types are statements: a dict lookup per node instead of an isinstance through the class tree.
_IS_STMT: dict[type, bool] = {}

_NO_ARGS = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def build_facts(func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.Module) -> FunctionFacts:
    """Facts of a function, or of a module's top-level code (a "function" without parameters)."""
    facts = FunctionFacts(func)
    args = getattr(func, "args", _NO_ARGS)
    all_args = args.posonlyargs + args.args + args.kwonlyargs
    for a in all_args + [x for x in (args.vararg, args.kwarg) if x]:
        facts.params.append(a.arg)
        if a.annotation is not None:
            facts.annotations[a.arg] = a.annotation
    positional = args.posonlyargs + args.args
    for a, d in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
        facts.defaults[a.arg] = d
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        if d is not None:
            facts.defaults[a.arg] = d

    def bind(name_node, value, kind, stmt):
        facts.bindings.setdefault(name_node.id, []).append(Binding(name_node.id, _end(stmt), value, kind, stmt))

    body = func.body if isinstance(func.body, list) else [func.body]
    # (node, enclosing statement, innermost loop, nested: inside a nested def/lambda/class)
    work = [(s, s, None, False) for s in reversed(body)]
    for v in body:
        if type(v) is ast.Return or type(v) is ast.Raise:
            facts.exits.append((_start(body[0]), _start(v), _end(v)))
    loads = facts.loads
    not_reads: set[int] = set()  # Name nodes that are only written (`x` in `x.copy_(y)`)
    Name, Load, Constant, AST, push = ast.Name, ast.Load, ast.Constant, ast.AST, work.append
    while work:
        node, stmt, loop, nested = work.pop()
        t = type(node)
        if t is Name:
            if type(node.ctx) is Load and id(node) not in not_reads:
                loads.setdefault(node.id, []).append((node.lineno, node.col_offset))
            continue
        is_stmt = _IS_STMT.get(t)
        if is_stmt is None:
            is_stmt = _IS_STMT[t] = issubclass(t, ast.stmt)
        if is_stmt:
            stmt = node
            if t is ast.If:
                facts.all_ifs.append(node)
            if not nested:
                if t is ast.Assign:
                    for target in node.targets:
                        for name, value in _names_in_target(target, node.value):
                            bind(name, value, "assign", node)
                        if isinstance(target, ast.Subscript):
                            facts.mutations.append(Mutation("setitem", target.value, target, node, loop))
                elif t is ast.AnnAssign:
                    if node.value is not None and isinstance(node.target, ast.Name):
                        bind(node.target, node.value, "assign", node)
                elif t is ast.AugAssign:
                    tgt = node.target
                    if isinstance(tgt, ast.Subscript):
                        facts.mutations.append(Mutation("setitem", tgt.value, tgt, node, loop))
                    else:
                        facts.mutations.append(Mutation("augassign", tgt, node, node, loop))
                    if isinstance(tgt, ast.Name):
                        facts.aug_names.add(tgt.id)
                        loads.setdefault(tgt.id, []).append((tgt.lineno, tgt.col_offset))
                elif t in (ast.For, ast.AsyncFor):
                    for name, _ in _names_in_target(node.target, None):
                        facts.bindings.setdefault(name.id, []).append(
                            Binding(name.id, _end(node.target), node.iter, "loop", node)
                        )
                    facts.tests.append(("for", node.iter))
                elif t in (ast.With, ast.AsyncWith):
                    for item in node.items:
                        if item.optional_vars is not None:
                            for name, _ in _names_in_target(item.optional_vars, None):
                                facts.bindings.setdefault(name.id, []).append(
                                    Binding(name.id, _end(item.optional_vars), item.context_expr, "with", node)
                                )
                elif t is ast.If or t is ast.While:
                    facts.tests.append(("if" if t is ast.If else "while", node.test))
                    if t is ast.If:
                        facts.ifs.append(node)
                    if t is ast.If and node.orelse:
                        facts.branches.append((_span(node.body), _span(node.orelse)))
                elif t is ast.Match:
                    if len(node.cases) > 1:
                        facts.branches.append(tuple(_span(c.body) for c in node.cases))
                elif t is ast.Try or t is ast.TryStar:
                    # A handler runs only when the body raised, the else block only when it did not; a write in
                    # the body can still be seen by a handler (the exception may come after it).
                    arms = [_span(h.body) for h in node.handlers]
                    if node.orelse:
                        arms.append(_span(node.orelse))
                    if len(arms) > 1:
                        facts.branches.append(tuple(arms))
                    if node.handlers or node.finalbody:
                        facts.guarded.append(_span(node.body))
                    if node.finalbody:
                        facts.guarded.extend(_span(h.body) for h in node.handlers)
                        if node.orelse:
                            facts.guarded.append(_span(node.orelse))
                elif t is ast.Return or t is ast.Raise:
                    facts.returns.append((_start(node), _end(node)))
                elif t is ast.Assert:
                    facts.tests.append(("assert", node.test))
                elif t is ast.Delete:
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            bind(target, None, "other", node)
                elif t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                    facts.bindings.setdefault(node.name, []).append(Binding(node.name, _start(node), None, "other", node))
                elif t in (ast.Import, ast.ImportFrom):
                    for alias in node.names:
                        local = alias.asname or alias.name.split(".")[0]
                        facts.bindings.setdefault(local, []).append(Binding(local, _end(node), None, "other", node))
            if t in _LOOPS:
                loop = node
        elif not nested:
            if t is ast.Call:
                facts.calls.append(node)
                func_expr = node.func
                if isinstance(func_expr, ast.Attribute) and is_inplace_method(func_expr.attr):
                    facts.mutations.append(Mutation("method", func_expr.value, node, stmt, loop, func_expr.attr))
                    if func_expr.attr in OVERWRITES and isinstance(func_expr.value, ast.Name):
                        not_reads.add(id(func_expr.value))
                for kw in node.keywords:
                    if kw.arg == "out":
                        facts.mutations.append(Mutation("out", kw.value, kw.value, stmt, loop))
            elif t is ast.Attribute:
                if isinstance(node.value, ast.Name):
                    facts.attribute_uses.setdefault(node.value.id, []).append(node)
                    if node.attr in METADATA_READS:
                        continue  # `x.dtype` reads no values of x
            elif t is ast.Subscript:
                if isinstance(node.value, ast.Name):
                    facts.subscript_uses.add(node.value.id)
            elif t is ast.IfExp:
                facts.tests.append(("ifexp", node.test))
            elif t is ast.NamedExpr:
                bind(node.target, node.value, "assign", stmt)
        if t in _SCOPES:
            nested_now = True
            if not nested and t is not ast.ClassDef and t is not ast.Lambda:
                # Defaults and decorators belong to this function; the body is another function's.
                for d in node.decorator_list:
                    work.append((d, stmt, loop, nested))
            children = node.body if isinstance(node.body, list) else [node.body]
            for c in reversed(children):
                work.append((c, stmt, loop, nested_now))
            continue
        for name in child_fields(t):
            value = getattr(node, name, None)
            if type(value) is list:
                if not nested and value and isinstance(value[0], ast.stmt):
                    for v in value:
                        if type(v) is ast.Return or type(v) is ast.Raise:
                            facts.exits.append((_start(value[0]), _start(v), _end(v)))
                items = reversed(value)
            elif value is None:
                continue
            else:
                items = (value,)
            for v in items:
                tv = type(v)
                # A Name child is read here, when its parent is taken apart, not pushed (a load is a position, and
                # the loads are sorted below: their order is no fact); a constant has nothing to record or visit.
                if tv is Name:
                    if type(v.ctx) is Load and id(v) not in not_reads:
                        loads.setdefault(v.id, []).append((v.lineno, v.col_offset))
                elif tv is not Constant and isinstance(v, AST):
                    push((v, stmt, loop, nested))
    for v in loads.values():
        v.sort()
    for v in facts.bindings.values():
        v.sort(key=lambda b: b.pos)
    return facts
