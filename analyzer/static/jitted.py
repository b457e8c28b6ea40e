"""Which functions of a module are compiled, and with which options.

A function is jitted when it is decorated with a jit entry point (``@thunder.jit``, ``@torch.compile(...)``,
``@partial(thunder.jit, ...)``, a configured decorator) or passed to one (``thunder.jit(f)``), or when it is
the ``forward`` of a class whose instance the same module compiles (``torch.compile(MyModel())``,
``thunder.jit(model)`` with ``model = MyModel(...)``, ``model.compile()``).
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass

from .children import nested_statements, own_statements
from .module_index import FunctionInfo, ModuleIndex, strip_self_returning
from .prefilter import matching_lines
from rules.walks import nodes  # (ast.walk without its generator: shared with the rules)

JIT_ENTRY_POINTS = frozenset(
    {
        "thunder.jit",
        "thunder.functional.jit",
        "torch.compile",
        "compiler.jit",
        "analyzer.jit",
    }
)
_PARTIAL = frozenset({"functools.partial", "partial"})
_SYMBOLIC_CACHE = "symbolic values"


def compiler_of(name: str) -> str:
    """The compiler behind a resolved jit entry point name: thunder, torch.compile, ours or unknown."""
    if name.startswith("thunder."):
        return "thunder"
    if name.startswith("torch.") or name == "compile":
        return "torch.compile"
    if name in ("compiler.jit", "analyzer.jit"):
        return "ours"
    return "unknown"  # a configured decorator, assume-compiled: could be either


@dataclass
class JitTarget:
    info: FunctionInfo
    symbolic: bool | str  # compiled with symbolic/dynamic values; "sizes": reached from such a function, so its
    # scalar arguments come from callers (constants, module attributes) and only the sizes it reads are symbolic
    how: str  # e.g. "@torch.compile" or "thunder.jit(f) at line 12"
    caller: str = ""  # for a helper traced through: the jitted function that calls it
    compiler: str = "unknown"  # thunder | torch.compile | ours | unknown
    elsewhere: str = ""  # "compiled by `torch.compile(Net())` at train.py:7" when another file compiles it
    assumed: bool = False  # the library default: no compile call found; elsewhere is "if `Net` is compiled"
    # a method reached only through an object the compiled call builds for itself (`s = Solver(x); s.solve()`):
    # its `self` lives for one call
    per_call_self: bool = False

    @property
    def label(self) -> str:
        """How messages name it: `f`, or `helper` (called from `f`)."""
        return f"`{self.info.name}` (called from `{self.caller}`)" if self.caller else f"`{self.info.name}`"

    @property
    def compile_line(self) -> int | None:
        """The line of this file's compile call (`torch.compile(f)` at line N); None for a decorator, a helper
        traced through, or a compile call in another file."""
        if self.elsewhere or not self.how.startswith("line "):
            return None
        try:
            return int(self.how.split()[1])
        except (IndexError, ValueError):
            return None

    @property
    def subject(self) -> str:
        """"jitted function `f`", or just "`forward`" after the library default's "if `Net` is compiled"."""
        return self.label if self.assumed else f"jitted function {self.label}"


class JitMatcher:
    """Decides whether an expression names a jit entry point (with aliases and configured names)."""

    def __init__(self, index: ModuleIndex, extra: tuple[str, ...] = ()):
        self.index = index
        self.dotted = set(JIT_ENTRY_POINTS)
        self.bare = set()
        for name in extra:
            name = name.strip()
            if not name:
                continue
            (self.dotted if "." in name else self.bare).add(name.lstrip("@"))

    def is_jit(self, expr) -> bool:
        name = self.index.resolve(expr)
        if name is None:
            return False
        if name in self.dotted:
            return True
        # A configured bare name matches the decorator however it was imported or qualified.
        return name.rsplit(".", 1)[-1] in self.bare

    def jit_call_options(self, call: ast.Call) -> tuple[bool, list[ast.keyword]] | None:
        """For ``jit(...)`` or ``partial(jit, ...)``: (is jit, its keywords); None when not a jit."""
        if self.is_jit(call.func):
            return True, call.keywords
        if self.index.resolve(call.func) in _PARTIAL and call.args and self.is_jit(call.args[0]):
            return True, call.keywords
        return None


def is_symbolic(keywords: list[ast.keyword]) -> bool:
    for kw in keywords:
        v = kw.value
        if kw.arg == "cache":
            if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.strip().lower() == _SYMBOLIC_CACHE:
                return True
            if isinstance(v, ast.Attribute) and v.attr == "SYMBOLIC_VALUES":
                return True
        if kw.arg == "dynamic" and isinstance(v, ast.Constant) and v.value is True:
            return True
    return False


