"""What a file does to its module globals after binding them: the facts TL201 and TL203 read.

A global is a hidden input when something changes it: a rebinding (the module index's bindings and
``global`` writes), or a change of the object it names: an item or attribute store (``_stats["n"] += 1``,
``_state.scale = v``, ``GlobalState.factor = f``), a mutating call (``.append``, ``.update``, a ContextVar's
``.set``), ``setattr(obj, ...)``. One bound once and never touched is a constant, even when a helper made it
(``Matcher, _ = optional_import("...")``: a class, a function or a module chosen at import).
Only this file is seen: a change made from another module is not (the project index keeps no such fact).
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass

# Methods that change the object they are called on (lists, dicts, sets, deques, queues, ContextVars).
MUTATORS = frozenset({"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear", "remove",
                      "add", "discard", "appendleft", "extendleft", "popleft", "set", "put", "sort", "reverse"})
_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_NOT_DATA = frozenset({"import", "def", "class", "logger"})


@dataclass(frozen=True)
class Change:
    name: str  # the global whose object changes
    attr: str | None  # the attribute stored (``name.attr = v``), None for an item store or a mutating call
    node: ast.AST  # where
    how: str  # "item" | "attribute" | "call"
    between_calls: bool = True  # in a function or a module-level loop; False: straight-line import-time code


def might_change(text: str, name: str) -> bool:
    """Could the text change global ``name``'s object (a store into it, a mutating call, setattr, a classmethod's
    ``cls.x = v``)? A cheap test before the file's walk; False means it certainly does not."""
    if name not in text:
        return False
    n = re.escape(name)
    if "setattr" in text and re.search(rf"setattr\s*\(\s*{n}\s*,", text):
        return True
    if "classmethod" in text and re.search(rf"class\s+{n}\b", text):
        return True  # a classmethod of the class stores `cls.x = v`
    change = _change_pattern(name)
    # each occurrence of the name is tried where it stands (a search over the whole text backtracks on every
    # `[`, 10 ms a call on a 3,000-line model file)
    for m in _name_pattern(name).finditer(text):
        start = m.start()
        if (start == 0 or not (text[start - 1].isalnum() or text[start - 1] == "_")) and change.match(text, start):
            return True
    return any(m.start() == 0 or not (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_")
               for m in _delete_pattern(name).finditer(text))


@functools.lru_cache(maxsize=4096)
def _name_pattern(name: str):
    return re.compile(rf"{re.escape(name)}\b")  # (a leading \b would cost the literal-prefix search: 40x)


@functools.lru_cache(maxsize=4096)
def _change_pattern(name: str):
    n = re.escape(name)
    store = rf"{n}\s*(?:\.\s*\w+|\[[^\n]*\])\s*(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=(?!=)"
    call = rf"{n}\s*\.\s*(?:{'|'.join(sorted(MUTATORS))})\s*\("
    return re.compile(f"{store}|{call}")


@functools.lru_cache(maxsize=4096)
def _delete_pattern(name: str):
    return re.compile(rf"del\s+{re.escape(name)}\s*[\[.]")


def is_data_global(index, name: str) -> bool:
    """Bound at module level by something other than import/def/class/getLogger."""
    kinds = index.bindings.get(name)
    return bool(kinds) and not any(k in _NOT_DATA for k in kinds)


def change_of(node, mutators=MUTATORS) -> tuple[ast.Name, str | None, str] | None:
    """For a store target or a call: (the Name whose object it changes, the attribute or None, how), else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return node.value, None, "item"
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value, node.attr, "attribute"
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.attr in mutators:
            return f.value, None, "call"
        if isinstance(f, ast.Name) and f.id == "setattr" and node.args and isinstance(node.args[0], ast.Name):
            attr = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) else None
            return node.args[0], attr if isinstance(attr, str) else None, "attribute"
    return None


def _targets(node):
    if isinstance(node, ast.Assign):
        todo = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        todo = [node.target]
    elif isinstance(node, ast.Delete):
        todo = list(node.targets)
    else:
        return
    while todo:
        t = todo.pop()
        if isinstance(t, (ast.Tuple, ast.List)):
            todo.extend(t.elts)
        elif isinstance(t, ast.Starred):
            todo.append(t.value)
        else:
            yield t


def _local_names(func) -> set[str]:
    """Names a function binds locally (parameters, stores), less those it declares global."""
    names: set[str] = set()
    declared: set[str] = set()
    args = func.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            names.add(a.arg)
    body = func.body if isinstance(func.body, list) else [func.body]
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, ast.Global):
                declared.update(node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names - declared


def global_changes(tree: ast.Module) -> dict[str, list[Change]]:
    """name -> the changes of the object that module global names, anywhere in the file (a name a function
    binds locally is that function's own)."""
    out: dict[str, list[Change]] = {}
    work = [(stmt, frozenset(), False) for stmt in tree.body]
    while work:
        node, shadowed, between = work.pop()
        if isinstance(node, _FUNC):
            inner = shadowed | _local_names(node)
            body = node.body if isinstance(node.body, list) else [node.body]
            work.extend((s, inner, True) for s in body)
            continue
        if isinstance(node, ast.ClassDef):
            work.extend((s, shadowed, between) for s in node.body)  # a class body's own names are class attributes
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_classmethod(item):
                    _classmethod_changes(item, node.name, out)
            continue
        for t in _targets(node):
            got = change_of(t)
            if got and got[0].id not in shadowed:
                out.setdefault(got[0].id, []).append(Change(got[0].id, got[1], t, got[2], between))
        if isinstance(node, ast.Call):
            got = change_of(node)
            if got and got[0].id not in shadowed:
                out.setdefault(got[0].id, []).append(Change(got[0].id, got[1], node, got[2], between))
        loop = isinstance(node, (ast.For, ast.AsyncFor, ast.While))
        if not between and _is_main_block(node):
            work.extend((s, shadowed, after) for s, after in _after_a_call(node.body))
            work.extend((c, shadowed, False) for c in [node.test, *node.orelse])
            continue
        for child in ast.iter_child_nodes(node):
            work.append((child, shadowed, between or loop))
    return out


def _is_main_block(node) -> bool:
    """``if __name__ == "__main__":``: the script's own run, which calls compiled code and changes state in turn."""
    t = getattr(node, "test", None)
    return isinstance(node, ast.If) and isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) \
        and t.left.id == "__name__" and len(t.comparators) == 1 and isinstance(t.comparators[0], ast.Constant) \
        and t.comparators[0].value == "__main__"


def _after_a_call(body):
    """(statement, whether a function was called before it in ``body``): a store after `compiled(x)` in a script
    changes what the next call reads (`compiled(x); Settings.scale = 10.0; compiled(x)`); one before any call is
    set-up, as import-time code is."""
    called = False
    for stmt in body:
        yield stmt, called
        called = called or any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) for n in ast.walk(stmt))


