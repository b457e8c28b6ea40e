"""The project index: which functions of the linted files are compiled, by which compiler, from where.

Real projects compile in one file what they define in another (``model = torch.compile(Net())`` in
train.py, ``thunder.jit(ops.fused_step)`` in main.py, ``model.compile()``). Each file contributes a small
``summary`` (plain data, built from the parse the static engine already did): its imports, classes with
bases, ``self.x = Class(...)`` submodules, what each function calls, and its jit entry points. The index
joins the summaries, resolves every entry point to the function it compiles, and follows what that
function reaches (methods on ``self``, submodules' ``forward``, functions of other modules, inherited
``forward``) to a bounded depth. Each compiled function keeps its compiler and the entry point's place.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

# The static engine's helpers are imported where a file is summarized: a run answered wholly from the
# cache builds (or skips) the index without loading the engine.

REACH_DEPTH = 6  # calls followed from an entry point: deep enough for model -> block -> attention -> helper
_CALL = re.compile(r"\b((?:[A-Za-z_]\w*+\.)*+[A-Za-z_]\w*+)\s*+\(")  # possessive: no backtracking
_SELF_ATTR = re.compile(r"\bself\.([A-Za-z_]\w*+)")
_CONTAINERS = frozenset({"ModuleList", "Sequential", "ModuleDict"})



# --- module names ---------------------------------------------------------------------------------
def module_name(path: str, root: str) -> str:
    """Dotted module name of ``path`` below the project ``root``: ``src/`` layouts and packages understood.

    The name starts at the outermost folder that is a package (has ``__init__.py``) holding the file, so
    ``root/src/pkg/models/net.py`` is ``pkg.models.net`` and a script ``root/train.py`` is ``train``.
    """
    path = os.path.abspath(path)
    folder, base = os.path.split(path)
    stem = base[:-3] if base.endswith(".py") else base.rsplit(".", 1)[0]
    parts = [] if stem == "__init__" else [stem]
    root = os.path.abspath(root)
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        parent, name = os.path.split(folder)
        parts.append(name)
        if folder == root or parent == folder:
            break
        folder = parent
    return ".".join(reversed(parts)) or stem


# --- per-file summary (built in the worker that parsed the file) ----------------------------------
def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".") if module else []
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)] if level - 1 <= len(base) else []
    return ".".join(base + ([target] if target else []))


def _imports(tree: ast.Module, index, module: str, is_package: bool) -> dict[str, str]:
    """local name -> absolute dotted origin: the module index's imports (every form, any depth), with the
    relative ones of module level (and its if/try blocks) made absolute."""
    out = dict(index.imports)
    stack = list(tree.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.ImportFrom):
            if stmt.level:
                origin = _resolve_relative(module, is_package, stmt.level, stmt.module)
                for a in stmt.names:
                    if a.name != "*":
                        out[a.asname or a.name] = f"{origin}.{a.name}" if origin else a.name
        elif isinstance(stmt, (ast.If, ast.Try)) or type(stmt).__name__ == "TryStar":
            stack.extend(stmt.body)
            stack.extend(stmt.orelse)
            for h in getattr(stmt, "handlers", ()):
                stack.extend(h.body)
    return out


def _instance_classes(value) -> list[str]:
    """Class references a submodule assignment instantiates: ``Block(d)``, ``nn.ModuleList([Block(d) ...])``."""
    from .static.module_index import dotted_name, strip_self_returning


    value = strip_self_returning(value)
    if not isinstance(value, ast.Call):
        return []
    name = dotted_name(value.func)
    if name is None:
        return []
    if name.rsplit(".", 1)[-1] in _CONTAINERS:
        out = []
        for arg in value.args:
            items = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
            for item in items:
                if isinstance(item, (ast.ListComp, ast.GeneratorExp)):
                    item = item.elt
                out.extend(_instance_classes(item))
        return out
    return [name]


def _submodules(cls: ast.ClassDef) -> dict[str, list[str]]:
    """``self.<attr> = Class(...)`` in ``__init__`` (statements of its body, any depth)."""
    out: dict[str, list[str]] = {}
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "__init__":
            stack = list(stmt.body)
            while stack:
                s = stack.pop()
                if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
                    targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                    for t in targets:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                            classes = _instance_classes(s.value)
                            if classes:
                                out.setdefault(t.attr, []).extend(classes)
                for attr in ("body", "orelse", "finalbody"):
                    v = getattr(s, attr, None)
                    if isinstance(v, list) and v and isinstance(v[0], ast.stmt):
                        stack.extend(v)
    return out


def _entry_target(expr, stmt, index, func_qualnames) -> tuple | None:
    """What a jit call's first argument names: ("instance", class ref) or ("ref", function/method ref)."""
    from .static.module_index import dotted_name, strip_self_returning

    expr = strip_self_returning(expr)
    if isinstance(expr, ast.Call):
        name = dotted_name(expr.func)
        return ("instance", name) if name else None
    if isinstance(expr, ast.Name):
        for callee in index.instances.get(expr.id, ()):
            return ("instance", callee)
        return ("ref", expr.id)
    if isinstance(expr, ast.Attribute):
        if expr.attr == "forward":
            inner = _entry_target(expr.value, stmt, index, func_qualnames)
            if inner and inner[0] == "instance":
                return inner
        if isinstance(expr.value, ast.Name) and expr.value.id == "self":
            for info in index.functions:  # self.step inside a method: that class's method
                n = info.node
                if info.class_node is not None and n.lineno <= stmt.lineno <= n.end_lineno:
                    return ("ref", f"{info.class_node.name}.{expr.attr}")
            return None
        name = dotted_name(expr)
        return ("ref", name) if name else None
    return None


