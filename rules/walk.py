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


def _descendants(root) -> list:
    """The nodes under ``root``, breadth first, each node's children in field order (``ast.iter_child_nodes``)."""
    out: list = []
    append, extend = out.append, out.extend
    n, i = root, 0
    while True:
        for name in n._fields:
            try:
                v = getattr(n, name)
            except AttributeError:
                continue
            if isinstance(v, _AST):
                append(v)
            elif isinstance(v, list):
                extend([x for x in v if isinstance(x, _AST)])
        if i == len(out):
            return out
        n = out[i]
        i += 1