def _call_text_pattern(matcher: JitMatcher) -> re.Pattern:
    """``\\b(?:jit|compile|partial|...)\\b``, each word that starts with a word character found from it (``j(?<!\\wj)it``
    is ``\\bjit``): a pattern that starts with ``\\b`` is tried at every position of the text, one whose branches
    start with letters skips, in C, to them (2x faster). The matches start at the same places."""
    names = {"jit", "compile", "partial"} | {n.rsplit(".", 1)[-1] for n in matcher.bare | matcher.dotted}
    return re.compile(r"(?:%s)\b" % "|".join(_from_first_letter(n) for n in sorted(names)))


def _from_first_letter(word: str) -> str:
    if not re.match(r"\w", word):
        return r"\b" + re.escape(word)
    first = re.escape(word[0])
    return first + r"(?<!\w" + first + ")" + re.escape(word[1:])


def statements_on_lines(tree: ast.Module, lines: set[int]):
    """Innermost simple statements (and decorator-free headers) whose line range holds one of ``lines``.

    Descends only into compound statements that contain a wanted line, so a file with three
    interesting lines costs a few dozen node visits, not a walk of the whole tree.
    """
    wanted = sorted(lines)

    def holds(node) -> bool:
        start = node.lineno
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
            start = node.decorator_list[0].lineno
        i = bisect.bisect_left(wanted, start)
        return i < len(wanted) and wanted[i] <= node.end_lineno

    stack = list(reversed(tree.body))
    while stack:
        stmt = stack.pop()
        if not holds(stmt):
            continue
        children = nested_statements(stmt)
        if children:
            yield stmt  # its header expressions (test, iter, decorators...) may hold the line too
            stack.extend(reversed(children))
        else:
            yield stmt


def _header_nodes(stmt):
    """Expressions of a statement that are not nested statements."""
    for name, value in ast.iter_fields(stmt):
        if name in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        if isinstance(value, ast.AST):
            yield value
        elif isinstance(value, list):
            for v in value:
                if isinstance(v, ast.AST) and not isinstance(v, ast.stmt):
                    yield v


def find_jitted(text: str, index: ModuleIndex, extra_decorators: tuple[str, ...] = ()) -> list[JitTarget]:
    matcher = JitMatcher(index, tuple(extra_decorators))
    pattern = _call_text_pattern(matcher)
    if not pattern.search(text):
        return []
    found: dict[int, JitTarget] = {}

    def add(info: FunctionInfo, symbolic: bool, how: str, compiler: str = "unknown") -> None:
        old = found.get(id(info.node))
        if old is None:
            found[id(info.node)] = JitTarget(info, symbolic, how, compiler=compiler)
        else:
            if symbolic and not old.symbolic:
                old.symbolic = True
            if old.compiler != compiler:
                old.compiler = "unknown"  # compiled by two compilers: both behaviours apply

    def compiler_of_call(call: ast.Call) -> str:
        if index.resolve(call.func) in _PARTIAL and call.args:
            return compiler_of(index.resolve(call.args[0]) or "")
        return compiler_of(index.resolve(call.func) or "")

    # 1. Decorators.
    for info in index.functions:
        for dec in info.node.decorator_list:
            if isinstance(dec, ast.Call):
                opts = matcher.jit_call_options(dec)
                if opts:
                    add(info, is_symbolic(opts[1]), "decorator", compiler_of_call(dec))
            elif matcher.is_jit(dec):
                add(info, False, "decorator", compiler_of(index.resolve(dec) or ""))

    # 2. Calls: only statements on lines whose text names a jit entry point are visited.
    lines = set(matching_lines(pattern, text))
    for stmt in statements_on_lines(index.tree, lines):
        roots = list(_header_nodes(stmt)) if hasattr(stmt, "body") else [stmt]
        for root in roots:
            for node in nodes(root):  # (ast.walk's order, without its generator and the singletons)
                if not isinstance(node, ast.Call):
                    continue
                opts = matcher.jit_call_options(node)
                if opts is not None:
                    if index.resolve(node.func) in _PARTIAL:
                        continue  # partial(thunder.jit, ...) itself: its call partial(...)(f) is matched below
                    compiler = compiler_of_call(node)
                elif isinstance(node.func, ast.Call) and matcher.jit_call_options(node.func) and len(
                        node.func.args) <= (1 if index.resolve(node.func.func) in _PARTIAL else 0):
                    # (never the call of a compiled function: in `torch.compile(f)(x)`, x is an argument)
                    # torch.compile(dynamic=True)(f), partial(thunder.jit, cache=...)(f)
                    opts = (True, matcher.jit_call_options(node.func)[1] + node.keywords)
                    compiler = compiler_of_call(node.func)
                else:
                    # model.compile(...): nn.Module.compile is torch.compile on the module in place.
                    if isinstance(node.func, ast.Attribute) and node.func.attr == "compile":
                        for info in _forward_of(node.func.value, stmt, index):
                            add(info, is_symbolic(node.keywords), f"line {node.lineno}", "torch.compile")
                    continue
                args = node.args
                if not args:
                    continue
                symbolic = is_symbolic(opts[1])
                for info in _functions_named_by(args[0], stmt, index):
                    add(info, symbolic, f"line {node.lineno}", compiler)
    # 3. Submodules: a compiled forward calls the forward of every module it holds (self.attn = Attn(...)).
    pending = [t for t in found.values() if t.info.class_node is not None and t.info.name == "forward"]
    while pending:
        parent = pending.pop()
        for cls_name in _submodule_classes(parent.info.class_node, index):
            for info in index.functions:
                if info.class_node is index.classes[cls_name] and info.name == "forward" and id(info.node) not in found:
                    add(info, parent.symbolic and "sizes", f"submodule of {parent.info.qualname}", parent.compiler)
                    pending.append(found[id(info.node)])
    return list(found.values())