def _is_classmethod(func) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "classmethod" for d in func.decorator_list)


def _classmethod_changes(func, cls_name: str, out: dict) -> None:
    """``cls.factor = f`` in a classmethod of ``GlobalState``: a change of ``GlobalState.factor``."""
    args = func.args.posonlyargs + func.args.args
    if not args:
        return
    me = args[0].arg
    for node in ast.walk(func):
        for t in _targets(node):
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
                out.setdefault(cls_name, []).append(Change(cls_name, t.attr, t, "attribute", True))


def bound_once_by_call(index, name: str) -> str | None:
    """``Matcher, _ = optional_import("...")``, ``ops = load_kernels()``: bound by one call at import on each
    path (``if TYPE_CHECKING: from x import Matcher`` / ``else: Matcher, _ = optional_import(...)``), never
    rebound (by the module or a ``global`` write). "import" when the call is an import helper (its results,
    a module, a class or an availability flag, are fixed for the life of the process), "call" for another
    call, None when not bound so."""
    kinds = index.bindings.get(name, [])
    if "assign" not in kinds or name in index.global_writes or any(k not in ("assign", "import", "none") for k in kinds):
        return None
    stmts = _binding_statements(index.tree.body, name)
    typing_only = _typing_imports(index.tree.body, name)
    if len(stmts) != kinds.count("assign") or kinds.count("import") != typing_only:
        return None
    if len(stmts) > 1 and not index.bound_once_per_path(name):
        return None
    how = "import"
    for stmt in stmts:
        value = stmt.value
        while isinstance(value, ast.Subscript):  # optional_import("torchvision.ops")[0]
            value = value.value
        if not isinstance(value, ast.Call):
            return None
        f = value.func
        callee = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if "import" not in callee.lower():
            how = "call"
    return how


def imported_or_none(index, name: str) -> bool:
    """``try: from mamba_ssm import scan_fn / except ImportError: scan_fn = None`` (a tuple of Nones too): an
    import on one path and None on the others, never rebound: fixed once the module is imported."""
    kinds = index.bindings.get(name, [])
    if "import" not in kinds or name in index.global_writes or any(k not in ("import", "none", "assign") for k in kinds):
        return False
    # every binding is straight-line import-time code (module level, no loop): whichever path ran, the name is
    # fixed once the module is imported
    stmts = _binding_statements(index.tree.body, name)
    return len(stmts) == len(kinds) - kinds.count("import") and all(_binds_none(s, name) for s in stmts) and \
        not _in_module_loop(index.tree.body, name)


