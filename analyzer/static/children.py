"""The fields of an ast node type that can hold nodes a walk needs: names and constants are no nodes, and the
expression-context and operator singletons (``Load``, ``Store``, ``Add``, ``Eq``) carry nothing any walk here
looks at, nor do the ``alias`` nodes of imports (read from their statement), so the walks in flow.py and
scopes.py skip them: the singletons are about a third of all nodes of typical code. Order is kept."""

from __future__ import annotations

import ast

# strings, numbers and singletons; `kwd_attrs` (`case Cls(attr=p)`) and `rest` (`case {**rest}`) hold strings too
_NOT_NODES = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "name", "names", "module", "level", "asname",
                        "kind", "conversion", "is_async", "simple", "type_comment", "kwd_attrs", "rest"})
_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: (), ast.MatchSingleton: ()}
if hasattr(ast, "TypeAlias"):  # Python 3.12+: `type X = ...` names its alias with a Name node
    _FIELDS[ast.TypeAlias] = tuple(f for f in ast.TypeAlias._fields if f != "type_comment")


def child_fields(node_type: type) -> tuple[str, ...]:
    """The names of ``node_type``'s fields that may hold nodes (a node, or a list of them)."""
    fields = _FIELDS.get(node_type)
    if fields is None:
        fields = _FIELDS[node_type] = tuple(f for f in node_type._fields if f not in _NOT_NODES)
    return fields


from rules.statements import NO_BLOCKS, nested_statements, own_statements  # noqa: E402,F401 (the walks, shared with the rules)
