"""Every node under a node, listed once per file and shared by the rules.

Several jit rules walk the same compiled function (and the whole file) with ``ast.walk``, a generator that
visits each node's fields through ``ast.iter_fields`` in Python: under the library default, where every model's
``forward`` is compiled, those walks were a third of the lint. ``walk`` lists a subtree once, in
``ast.walk``'s order (breadth first: findings that keep the first of several hits stay the same), and keeps
the list on the subtree's root, so a second walk is a list iteration.

The walks here leave out the expression-context and operator singletons (``Load``, ``Store``, ``Add``, ``Eq``: a
third of the nodes of typical code): no rule looks for them among the nodes (it reads ``node.ctx``, ``node.op``).
"""

from __future__ import annotations

import ast
import bisect
import re
import unicodedata
from itertools import chain

_AST = ast.AST
_KEY = "_thunder_nodes"


def walk(node):
    """What ``ast.walk(node)`` yields but the singletons, in its order, listed once per ``node``. The list lives on
    ``node`` without ``node`` in it: no reference cycle, so a tree is freed by reference counting alone (the engine
    pauses the cyclic collector while it lints)."""
    below = node.__dict__.get(_KEY)
    if below is None:
        below = _descendants(node)
        try:
            node.__dict__[_KEY] = below
        except (AttributeError, TypeError):
            pass
    return chain((node,), below)


# Fields that never hold a node (names, numbers, flags, a constant's value), and those that hold only the context and
# operator singletons: skipped without a getattr. A name that is a node on some newer Python (3.12's
# ``TypeAlias.name``) is kept there: see _fields.
_NO_NODES = frozenset({"id", "attr", "arg", "module", "level", "kind", "conversion", "is_async", "simple",
                       "type_comment", "asname", "name", "rest", "kwd_attrs", "tag", "ctx", "op", "ops"})
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
    """The nodes under ``root`` but the singletons, breadth first, each node's children in field order
    (``ast.iter_child_nodes``)."""
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


def preorder(node, kinds=None) -> list:
    """``node`` and every node under it but the singletons, depth first, the last child first: the order of
    ``_module_state.fast_walk`` (which TL205's findings follow), as a list built without a generator. ``kinds``:
    only the nodes of these types are listed (all are visited), in the same order."""
    out: list = []
    stack = [node]
    pop, push, extend, append = stack.pop, stack.append, stack.extend, out.append
    fields_of, AST = _FIELDS.get, _AST
    while stack:
        n = pop()
        if kinds is None or type(n) in kinds:
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


def nodes(node) -> list:
    """``node`` and every node under it but the singletons, breadth first, not kept (for a subtree walked once)."""
    return [node, *_descendants(node)]


def lines_with(text: str, word: str) -> list[int] | None:
    """The sorted 1-based lines (as ast numbers them) where ``word`` occurs in the text, or None where an identifier
    ``word`` could be spelled otherwise in the text: identifiers are NFKC-normalized (``ﬁx`` is the name ``fix``), so
    a text that NFKC changes, or a non-ASCII word, may hide one from a text search."""
    global _last_text
    known = _last_text
    if known[0] is not text:  # asked a few times per file, always of the same file's text
        searchable = text.isascii() or unicodedata.is_normalized("NFKC", text)
        # ast counts a lone \r as a line end too
        known = _last_text = (text, searchable, re.sub(r"\r\n?", "\n", text) if "\r" in text else text)
    if not word.isascii() or not known[1]:
        return None
    text = known[2]
    out: list[int] = []
    line, last = 1, 0
    i = text.find(word)
    while i != -1:
        line += text.count("\n", last, i)
        last = i
        if not out or out[-1] != line:
            out.append(line)
        i = text.find(word, i + 1)
    return out


_last_text: tuple = (None, False, "")  # (text, searchable, text with ast's line ends) of the last file asked about
_BLOCKS = ("body", "orelse", "finalbody")
_CLAUSES = ("handlers", "cases")


def line_roots(tree, lines: list[int]) -> list:
    """Subtrees of ``tree`` (a module) holding every node that has a token on one of ``lines`` (sorted): the
    innermost statements whose span holds such a line, and the other parts (decorators, test, bases, except types,
    case patterns) of the compound statements around them. A node's tokens lie within its statement's lines,
    from its first decorator to its ``end_lineno``, so walking these finds every such node."""
    out: list = []
    if not lines:
        return out
    stack = list(tree.body)
    while stack:
        s = stack.pop()
        decorators = getattr(s, "decorator_list", None)
        i = bisect.bisect_left(lines, decorators[0].lineno if decorators else s.lineno)
        if i == len(lines) or lines[i] > s.end_lineno:
            continue
        if not hasattr(s, "body") and not hasattr(s, "cases"):  # a simple statement (`match` has cases only)
            out.append(s)
            continue
        for name in s._fields:
            v = getattr(s, name, None)
            if name in _BLOCKS:
                stack.extend(v)
            elif name in _CLAUSES:
                for clause in v:  # an except handler, a match case: its header, then its block
                    out.extend(c for c in ast.iter_child_nodes(clause) if not isinstance(c, ast.stmt))
                    stack.extend(clause.body)
            elif isinstance(v, _AST):
                out.append(v)
            elif type(v) is list:
                out.extend(x for x in v if isinstance(x, _AST))
    return out
