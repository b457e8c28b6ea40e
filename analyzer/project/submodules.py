"""What a module class holds: the classes its methods instantiate into ``self.<attr>`` (or annotate it with).

Real models hold their blocks in containers and build them in steps: ``nn.ModuleDict(dict(h=nn.ModuleList(
Block(c) for _ in range(n))))`` (litgpt's GPT), ``nn.Sequential(*layers)`` over a list filled by ``append``
(torchvision), ``self.layers = nn.ModuleList()`` then ``self.layers.append(Block())`` (x-transformers), plain
lists and tuples of modules, ``self.add_module("name", Block())``. Each of these gives the attribute the
classes it may hold, so the project index can follow a compiled ``forward`` into them.
"""

from __future__ import annotations

import ast

from ..static.children import NO_BLOCKS, nested_statements
from ..static.module_index import dotted_name, strip_self_returning
from .calls import SELF_STORES, annotation_classes, stores_in_self

_CONTAINERS = frozenset({"ModuleList", "Sequential", "ModuleDict", "ParameterList", "list", "tuple", "dict",
                         "OrderedDict"})
_GROWING = frozenset({"append", "extend", "insert", "add_module", "register_module", "update"})
_SEQUENCES = frozenset({ast.List, ast.Tuple, ast.Set})
_COMPREHENSIONS = frozenset({ast.ListComp, ast.GeneratorExp, ast.SetComp})
_Name, _Attribute, _Subscript, _Call = ast.Name, ast.Attribute, ast.Subscript, ast.Call


def instance_classes(value, local_lists=None) -> list[str]:
    """Class references an expression instantiates: ``Block(d)``, containers of them at any depth, and the
    local lists (``*layers``) it unpacks, from ``local_lists`` (name -> classes appended to it)."""
    value = strip_self_returning(value)
    t = type(value)  # (dispatched by type, the most frequent first: met for every assignment of a constructor)
    if t is _Call:
        name = dotted_name(value.func)
        if name is None:
            return []
        if name.rsplit(".", 1)[-1] in _CONTAINERS:
            out = []
            for arg in value.args:
                out.extend(instance_classes(arg, local_lists))
            for kw in value.keywords:
                out.extend(instance_classes(kw.value, local_lists))
            return out
        return [name]
    if t is _Name:
        return list((local_lists or {}).get(value.id, ()))
    if t in _SEQUENCES:
        return [c for item in value.elts for c in instance_classes(item, local_lists)]
    if t is ast.Dict:
        return [c for item in value.values for c in instance_classes(item, local_lists)]
    if t in _COMPREHENSIONS:
        return instance_classes(value.elt, local_lists)
    if t is ast.DictComp or t is ast.Starred:
        return instance_classes(value.value, local_lists)
    if t is ast.IfExp:
        return instance_classes(value.body, local_lists) + instance_classes(value.orelse, local_lists)
    return []


_Assign, _AnnAssign, _AugAssign, _Expr = ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr


def _self_attr(node) -> str | None:
    """``attr`` of ``self.attr`` (also ``self.attr[key]``, the target of a container store)."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _parameters(fn) -> set[str]:
    a = fn.args
    return {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)} | {x.arg for x in (a.vararg, a.kwarg) if x}


def _assigned_names(fn) -> set[str]:
    """Names a function assigns or loops over (one walk of it: asked only for a name no parameter binds)."""
    return {node.id for node in ast.walk(fn) if type(node) is _Name and type(node.ctx) is ast.Store}


def held_classes(cls: ast.ClassDef, callables: dict | None = None) -> dict[str, list[str]]:
    """attr -> class references the class's methods store into ``self.<attr>`` (directly, in containers, or
    by growing a container it holds: ``__init__`` or any other method, as ``setup_caches`` assigns
    ``self.kv_cache = KVCache(...)``), or that an annotation states (``self.kv_cache: KVCache | None = None``,
    ``kv_cache: Optional[KVCache]`` in the class body); ``add_module("name", X())`` holds X under "name".
    ``callables``, when given, receives attr -> the names stored there that are no call (``self.fn =
    cross_entropy_loss``: a function, for ``torch.compile(self.fn)``)."""
    out: dict[str, list[str]] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            classes = annotation_classes(stmt.annotation)
            if classes:
                out.setdefault(stmt.target.id, []).extend(classes)
            continue
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        init = stmt.name == "__init__"
        if not init and stmt.__dict__.get(SELF_STORES) is False:
            continue  # (function_facts walked it all and saw no store into self.<attr>)
        local_lists: dict[str, list[str]] = {}
        # the method's parameters, then its assigned names (on need): `self.fn = fn` stores no module function
        params = assigned = None
        # every statement of the method, nested blocks included, in source order (``local_lists`` grows in it)
        stack = stmt.body[::-1]
        while stack:
            s = stack.pop()
            kind = type(s)
            if kind not in NO_BLOCKS:  # (most statements hold none: nothing to descend into)
                stack.extend(reversed(nested_statements(s)))
                continue
            if init:
                if kind is not _Assign and kind is not _AnnAssign and kind is not _AugAssign and kind is not _Expr:
                    continue
            elif kind is _Assign:
                if not stores_in_self(s.targets):
                    continue
            elif kind is not _AnnAssign or not stores_in_self((s.target,)):
                continue  # other methods: only what they store in self.<attr> (`self.kv_cache = KVCache()`)
            if kind is _AnnAssign:
                attr = _self_attr(s.target)
                if attr is not None:
                    out.setdefault(attr, []).extend(annotation_classes(s.annotation))
            if kind is not _Expr:
                if s.value is None:
                    continue
                for t in (s.targets if kind is _Assign else [s.target]):
                    attr = _self_attr(t)
                    classes = instance_classes(s.value, local_lists)
                    if attr is not None and classes:
                        out.setdefault(attr, []).extend(classes)
                    elif attr is not None and callables is not None and type(s.value) in (_Name, _Attribute):
                        ref = dotted_name(s.value)
                        head = ref.split(".")[0] if ref else None
                        if head is not None and params is None:
                            params = _parameters(stmt)
                        if head is not None and head not in params:
                            if assigned is None:
                                assigned = _assigned_names(stmt)
                            if head not in assigned:
                                callables.setdefault(attr, []).append(ref)
                    elif type(t) is _Name and classes:
                        local_lists.setdefault(t.id, []).extend(classes)
            elif type(s.value) is _Call:
                call = s.value
                func = call.func
                if not (isinstance(func, ast.Attribute) and func.attr in _GROWING):
                    continue
                classes = [c for a in [*call.args, *(k.value for k in call.keywords)] for c in instance_classes(a, local_lists)]
                if not classes:
                    continue
                holder = func.value
                if isinstance(holder, ast.Name) and holder.id == "self" and func.attr in ("add_module", "register_module"):
                    key = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else None
                    out.setdefault(str(key) if isinstance(key, str) else "*", []).extend(classes)
                elif _self_attr(holder) is not None:
                    out.setdefault(_self_attr(holder), []).extend(classes)
                elif isinstance(holder, ast.Name):
                    local_lists.setdefault(holder.id, []).extend(classes)
    return {attr: sorted(set(refs)) for attr, refs in sorted(out.items()) if refs}