def _ast_line_ends(text: str) -> str:
    """The text with the line ends ast counts (a lone \\r too) as \\n, so that line numbers agree."""
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        return re.sub(r"\r\n?", "\n", text)
    return text


def _word_lines(text: str, words) -> set[int]:
    """1-based lines where any of ``words`` occurs (str.find in C; a regex alternation scans far slower)."""
    text = _ast_line_ends(text)
    positions = []
    for w in words:
        i = text.find(w)
        while i != -1:
            positions.append(i)
            i = text.find(w, i + 1)
    positions.sort()
    out, line, last = set(), 1, 0
    for p in positions:
        line += text.count("\n", last, p)
        last = p
        out.add(line)
    return out


def summarize(text: str, tree: ast.Module, index, path: str, module: str, jit_decorators=()) -> dict:
    """The file's part of the project index, as plain data (it crosses process boundaries and the cache)."""
    from .static.jitted import JitMatcher, _header_nodes, compiler_of, is_symbolic, statements_on_lines
    from .static.module_index import dotted_name

    is_package = os.path.basename(path) == "__init__.py"
    lines = _ast_line_ends(text).split("\n")
    # Functions keep only their line span: what one calls is read from its text when the index reaches it
    # (most functions are never reached, and scanning all of them cost as much as the parse).
    functions: dict[str, list] = {}
    classes: dict[str, list] = {}
    for info in index.functions:
        if any(not isinstance(p, ast.ClassDef) for p in info.parents):
            continue  # a nested function: its lines are its enclosing function's
        functions[info.qualname] = [info.node.lineno, info.node.end_lineno]
    for name, cls in index.classes.items():
        bases = [b for b in (dotted_name(x) for x in cls.bases) if b]
        classes[name] = [bases, _submodules(cls)]

    entries = []
    words = ["jit", "compile"] + [d.rsplit(".", 1)[-1].lstrip("@") for d in jit_decorators if d.strip()]
    if any(w in text for w in words):
        matcher = JitMatcher(index, tuple(jit_decorators))

        def label(node) -> str:
            line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
            if node.end_lineno == node.lineno:  # ast columns count UTF-8 bytes
                seg = line.encode("utf-8", "surrogatepass")[node.col_offset : node.end_col_offset].decode("utf-8", "replace")
            else:
                seg = line.strip() + " ..."
            seg = " ".join(seg.split())
            return seg if len(seg) <= 60 else seg[:57] + "..."

        for info in index.functions:
            if info.parents and not info.class_node:
                continue
            for dec in info.node.decorator_list:
                call = dec if isinstance(dec, ast.Call) else None
                opts = matcher.jit_call_options(call) if call else ((True, []) if matcher.is_jit(dec) else None)
                if opts:
                    jit_name = index.resolve((call.args[0] if call and index.resolve(call.func) in ("functools.partial", "partial") else (call.func if call else dec))) or ""
                    entries.append([["ref", info.qualname], compiler_of(jit_name), is_symbolic(opts[1]), "@" + label(dec), dec.lineno, True])
        for stmt in statements_on_lines(tree, _word_lines(text, words + ["partial"])):
            roots = list(_header_nodes(stmt)) if hasattr(stmt, "body") else [stmt]
            for root in roots:
                for node in ast.walk(root):
                    if not isinstance(node, ast.Call):
                        continue
                    jit_expr = None
                    opts = matcher.jit_call_options(node)
                    if opts is not None:
                        if index.resolve(node.func) in ("functools.partial", "partial"):
                            continue
                        jit_expr, keywords = node.func, opts[1]
                    elif isinstance(node.func, ast.Call) and matcher.jit_call_options(node.func):
                        inner = node.func
                        jit_expr = inner.args[0] if index.resolve(inner.func) in ("functools.partial", "partial") else inner.func
                        keywords = matcher.jit_call_options(inner)[1] + node.keywords
                    elif isinstance(node.func, ast.Attribute) and node.func.attr == "compile" and not node.args:
                        if index.resolve(node.func) in ("re.compile", "torch.compile"):
                            continue
                        target = _entry_target(node.func.value, stmt, index, functions)
                        if target and target[0] == "instance":
                            entries.append([list(target), "torch.compile", is_symbolic(node.keywords), label(node), node.lineno, False])
                        continue
                    else:
                        continue
                    if not node.args:
                        continue
                    target = _entry_target(node.args[0], stmt, index, functions)
                    if target:
                        compiler = compiler_of(index.resolve(jit_expr) or "")
                        entries.append([list(target), compiler, is_symbolic(keywords), label(node), node.lineno, False])
    return {
        "module": module,
        "path": path,
        "package": is_package,
        "imports": _imports(tree, index, module, is_package),
        "functions": functions,
        "classes": classes,
        "entries": entries,
    }