def _submodule_classes(cls: ast.ClassDef, index: ModuleIndex) -> list[str]:
    """Classes of this module instantiated into ``self.<name>`` inside the class's methods."""
    out = []
    for stmt in cls.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                func = node.value.func
                if isinstance(func, ast.Name) and func.id in index.classes and func.id != cls.name:
                    if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                           for t in node.targets):
                        out.append(func.id)
    return out


def _enclosing_functions(stmt, index: ModuleIndex):
    """FunctionInfos whose body holds ``stmt`` (innermost first)."""
    out = []
    for info in index.functions:
        n = info.node
        if n.lineno <= stmt.lineno and stmt.end_lineno <= n.end_lineno and n is not stmt:
            out.append(info)
    out.sort(key=lambda i: -len(i.parents))
    return out


def _functions_named_by(expr, stmt, index: ModuleIndex) -> list[FunctionInfo]:
    if isinstance(expr, ast.Lambda):
        # thunder.jit(lambda x, n: ...): the lambda is the compiled function, inside the functions around it
        enclosing = _enclosing_functions(stmt, index)
        parents = enclosing[0].parents + (enclosing[0].node,) if enclosing else ()
        return [FunctionInfo(expr, parents, None)]
    if isinstance(expr, ast.Name):
        # A function defined in a scope the call sees (an enclosing function's, innermost first), else at
        # module level: never a function of the same name nested in another function or class.
        candidates = [i for i in index.functions if i.node.name == expr.id and i.class_node is None]
        enclosing = _enclosing_functions(stmt, index)
        for scope in enclosing:
            local = [i for i in candidates if i.parents and i.parents[-1] is scope.node]
            if local:
                return local
        top = [i for i in candidates if not i.parents]
        if top:
            return top
        return _forward_of(expr, stmt, index)
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        # torch.compile(self.forward) inside a method: that class's method of this name
        for scope in _enclosing_functions(stmt, index):
            if scope.class_node is not None:
                return [i for i in index.functions if i.class_node is scope.class_node and i.name == expr.attr]
        return []
    if isinstance(expr, ast.Attribute) and expr.attr == "forward":
        return _forward_of(expr.value, stmt, index)
    if isinstance(expr, ast.Call):
        return _forward_of(expr, stmt, index)
    return []


def _forward_of(expr, stmt, index: ModuleIndex) -> list[FunctionInfo]:
    """``forward`` of the module class instantiated by ``expr`` (``MyModel(...)`` or a name bound to one)."""
    cls_name = None
    expr = strip_self_returning(expr)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        cls_name = expr.func.id
    elif isinstance(expr, ast.Name):
        cls_name = _class_bound_in_scope(expr.id, stmt, index)
    if cls_name is None or cls_name not in index.classes:
        return []
    cls = index.classes[cls_name]
    return [i for i in index.functions if i.class_node is cls and i.node.name == "forward"]




def _class_bound_in_scope(name: str, stmt, index: ModuleIndex) -> str | None:
    """The class ``C`` of the ``name = C(...)`` (or ``C(...).to(device)``) the call at ``stmt`` sees: in its
    function, else at module level; a parameter of the function is what its callers pass (the project index
    follows those), and a same-named variable of another function is not this one."""
    enclosing = _enclosing_functions(stmt, index)
    scopes = []
    if enclosing:
        fn = enclosing[0].node
        args = fn.args
        if name in [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a]:
            return None
        scopes.append(fn.body)
    scopes.append(index.tree.body)
    for body in scopes:
        found = None
        for s in own_statements(body):
            if isinstance(s, ast.Assign) and (s.lineno < stmt.lineno or body is not scopes[0]) and any(
                    isinstance(t, ast.Name) and t.id == name for t in s.targets):
                callee = strip_self_returning(s.value)
                if isinstance(callee, ast.Call) and isinstance(callee.func, ast.Name) and callee.func.id in index.classes:
                    found = callee.func.id
        if found or body is not index.tree.body and any(
                isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
                for s in own_statements(body)):
            return found  # (bound in the function to something else: not a module global)
    return None