def _in_module_loop(body, name: str) -> bool:
    """Is ``name`` bound inside a module-level loop (a value that changes while importing)?"""
    for stmt in body:
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            if any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(stmt)):
                return True
        elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for attr in ("body", "orelse", "finalbody"):
                sub = getattr(stmt, attr, None)
                if isinstance(sub, list) and _in_module_loop(sub, name):
                    return True
            for h in getattr(stmt, "handlers", ()) or ():
                if _in_module_loop(h.body, name):
                    return True
    return False


def _binds_none(stmt, name: str) -> bool:
    """Does the assignment bind ``name`` to None (``x = None``, ``a, x = None, None``)?"""
    if not isinstance(stmt, ast.Assign):
        return False
    for target in stmt.targets:
        todo = [(target, stmt.value)]
        while todo:
            t, v = todo.pop()
            if isinstance(t, ast.Name) and t.id == name:
                if not (isinstance(v, ast.Constant) and v.value is None):
                    return False
            elif isinstance(t, (ast.Tuple, ast.List)):
                if isinstance(v, (ast.Tuple, ast.List)) and len(v.elts) == len(t.elts):
                    todo.extend(zip(t.elts, v.elts))
                elif any(isinstance(leaf, ast.Name) and leaf.id == name for leaf in ast.walk(t)):
                    return False
    return True


def derived_from_imports(index, name: str) -> bool:
    """``is_fast_path_available = selective_state_update is not None`` or ``all((scan_fn, update_fn))``: bound
    once at import from names the imports fixed (``imported_or_none``): an availability flag, as fixed as they."""
    if index.bindings.get(name) != ["assign"] or name in index.global_writes or _in_module_loop(index.tree.body, name):
        return False
    stmts = _binding_statements(index.tree.body, name)
    if len(stmts) != 1 or not isinstance(stmts[0], ast.Assign):
        return False
    value = stmts[0].value
    builtins_called = {id(n.func) for n in ast.walk(value) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                       and n.func.id not in index.bindings}
    names = [n.id for n in ast.walk(value) if isinstance(n, ast.Name) and id(n) not in builtins_called]
    return bool(names) and all(imported_or_none(index, n) or index.bindings.get(n) == ["import"] for n in names)


def _typing_imports(body, name: str) -> int:
    """How many imports bind ``name`` under ``if TYPE_CHECKING:`` at module level (never at run time)."""
    n = 0
    for stmt in body:
        if isinstance(stmt, ast.If):
            t = stmt.test
            if (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
                    isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"):
                for inner in stmt.body:
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        n += sum(1 for a in inner.names if (a.asname or a.name.split(".")[0]) == name)
    return n


def _binding_statements(body, name: str) -> list:
    out = []
    for stmt in body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(leaf, ast.Name) and leaf.id == name
                   for t in targets for leaf in _targets(ast.Assign(targets=[t], value=stmt.value))):
                out.append(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for attr in ("body", "orelse", "finalbody", "handlers"):
            sub = getattr(stmt, attr, None)
            if isinstance(sub, list) and sub:
                out.extend(_binding_statements(sub, name))
    return out


_ANY = object()  # a change of a dict that may touch any key
_KEYED_CALLS = frozenset({"pop", "setdefault"})


def keys_read(func_node, name: str) -> frozenset | None:
    """The constant keys global ``name`` is read at in ``func_node`` (``name["k"]``, ``name.get("k")``), or None
    when it is used any other way (passed on, iterated, read at a computed key): then all of it is an input."""
    parents = {}
    for node in ast.walk(func_node):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    keys = set()
    for node in ast.walk(func_node):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        up = parents.get(id(node))
        if isinstance(up, ast.Subscript) and up.value is node and isinstance(up.slice, ast.Constant) \
                and isinstance(up.ctx, ast.Load):
            keys.add(up.slice.value)
            continue
        call = parents.get(id(up))
        if isinstance(up, ast.Attribute) and up.attr == "get" and isinstance(call, ast.Call) and call.func is up \
                and call.args and isinstance(call.args[0], ast.Constant):
            keys.add(call.args[0].value)
            continue
        return None
    return frozenset(keys)


def changed_key(change: Change):
    """The constant key an item store or a keyed call (``pop``, ``setdefault``) changes, else ``_ANY``."""
    node = change.node
    if change.how == "item" and isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value
    if change.how == "call" and isinstance(node, ast.Call) and node.func.attr in _KEYED_CALLS and node.args \
            and isinstance(node.args[0], ast.Constant):
        return node.args[0].value
    return _ANY


def touches(change: Change, keys: frozenset) -> bool:
    """Can ``change`` alter what is read at ``keys``? A store at another constant key cannot."""
    key = changed_key(change)
    return key is _ANY or key in keys
