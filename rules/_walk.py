"""Every node under a node, listed once per file and shared by the rules.

Several jit rules walk the same compiled function (and the whole file) with ``ast.walk``, a generator that
visits each node's fields through ``ast.iter_fields`` in Python: under the library default, where every model's
``forward`` is compiled, those walks were a third of the lint. ``walk`` lists a subtree once, in
``ast.walk``'s order (breadth first: findings that keep the first of several hits stay the same), and keeps
the list on the subtree's root, so a second walk is a list iteration.
"""

from __future__ import annotations

import ast
from itertools import chain

_AST = ast.AST
_KEY = "_thunder_nodes"


def walk(node):
    """What ``ast.walk(node)`` yields, in its order, listed once per ``node``. The list lives on ``node`` without
    ``node`` in it: no reference cycle, so a tree is freed by reference counting alone (the engine pauses the
    cyclic collector while it lints)."""
    below = node.__dict__.get(_KEY)
    if below is None:
        below = _descendants(node)
        try:
            node.__dict__[_KEY] = below
        except (AttributeError, TypeError):
            pass
    return chain((node,), below)


# Fields that never hold a node (names, numbers, flags, a constant's value): skipped without a getattr. A name
# that is a node on some newer Python (3.12's ``TypeAlias.name``) is kept there: see _fields.
_NO_NODES = frozenset({"id", "attr", "arg", "module", "level", "kind", "conversion", "is_async", "simple",
                       "type_comment", "asname", "name", "rest", "kwd_attrs", "tag"})
_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: (), ast.Global: (), ast.Nonlocal: (), ast.MatchSingleton: ()}
# The list fields that may hold None besides nodes (``{**d}``'s key, a keyword-only argument without default);
# every other list of a parsed tree holds nodes only.
_MAYBE_NONE = frozenset({"keys", "kw_defaults"})


def _fields(kind: type) -> tuple[str, ...]:
    fields = _FIELDS.get(kind)
    if fields is None:
        keep = {"name"} if getattr(ast, "TypeAlias", None) is kind else set()
        fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _NO_NODES or f in keep)
    return fields


def _descendants(root) -> list:
    """The nodes under ``root``, breadth first, each node's children in field order (``ast.iter_child_nodes``)."""
    out: list = []
    append, extend = out.append, out.extend
    fields_of, AST = _FIELDS.get, _AST
    n, i = root, 0
    while True:
        fields = fields_of(type(n))
        if fields is None:
            fields = _fields(type(n))
        for name in fields:
            try:
                v = getattr(n, name)
            except AttributeError:
                continue
            if type(v) is list:
                extend([x for x in v if x is not None] if name in _MAYBE_NONE else v)
            elif isinstance(v, AST):
                append(v)
        if i == len(out):
            return out
        n = out[i]
        i += 1


def preorder(node) -> list:
    """``node`` and every node under it, depth first, the last child first: the order of
    ``_module_state.fast_walk`` (which TL205's findings follow), as a list built without a generator."""
    out: list = []
    stack = [node]
    pop, push, extend, append = stack.pop, stack.append, stack.extend, out.append
    fields_of, AST = _FIELDS.get, _AST
    while stack:
        n = pop()
        append(n)
        fields = fields_of(type(n))
        if fields is None:
            fields = _fields(type(n))
        for name in fields:
            v = getattr(n, name, None)
            if type(v) is list:
                extend([x for x in v if x is not None] if name in _MAYBE_NONE else v)
            elif isinstance(v, AST):
                push(v)
    return out
