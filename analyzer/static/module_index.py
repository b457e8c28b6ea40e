"""What a module defines, from a walk over statements only (never into expressions).

This is the cheap first layer every file gets: imports and their aliases, the kinds of every module-level
binding (for "is this global a module, function, class or constant?"), and every function and class with
the chain of scopes around it. Expressions are visited later, and only where a rule can fire.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from rules.dotted import dotted_name  # (the project index imports it from here too)

_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef)
# Compound statements whose nested statement lists we descend into.
_BODIES = ("body", "orelse", "finalbody")
# Statements that hold no statements (most of them): nothing to descend into.
_NO_BODY = frozenset({ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Pass, ast.Break,
                      ast.Continue, ast.Delete, ast.Assert, ast.Nonlocal})
# Of those, the ones nothing below module level records (an assignment of a call records the instance): skipped first.
_INNER_NOTHING = _NO_BODY - {ast.Assign}


@dataclass
class FunctionInfo:
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda  # a Lambda only when passed to a jit call
    parents: tuple  # enclosing FunctionDef/ClassDef nodes, outermost first
    class_node: ast.ClassDef | None  # the class when this is a method

    @property
    def name(self) -> str:
        return getattr(self.node, "name", "<lambda>")

    @property
    def qualname(self) -> str:
        return ".".join([p.name for p in self.parents] + [self.node.name])


@dataclass
class ModuleIndex:
    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted origin ("np" -> "numpy")
    bindings: dict[str, list[str]] = field(default_factory=dict)  # module name -> binding kinds in order
    # module name -> for each binding, the arms it sits in: ((id(if/try/match), arm index), ...)
    binding_arms: dict[str, list[tuple]] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # `_Outputs = Outputs` at module level: "_Outputs" -> "Outputs"
    global_writes: set[str] = field(default_factory=set)  # names some function declares `global`
    functions: list[FunctionInfo] = field(default_factory=list)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)  # by name, any depth
    function_of: dict[int, FunctionInfo] = field(default_factory=dict)  # id(FunctionDef) -> info
    # name -> callee names of `name = callee(...)` anywhere (method chains like `.to(device)` stripped)
    instances: dict[str, list[str]] = field(default_factory=dict)

    @property
    def top_functions(self) -> dict[str, list[FunctionInfo]]:
        """Module-level functions by name (built once)."""
        got = self.__dict__.get("_top_functions")
        if got is None:
            got = self.__dict__["_top_functions"] = {}
            for info in self.functions:
                if not info.parents:
                    got.setdefault(info.name, []).append(info)
        return got

    def resolve(self, expr) -> str | None:
        """Dotted name of a Name/Attribute chain with import aliases applied (``th.jit`` -> ``thunder.jit``)."""
        name = dotted_name(expr)
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        return self.imports.get(head, head) + dot + rest

    def module_name_kind(self, name: str, _depth: int = 0) -> str:
        """How a jitted function's read of module global ``name`` should be judged.

        "none": not bound at module level (a builtin or a star import); "static": a module, function,
        class, or UPPER_CASE constant bound once and never rebound; "mutable": anything else.
        """
        kinds = self.bindings.get(name)
        if not kinds:
            return "none"
        if name in self.global_writes:
            return "mutable"
        if name.startswith("__") and name.endswith("__"):
            return "static"
        structural = [k for k in kinds if k in ("import", "def", "class", "logger")]
        others = [k for k in kinds if k not in ("import", "def", "class", "logger")]
        if structural and all(k == "none" for k in others):  # try: import x / except: x = None
            return "static"
        if not others:
            return "static"
        # `_Outputs = Outputs` kept for backward compatibility, `detach_multiple = DetachMultiple.apply`, `gelu =
        # F.gelu`: as static as the class, function or module it is taken from
        target = self.aliases.get(name)
        if kinds == ["assign"] and target and target != name and _depth < 4:
            if self.module_name_kind(target, _depth + 1) == "static" and (
                    target not in self.bindings or any(k in ("import", "def", "class") for k in self.bindings[target])
                    or target in self.aliases):
                return "static"
        # A constant by convention: UPPER_CASE, bound once on every path (`if cuda: DTYPE = ... else: DTYPE = ...`,
        # `try: import apex; HAS_APEX = True except ImportError: HAS_APEX = False`).
        # A feature flag: `try: import apex; has_apex = True / except ImportError: has_apex = False`, each
        # path binding True or False once: decided at import, like the UPPER_CASE constants below.
        if len(kinds) > 1 and all(k == "flag" for k in kinds) and self.bound_once_per_path(name):
            return "static"
        # An import-time probe bound once (or once per path, with True/False/None elsewhere) and never rebound.
        if "probe" in kinds and all(k in ("probe", "flag", "none") for k in kinds):
            if len(kinds) == 1 or self.bound_once_per_path(name):
                return "static"
        # A private module global (`_torch_version = ...`, `_flash_available, _ = probe()`) bound once per
        # import path and never rebound in its module: no one is meant to change it after import.
        if name.startswith("_") and all(k in ("assign", "none", "flag", "probe") for k in kinds):
            if len(kinds) == 1 or self.bound_once_per_path(name):
                return "static"
        if all(k in ("assign", "none", "flag", "container", "probe") for k in kinds) and name.upper() == name and any(c.isalpha() for c in name):
            arms = self.binding_arms.get(name, [])
            if len(arms) == len(kinds) and all(
                _exclusive_arms(a, b) for i, a in enumerate(arms) for b in arms[i + 1 :]
            ):
                return "static"
        return "mutable"


    def bound_at_import(self, name: str) -> bool:
        """Bound once per import path (see below), or once inside an if/try whose other paths bind nothing
        (`if has_kernels: ops = get_kernel(...) else: raise ImportError(...)`)."""
        kinds = self.bindings.get(name, [])
        arms = self.binding_arms.get(name, [])
        if kinds == ["assign"] and len(arms) == 1 and arms[0] and name not in self.global_writes:
            return True
        return self.bound_once_per_path(name)

    def bound_once_per_path(self, name: str) -> bool:
        """Is ``name`` bound at import on exclusive paths only (``try: ops = load() except: ops = None``),
        and never rebound by a function? Then it is fixed once the module is imported."""
        kinds = self.bindings.get(name, [])
        arms = self.binding_arms.get(name, [])
        if len(kinds) < 2 or len(arms) != len(kinds) or name in self.global_writes:
            return False
        if any(k in ("aug", "loop", "del", "other") for k in kinds):
            return False
        return all(_exclusive_arms(a, b) for i, a in enumerate(arms) for b in arms[i + 1 :])


def _exclusive_arms(a: tuple, b: tuple) -> bool:
    """Do two bindings sit in different arms of one if/else, try/except or match (never both run)?"""
    for x, y in zip(a, b):
        if x != y:
            return x[0] == y[0]
    return False


def _bind(index: ModuleIndex, name: str, kind: str, arms: tuple = ()) -> None:
    index.bindings.setdefault(name, []).append(kind)
    index.binding_arms.setdefault(name, []).append(arms)


def _target_names(target) -> list[str]:
    out = []
    stack = [target]
    while stack:
        t = stack.pop()
        if isinstance(t, ast.Name):
            out.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            stack.extend(t.elts)
        elif isinstance(t, ast.Starred):
            stack.append(t.value)
    return out


# Calls that make a class (or a type) at module level: `Outputs = namedtuple("Outputs", [...])`.
_CLASS_FACTORIES = frozenset({"namedtuple", "NamedTuple", "TypedDict", "TypeVar", "NewType", "make_dataclass",
                              "Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"})


# Calls that ask what the installation supports: their answer is fixed for the life of the process.
_PROBES = frozenset({"hasattr", "callable", "find_spec", "is_available", "version"})


def _value_kind(value) -> str:
    if isinstance(value, ast.Constant) and value.value is None:
        return "none"
    if isinstance(value, ast.Constant) and isinstance(value.value, bool):
        return "flag"
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return "container"  # mutable in place: data, however often it is bound
    if isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute)):
        callee = value.func.id if isinstance(value.func, ast.Name) else value.func.attr
        if callee in ("dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter"):
            return "container"
        if callee in _PROBES or callee.startswith(("is_", "has_")) or callee.endswith("_available"):
            return "probe"  # `has_rms_norm = hasattr(F, "rms_norm")`: what this installation supports
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("getLogger", "get_logger") or name.endswith("_logger"):
            # a logger is bound once and never replaced: no hidden input (`init_logger(__name__)`,
            # `get_root_logger()`: a project's own logger factory, sglang's and mmcv's)
            return "logger"
        if name in _CLASS_FACTORIES:
            return "class"
    return "assign"


# nn.Module methods that return the module itself: `MyModel().to(device).eval()` is still a MyModel.
SELF_RETURNING = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float", "double", "bfloat16",
                            "requires_grad_", "to_empty"})


def strip_self_returning(expr):
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in SELF_RETURNING:
        expr = expr.func.value
    return expr


def _instantiated(call) -> str | None:
    """``C`` of ``C(...)``, or ``mod.C`` of ``mod.C(...)`` (the project index resolves those across modules)."""
    call = strip_self_returning(call)
    return dotted_name(call.func) if isinstance(call, ast.Call) else None


def build_module_index(tree: ast.Module) -> ModuleIndex:
    index = ModuleIndex(tree)
    # (statement, parents, class_node, at_module_level, arms of the enclosing if/try/match at module level)
    stack = [(s, (), None, True, ()) for s in reversed(tree.body)]
    # (type tests, not isinstance through the class tree: a parsed tree holds the node classes themselves)
    Import, ImportFrom, FunctionDef, AsyncFunctionDef, ClassDef, Assign, Call = (
        ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.Call)
    skipped = _INNER_NOTHING
    while stack:
        stmt, parents, cls, top, arms = stack.pop()
        typ = type(stmt)
        if typ is Import or typ is ImportFrom:
            for alias in stmt.names:
                if typ is Import:
                    local = alias.asname or alias.name.split(".")[0]
                    origin = alias.name if alias.asname else alias.name.split(".")[0]
                else:
                    if alias.name == "*":
                        continue
                    local = alias.asname or alias.name
                    origin = f"{stmt.module}.{alias.name}" if stmt.module else alias.name
                # First import wins for aliases: later shadowing is rare and not worth flow analysis.
                index.imports.setdefault(local, origin)
                if top:
                    _bind(index, local, "import")
            continue
        if typ is FunctionDef or typ is AsyncFunctionDef:
            info = FunctionInfo(stmt, parents, cls)
            index.functions.append(info)
            index.function_of[id(stmt)] = info
            if top:
                _bind(index, stmt.name, "def")
            inner = parents + (stmt,)
            # most statements of a function record nothing and hold none: never put on the stack
            stack.extend([(s, inner, None, False, ()) for s in reversed(stmt.body) if type(s) not in skipped])
            continue
        if typ is ClassDef:
            index.classes.setdefault(stmt.name, stmt)
            if top:
                _bind(index, stmt.name, "class")
            inner = parents + (stmt,)
            stack.extend([(s, inner, stmt, False, ()) for s in reversed(stmt.body) if type(s) not in skipped])
            continue
        if typ is ast.Global:
            index.global_writes.update(stmt.names)
            continue
        if typ is Assign and type(stmt.value) is Call:
            callee = _instantiated(stmt.value)
            if callee:
                for t in stmt.targets:
                    if type(t) is ast.Name:
                        index.instances.setdefault(t.id, []).append(callee)
        if top:
            if isinstance(stmt, ast.Assign):
                kind = _value_kind(stmt.value)
                for t in stmt.targets:
                    for n in _target_names(t):
                        _bind(index, n, kind, arms)
                        if isinstance(stmt.value, ast.Name) and isinstance(t, ast.Name):
                            index.aliases[n] = stmt.value.id
                        elif isinstance(stmt.value, ast.Attribute) and isinstance(t, ast.Name):
                            root = stmt.value
                            while isinstance(root, ast.Attribute):
                                root = root.value
                            if isinstance(root, ast.Name):
                                index.aliases[n] = root.id  # `apply = Fn.apply`: taken from Fn
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                for n in _target_names(stmt.target):
                    _bind(index, n, _value_kind(stmt.value), arms)
            elif isinstance(stmt, ast.AugAssign):
                for n in _target_names(stmt.target):
                    _bind(index, n, "aug")
            elif isinstance(stmt, (ast.For, ast.AsyncFor)):
                for n in _target_names(stmt.target):
                    _bind(index, n, "loop")
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    if item.optional_vars is not None:
                        for n in _target_names(item.optional_vars):
                            _bind(index, n, "other")
            elif isinstance(stmt, ast.Delete):
                for t in stmt.targets:
                    for n in _target_names(t):
                        _bind(index, n, "del")
        if typ in _NO_BODY:
            continue
        # Descend into compound statements, keeping the same scope. Arms (for exclusivity): an if's body (0)
        # and else (1); a try's body and else (0: both run on the same path) and each handler (2, 3, ...);
        # a match's cases. A finally, a loop or a with is no arm.
        is_try = typ is ast.Try or typ.__name__ == "TryStar"
        branching = typ is ast.If or is_try
        for k, attr in enumerate(_BODIES):
            body = getattr(stmt, attr, None)
            if body and type(body) is list:
                sub = arms + ((id(stmt), k if not is_try or attr != "orelse" else 0),) if branching else arms
                if attr == "finalbody":
                    sub = arms
                stack.extend([(s, parents, cls, top, sub) for s in reversed(body) if top or type(s) not in skipped])
        if is_try:
            for j, h in enumerate(stmt.handlers):
                if top and h.name:
                    _bind(index, h.name, "other")
                sub = arms + ((id(stmt), 2 + j),)
                stack.extend([(s, parents, cls, top, sub) for s in reversed(h.body) if top or type(s) not in skipped])
        elif typ is ast.Match:
            for j, case in enumerate(stmt.cases):
                sub = arms + ((id(stmt), j),)
                stack.extend([(s, parents, cls, top, sub) for s in reversed(case.body) if top or type(s) not in skipped])
    return index