# --- the joined index ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Compiled:
    compiler: str  # thunder | torch.compile | ours | unknown
    symbolic: bool
    how: str  # "compiled by `torch.compile(Net())` at train.py:7"
    site: tuple[str, int] | None = None  # (path, line) of that entry point; None for `assume-compiled`


class ProjectIndex:
    def __init__(self, summaries: list[dict], root: str = ".", assume_compiled=(), target: str = "any", texts=None):
        self.root = os.path.abspath(root)
        self._lines: dict[str, list[str]] = {}  # path -> its lines, read when a function there is reached
        for path, text in (texts or {}).items():
            self._lines[path] = _ast_line_ends(text).split("\n")
        self.modules = {s["module"]: s for s in summaries}
        self.assume_compiled = tuple(assume_compiled)
        self.target = target
        self.compiled: dict[tuple[str, str], Compiled] = {}
        self._roots: set[tuple[str, str, str]] = set()  # (module, qualname, entry path): direct targets
        self._build()

    # Resolving names across modules.
    def _split(self, dotted: str, depth: int = 0) -> tuple[str, str] | None:
        """(module, name inside it) for an absolute dotted reference, following re-exports a few times."""
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            mod = ".".join(parts[:i])
            if mod in self.modules:
                rest = ".".join(parts[i:])
                s = self.modules[mod]
                head = rest.split(".")[0]
                if head not in s["classes"] and head not in s["functions"] and head in s["imports"] and depth < 4:
                    tail = rest[len(head):]
                    return self._split(s["imports"][head] + tail, depth + 1)
                return mod, rest
        return None

    def resolve(self, module: str, ref: str) -> tuple[str, str] | None:
        """(module, qualname) of a class or function that ``ref`` names from inside ``module``."""
        s = self.modules.get(module)
        if s is None:
            return None
        head, _, tail = ref.partition(".")
        if head in s["classes"] or head in s["functions"]:
            return module, ref
        if head in s["imports"]:
            origin = s["imports"][head] + ("." + tail if tail else "")
            return self._split(origin)
        return None

    def _method(self, module: str, cls: str, name: str, depth: int = 0) -> tuple[str, str] | None:
        """The class's own method ``name`` or the one it inherits (bases followed across modules)."""
        s = self.modules.get(module)
        if s is None or depth > 8:
            return None
        if f"{cls}.{name}" in s["functions"]:
            return module, f"{cls}.{name}"
        info = s["classes"].get(cls.rsplit(".", 1)[-1])
        if info is None:
            return None
        for base in info[0]:
            where = self.resolve(module, base)
            if where and where[1].rsplit(".", 1)[-1] in self.modules[where[0]]["classes"]:
                found = self._method(where[0], where[1], name, depth + 1)
                if found:
                    return found
        return None

    def _class_info(self, module: str, cls: str):
        s = self.modules.get(module)
        return s["classes"].get(cls.rsplit(".", 1)[-1]) if s else None

    def _submodule_classes(self, module: str, cls: str, depth: int = 0) -> dict[str, list[tuple[str, str]]]:
        out: dict[str, list[tuple[str, str]]] = {}
        info = self._class_info(module, cls)
        if info is None or depth > 8:
            return out
        for base in info[0]:
            where = self.resolve(module, base)
            if where and self._class_info(*where) is not None:
                out.update(self._submodule_classes(where[0], where[1], depth + 1))
        for attr, refs in info[1].items():
            resolved = [w for w in (self.resolve(module, r) for r in refs) if w and self._class_info(*w) is not None]
            if resolved:
                out[attr] = resolved
        return out

    # Building.
    def _rel(self, path: str) -> str:
        try:
            return os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
        except ValueError:
            return path

    def _build(self) -> None:
        pending = []  # (module, qualname, Compiled, depth)
        for mod, s in self.modules.items():
            for (kind, ref), compiler, symbolic, label, line, _decorator in s["entries"]:
                where = self.resolve(mod, ref)
                if where is None:
                    continue
                if self.target != "any":
                    compiler = self.target
                how = Compiled(compiler, symbolic, f"compiled by `{label}` at {self._rel(s['path'])}:{line}", (s["path"], line))
                if where[1] in self.modules[where[0]]["classes"]:  # a module class: its forward is compiled
                    fwd = self._method(where[0], where[1], "forward")
                    if fwd is None:
                        continue
                    where = fwd
                elif where[1] not in self.modules[where[0]]["functions"]:
                    continue
                self._roots.add((where[0], where[1], s["path"]))
                pending.append((where, how, 0))
            for qual in s["functions"]:
                full = f"{mod}.{qual}"
                if self.assume_compiled and any(fnmatch.fnmatchcase(full, p) for p in self.assume_compiled):
                    compiler = self.target if self.target != "any" else "unknown"
                    how = Compiled(compiler, False, "compiled as `assume-compiled` says")
                    pending.append(((mod, qual), how, 0))
        while pending:
            where, how, depth = pending.pop()
            old = self.compiled.get(where)
            if old is not None:
                if old.compiler != how.compiler and old.compiler != "unknown":
                    self.compiled[where] = Compiled("unknown", old.symbolic or how.symbolic, old.how, old.site)
                continue
            self.compiled[where] = how
            if depth >= REACH_DEPTH:
                continue
            for nxt in self._reached(*where):
                if nxt not in self.compiled:
                    pending.append((nxt, how, depth + 1))

    def _calls(self, module: str, qual: str) -> tuple[set, set]:
        """(names called, `self.<attr>` mentioned) in a function, by a regex over its text: an
        over-approximation (a call in a string counts too) that only ever marks more code as reached."""
        s = self.modules[module]
        path = s["path"]
        lines = self._lines.get(path)
        if lines is None:
            try:
                from .file_reader import decode

                with open(path, "rb") as f:
                    lines = _ast_line_ends(decode(f.read())).split("\n")
            except Exception:  # gone or unreadable since it was linted: nothing reached through it
                lines = []
            self._lines[path] = lines
        start, end = s["functions"][qual][:2]
        body = "\n".join(lines[start - 1 : end])
        return set(_CALL.findall(body)), set(_SELF_ATTR.findall(body))

    def _reached(self, module: str, qual: str) -> list[tuple[str, str]]:
        calls, self_attrs = self._calls(module, qual)
        out = []
        cls = qual.rsplit(".", 1)[0] if "." in qual else None
        subs = self._submodule_classes(module, cls) if cls else {}
        for call in calls:
            if call.startswith("self."):
                if cls is None:
                    continue
                name = call[5:]
                if "." in name:
                    attr, _, meth = name.partition(".")
                    for sub in subs.get(attr, ()):
                        found = self._method(sub[0], sub[1], meth)
                        if found:
                            out.append(found)
                    continue
                found = self._method(module, cls, name)
                if found:
                    out.append(found)
                continue
            where = self.resolve(module, call)
            if where is None:
                continue
            if where[1] in self.modules[where[0]]["functions"]:
                out.append(where)
        for attr in self_attrs:
            for sub in subs.get(attr, ()):
                found = self._method(sub[0], sub[1], "forward")
                if found:
                    out.append(found)
        return out

    # What linting one file needs.
    def facts_for(self, module: str, path: str) -> tuple:
        """Compiled functions of ``module`` that its own text does not compile directly, as sorted plain
        tuples ``(qualname, compiler, symbolic, how)``; part of the file's cache key."""
        out = []
        for (mod, qual), c in self.compiled.items():
            if mod != module:
                continue
            if (mod, qual, path) in self._roots:
                continue  # the file's own entry point: the per-file analysis sees it already
            out.append((qual, c.compiler, c.symbolic, c.how))
        return tuple(sorted(out))


@dataclass
class ProjectFile:
    """What linting one file exchanges with the project index: the facts in, the file's summary out.

    ``facts`` None: nothing is known from other files yet (first pass); a one-file index still applies
    this file's own ``assume-compiled`` matches and reachability.
    """

    path: str
    module: str
    facts: tuple | None = None
    assume_compiled: tuple = ()
    target: str = "any"
    want_summary: bool = True
    summary: dict | None = None
    used: tuple | None = None  # the facts the file was linted with
    # A live index (the language server's): takes the fresh summary, returns the facts to lint with (or
    # None), so that a file is linted once, with facts that already know its new text.
    facts_from: Callable[[dict], tuple | None] | None = None

    def attach(self, ctx) -> None:
        if self.want_summary or self.facts is None or self.facts_from is not None:
            self.summary = summarize(ctx.source.text, ctx.tree, ctx.index, self.path, self.module, ctx.jit_decorators)
        facts = self.facts
        if self.facts_from is not None:
            facts = self.facts_from(self.summary)
        if facts is None:
            one = ProjectIndex([self.summary], root=os.path.dirname(self.path), assume_compiled=self.assume_compiled,
                               target=self.target, texts={self.path: ctx.source.text})
            facts = one.facts_for(self.module, self.path)
        self.used = ctx.compiled_elsewhere = normalize_facts(facts)
        ctx.target = self.target


def normalize_facts(facts) -> tuple:
    """Facts as hashable, comparable tuples (they come back from JSON as lists)."""
    return tuple(tuple(f) for f in facts or ())


def project_file(path: str, settings, facts: tuple | None = None) -> ProjectFile:
    """The ProjectFile for linting ``path`` under the runner's settings."""
    path = os.path.abspath(path)
    return ProjectFile(
        path,
        module_name(path, settings.root),
        None if facts is None else normalize_facts(facts),
        tuple(getattr(settings, "assume_compiled", ())),
        getattr(settings, "target", "any"),
        want_summary=facts is None,
    )
