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
import bisect
import fnmatch
import os
import posixpath
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace

from .compile_sites import data_pipeline, is_module_class, returned_classes, through_wrappers, trains

# The static engine's helpers are imported where a file is summarized: a run answered wholly from the
# cache builds (or skips) the index without loading the engine.

# Said once after the findings when the library default applied, with why ("no compile call found").
LIBRARY_DEFAULT_NOTE = "{}: every nn.Module forward is treated as compiled; set `assume-compiled` to choose"
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"torch", "numpy", "typing_extensions"}
EAGER = "eager"  # a fact's compiler for a function run eagerly by a decorator imported from another module
# a fact's compiler for a project-wide torch._dynamo setting: ("", SETTING, name, "path:line", False, False)
SETTING = "setting"
REACH_DEPTH = 6  # calls followed from an entry point: deep enough for model -> block -> attention -> helper



# --- module names ---------------------------------------------------------------------------------
def module_name(path: str, root: str, is_package=None) -> str:
    """Dotted module name of ``path`` below the project ``root``: ``src/`` layouts and packages understood.

    The name starts at the outermost folder that is a package (has ``__init__.py``) holding the file, so
    ``root/src/pkg/models/net.py`` is ``pkg.models.net`` and a script ``root/train.py`` is ``train``.
    ``is_package(folder)`` answers without the file system where the files are labels (the HTTP service).
    """
    is_package = is_package or (lambda folder: os.path.isfile(os.path.join(folder, "__init__.py")))
    path = os.path.abspath(path)
    folder, base = os.path.split(path)
    stem = base[:-3] if base.endswith(".py") else base.rsplit(".", 1)[0]
    parts = [] if stem == "__init__" else [stem]
    root = os.path.abspath(root)
    while is_package(folder):
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


def _enclosing_function(stmt, index):
    """The innermost function (not a lambda) whose body holds ``stmt``, or None at module level."""
    best = None
    for info in index.functions:
        n = info.node
        if n.lineno < stmt.lineno and stmt.end_lineno <= n.end_lineno and (best is None or n.lineno > best.node.lineno):
            best = info
    return best


def _param_position(info, name: str) -> int | None:
    """The position of parameter ``name`` of ``info``'s function (self/cls not counted), else None."""
    args = info.node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if info.class_node is not None and names and names[0] in ("self", "cls"):
        names = names[1:]
    if name in names:
        return names.index(name)
    if name in [a.arg for a in args.kwonlyargs]:
        return -1  # keyword-only: found by name at the call sites
    return None


def _bindings(name: str, stmt, index):
    """What ``name`` is bound to in the scope of ``stmt`` (its function, else the module): the values of
    ``name = ...`` and the iterables of ``for name in ...`` whose loop holds ``stmt``, in source order."""
    around = _enclosing_function(stmt, index)
    scope = around.node if around is not None else index.tree
    values, loops = [], []
    from .calls import scope_statements  # (where a file is summarized: a cached run loads no engine)

    for s in scope_statements(scope):
        if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in s.targets):
            values.append(s.value)
        elif isinstance(s, ast.Assign) and isinstance(s.value, ast.Call) and len(s.targets) == 1 \
                and isinstance(s.targets[0], ast.Tuple) and not any(isinstance(e, ast.Starred) for e in s.targets[0].elts):
            for i, e in enumerate(s.targets[0].elts):
                if isinstance(e, ast.Name) and e.id == name:  # `step, state = make()`: item i of what make returns
                    values.append(ast.copy_location(ast.Subscript(value=s.value, slice=ast.Constant(i), ctx=ast.Load()),
                                                    s.value))
        elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == name and s.value:
            values.append(s.value)
        elif isinstance(s, (ast.For, ast.AsyncFor)) and s.lineno <= stmt.lineno <= s.end_lineno:
            container = _loop_container(s.target, s.iter, name)
            if container is not None:
                loops.append(container)
    before = [v for v in values if v.lineno < stmt.lineno]  # `m = Net(); m = torch.compile(m)`: the first
    return before, loops, around


# A loop over a module container's items: `for b in m.children()`, `for _, b in m.named_children()`, `for b in
# d.values()`, `for i, b in enumerate(m.layers)` (`modules()` also yields the module itself: its items stand for it)
_ITEMS = frozenset({"children", "modules", "values"})
_NAMED_ITEMS = frozenset({"named_children", "named_modules", "items"})
# nn.Module's own iterators: on `model.layers` (a container attribute) they yield its items; on `model` itself,
# everything model holds
_MODULE_ITEMS = frozenset({"children", "modules", "named_children", "named_modules"})


def _narrowed_class(name: str, stmt, around, index) -> str | None:
    """The class an ``if isinstance(name, C):`` around ``stmt`` (in its function) narrows ``name`` to
    (``for m in model.modules(): if isinstance(m, Block): m.compile()``), else None."""
    from .calls import isinstance_classes

    scope = around.node if around is not None else index.tree
    for node in ast.walk(scope):
        if type(node) is ast.If and node.body and node.body[0].lineno <= stmt.lineno <= node.body[-1].end_lineno:
            tests = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And) else [node.test]
            for t in tests:
                got = isinstance_classes(t)
                if got and isinstance(got[0], ast.Name) and got[0].id == name and len(got[1]) == 1:
                    return got[1][0]
    return None


def _loop_container(target, iterable, name: str):
    """The container whose items ``for <target> in <iterable>`` binds ``name`` to, else None."""
    call = iterable if isinstance(iterable, ast.Call) and not iterable.args and not iterable.keywords else None
    method = call.func.attr if call is not None and isinstance(call.func, ast.Attribute) else None
    if method in _MODULE_ITEMS and not isinstance(call.func.value, ast.Attribute):
        return None  # `model.children()`: the modules model holds, under every attribute (not followed)
    if isinstance(target, ast.Name):
        if target.id != name:
            return None
        return call.func.value if method in _ITEMS else iterable
    if isinstance(target, ast.Tuple) and len(target.elts) == 2:
        second = target.elts[1]
        if not (isinstance(second, ast.Name) and second.id == name):
            return None
        if method in _NAMED_ITEMS:
            return call.func.value
        if (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "enumerate"
                and iterable.args):
            return _loop_container(second, iterable.args[0], name)
    return None


def _project_annotation(ann, index) -> list[str]:
    """The classes a parameter's annotation names, but torch's own (``model: nn.Module`` says nothing of which
    module: the callers do)."""
    from .calls import annotation_classes

    if ann is None:
        return []
    out = []
    for c in annotation_classes(ann):
        head, _, rest = c.partition(".")
        origin = index.imports.get(head, head)
        if origin.split(".")[0] != "torch":
            out.append(c)
    return out


def _same_object(value, name: str) -> bool:
    from ..static.module_index import strip_self_returning

    value = strip_self_returning(value)
    if isinstance(value, ast.Name):
        return value.id == name
    return isinstance(value, ast.Call) and any(isinstance(a, ast.Name) and a.id == name for a in value.args)


def _chain(expr):
    """(root name, attributes) of ``a.b[i].c``: an item of a container holds what the container holds."""
    attrs = []
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        if isinstance(expr, ast.Attribute):
            attrs.append(expr.attr)
        expr = expr.value
    return (expr.id, list(reversed(attrs))) if isinstance(expr, ast.Name) else (None, [])


def _entry_target(expr, stmt, index, func_qualnames, depth: int = 0) -> tuple | None:
    """What a jit call's first argument names, resolved in the call's scope:

    - ("instance", class or factory ref): ``Net(...)``, a name bound to one;
    - ("ref", function/method ref): a function, ``ops.fused_step``;
    - ("wrapper", function, position, parameter): a parameter of the function around the call
      (``def setup(model): return torch.compile(model)``: its callers say what is compiled);
    - ("chain", root kind, root ref, attributes): an attribute chain on an instance, ``self`` or an annotated
      parameter (``pipe.unet``, ``self.fn``, ``model.layers[i]``, ``model.train_step``, a loop variable over
      ``model.layers``), followed by the index through what each class holds.
    None: nothing the index can follow (the summary names it as unresolved)."""
    from ..static.module_index import dotted_name, strip_self_returning

    from .calls import annotation_classes

    expr = strip_self_returning(expr)
    if depth > 4:
        return None
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Call) and isinstance(expr.slice, ast.Constant) \
            and type(expr.slice.value) is int:
        name = dotted_name(expr.value.func)  # `make()[0]`: the function a factory returns first in its tuple
        return ("instance", f"{name}@{expr.slice.value}") if name else None
    if isinstance(expr, ast.Call):
        if index.resolve(expr.func) in ("functools.partial", "partial") and expr.args:
            return _entry_target(expr.args[0], stmt, index, func_qualnames, depth + 1)  # torch.compile(partial(f, k=1))
        name = dotted_name(expr.func)
        return ("instance", name) if name else None
    if isinstance(expr, ast.Attribute) and expr.attr == "forward":
        inner = _entry_target(expr.value, stmt, index, func_qualnames, depth + 1)
        if inner and inner[0] in ("instance", "wrapper", "chain"):
            return inner
    root, attrs = _chain(expr)
    if root is None:
        return None
    around = _enclosing_function(stmt, index)
    if root in ("self", "cls") and around is not None and around.class_node is not None:
        return ("chain", "class", around.class_node.name, attrs)
    if not attrs and root not in index.imports:  # `for m in model.modules(): if isinstance(m, Block): m.compile()`
        narrowed = _narrowed_class(root, stmt, around, index)
        if narrowed:
            return ("chain", "class", narrowed, [])
    values, loops, around = _bindings(root, stmt, index) if root not in index.imports else ([], [], around)
    # `model = model.to(device)`, `model = DDP(model)`, `model = self._prepare(model)`: the same object, or one
    # that wraps it (its forward calls the model's)
    values = [v for v in values if not _same_object(v, root)]
    if around is not None and around.parents == (around.class_node,) * len(around.parents) and not values and not loops:
        pos = _param_position(around, root)
        if pos is not None:
            args = around.node.args
            ann = next((a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg == root), None)
            classes = _project_annotation(ann, index)
            if classes:  # def step(model: GPT): torch.compile(model.train_step)
                return ("chain", "class", classes[0], attrs)
            if not attrs:
                return ("wrapper", around.qualname, pos, root)
            # def apply_compile(model: nn.Module): ... model.layers ...: what the callers pass, then its attributes
            return ("wrapper", around.qualname, pos, root, attrs)
    for value in reversed(loops + values):  # the loop around the call, else the last binding in the scope
        inner = _entry_target(value, stmt, index, func_qualnames, depth + 1)
        if inner is None:
            continue
        if loops and value is loops[-1]:
            # `for block in model.layers`: an item of what the chain holds
            if inner[0] == "chain":
                return ("chain", inner[1], inner[2], inner[3] + attrs)
            if inner[0] == "wrapper" and len(inner) > 4:  # `for b in model.layers.values()`, model a parameter
                return (*inner[:4], list(inner[4]) + attrs)
            return None
        if inner[0] == "instance":
            return ("chain", "instance", inner[1], attrs) if attrs else inner
        if inner[0] == "chain":
            return ("chain", inner[1], inner[2], inner[3] + attrs)
        if inner[0] == "wrapper" and len(inner) > 4:
            return (*inner[:4], list(inner[4]) + attrs)
        if inner[0] == "ref" and not attrs:
            return inner
        return None
    if values or loops:
        return None
    if not attrs:
        if around is not None:  # a function nested in the one around the call (or in one around that)
            for info in index.functions:
                if info.node.name == root and info.parents and info.parents[-1] is around.node:
                    return ("ref", info.qualname)
        for callee in index.instances.get(root, ()):  # bound in another scope of the file
            return ("instance", callee)
        return ("ref", root)
    if root in index.imports or root in index.classes or root in index.top_functions:
        return ("ref", dotted_name(expr)) if dotted_name(expr) else None  # ops.fused_step, Net.forward
    callees = index.instances.get(root, ())
    return ("chain", "instance", callees[0], attrs) if callees else None


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
    from rules.jit_markers import disabler_aliases, eager_decorator
    from rules.jit_markers import compiling_check_lines, mentions_compiling_checks
    from rules.dynamo_settings import CAPTURE_SCALAR_OUTPUTS, capture_scalar_outputs_line

    from ..static.jitted import JitMatcher, _header_nodes, compiler_of, is_symbolic, statements_on_lines
    from ..static.module_index import dotted_name
    from .calls import function_facts
    from .compile_sites import composed_classes
    from .submodules import held_classes

    is_package = os.path.basename(path) == "__init__.py"
    disablers = disabler_aliases(tree, index.resolve)
    checks = mentions_compiling_checks(text)
    # a function with no line naming such a check has no eager-only block: function_facts need not look for one
    check_lines = compiling_check_lines(text) if checks else []
    # Each function and method: its line span and what it calls, from its syntax tree: [start, end, calls, self
    # attrs read, returns, eager, decorators from other modules], see calls.py. A nested function has its own
    # record (a compile call may name it) and its calls count for the function around it too.
    functions: dict[str, list] = {}
    classes: dict[str, list] = {}
    narrowed: dict[str, dict[str, list]] = {}  # class -> attr -> classes isinstance() narrows it to
    for info in index.functions:
        if not isinstance(info.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        node = info.node
        first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        i = bisect.bisect_left(check_lines, first) if check_lines else 0
        here = check_lines is None or (i < len(check_lines) and check_lines[i] <= node.end_lineno)
        calls, attrs, narrows, returns = function_facts(node, checks and here)
        eager, decorators = "", []
        if node.decorator_list:
            eager = next((k for k in (eager_decorator(d, index.resolve, disablers) for d in node.decorator_list) if k), "")
            # decorators from other modules (`from .utils import no_compile`): the index asks their modules
            decorators = [] if eager else sorted({n for n in (dotted_name(d.func if isinstance(d, ast.Call) else d)
                                                              for d in node.decorator_list) if n and n in index.imports})
        functions[info.qualname] = [info.node.lineno, info.node.end_lineno, calls, attrs, returns, eager, decorators]
        if info.class_node is not None and narrows:
            for attr, refs in narrows.items():
                narrowed.setdefault(info.class_node.name, {}).setdefault(attr, []).extend(refs)
    for name, cls in index.classes.items():
        bases = [b for b in (dotted_name(x) for x in cls.bases) if b]
        stored: dict[str, list[str]] = {}
        held = held_classes(cls, stored)
        for attr, refs in narrowed.get(name, {}).items():
            held[attr] = sorted(set(held.get(attr, [])) | set(refs))
        # a third item only where a method stores a name (`self.fn = cross_entropy_loss`): for `torch.compile(self.fn)`
        classes[name] = [bases, held] + ([{a: sorted(set(r)) for a, r in sorted(stored.items())}] if stored else [])

    entries = []
    words = ["jit", "compile"] + [d.rsplit(".", 1)[-1].lstrip("@") for d in jit_decorators if d.strip()]
    if any(w in text for w in words):
        matcher = JitMatcher(index, tuple(jit_decorators))

        lines = []  # split when the first entry is labelled (most files that name a jit word have none)

        def label(node) -> str:
            if not lines:
                lines.extend(_ast_line_ends(text).split("\n"))
            line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
            if node.end_lineno == node.lineno:  # ast columns count UTF-8 bytes
                seg = line.encode("utf-8", "surrogatepass")[node.col_offset : node.end_col_offset].decode("utf-8", "replace")
            elif isinstance(node, ast.Call) and node.args and not isinstance(node.args[0], ast.Starred):
                # a call over several lines: what it compiles, `torch.compile(fx_model, ...)` (nequip)
                more = ", ..." if len(node.args) > 1 or node.keywords else ""
                seg = f"{ast.unparse(node.func)}({ast.unparse(node.args[0])}{more})"
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
                    elif isinstance(node.func, ast.Call) and matcher.jit_call_options(node.func) and len(
                            node.func.args) <= (1 if index.resolve(node.func.func) in ("functools.partial", "partial") else 0):
                        # torch.compile(dynamic=True)(f), partial(thunder.jit, ...)(f); never the call of a
                        # compiled function, `torch.compile(f)(x)`
                        inner = node.func
                        jit_expr = inner.args[0] if index.resolve(inner.func) in ("functools.partial", "partial") else inner.func
                        keywords = matcher.jit_call_options(inner)[1] + node.keywords
                    elif isinstance(node.func, ast.Attribute) and node.func.attr == "compile" and not node.args:
                        if index.resolve(node.func) in ("re.compile", "torch.compile"):
                            continue
                        target = _entry_target(node.func.value, stmt, index, functions)
                        if not target or target[0] not in ("instance", "wrapper", "chain"):
                            if not any(o.split(".")[0] == "torch" for o in index.imports.values()):
                                continue  # (Keras' model.compile(), a query's .compile(): no torch here)
                            target = ("unresolved", "module")  # (`m.compile()` compiles an nn.Module, whichever)
                        elif target[0] == "wrapper":
                            target = (*target[:4], list(target[4]) if len(target) > 4 else [], "module")
                        entries.append([list(target), "torch.compile", is_symbolic(node.keywords), label(node), node.lineno, False])
                        continue
                    else:
                        continue
                    if not node.args:
                        continue
                    target = _entry_target(node.args[0], stmt, index, functions) or ("unresolved",)
                    compiler = compiler_of(index.resolve(jit_expr) or "")
                    entries.append([list(target), compiler, is_symbolic(keywords), label(node), node.lineno, False])
    summary = {
        "module": module,
        "disablers": disablers,
        "composed": composed_classes(tree, text),
        "path": path,
        "package": is_package,
        "imports": _imports(tree, index, module, is_package),
        "functions": functions,
        "classes": classes,
        "entries": entries,
        # name -> what `name = Callee(...)` binds it to, anywhere in the file: wrappers' call sites pass these
        "instances": {k: v for k, v in index.instances.items() if any(c[:1].isupper() or "." in c for c in v)},
    }
    scalar_line = capture_scalar_outputs_line(text, tree, index.resolve)
    if scalar_line is not None:  # (only where true: every other file's summary, and its digest, stay as they were)
        summary[CAPTURE_SCALAR_OUTPUTS] = scalar_line
    return summary


def is_test_file(path: str) -> bool:
    """A test of the project (``tests/``, ``test_*.py``, ``*_test.py``, ``conftest.py``)."""
    parts = path.replace(os.sep, "/").split("/")
    base = parts[-1]
    return base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py" or any(
        p in ("test", "tests") for p in parts[:-1])


# --- the joined index ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Compiled:
    compiler: str  # thunder | torch.compile | ours | unknown
    symbolic: bool
    how: str  # "compiled by `torch.compile(Net())` at train.py:7", or "if `Net` is compiled" (library default)
    assumed: bool = False  # the library default: no compile call was found, every module's forward is linted
    site: tuple[str, int] | None = None  # (path, line) of that entry point; None for `assume-compiled`
    entry: bool = True  # the function the compile call names (or a compiled module's forward); else reached from it


def _runs_the_loop(qual: str, rec) -> bool:
    """Does this function run a backward pass as a training loop does? Not an autograd.Function's own
    ``backward`` (a kernel recomputing its forward: liger's tiled MLP), nor a test (unsloth's test_layernorm
    beside its kernel), nor clearing gradients alone (a utility resetting a model)."""
    name = qual.rsplit(".", 1)[-1]
    if name == "backward" or name.startswith("test") or len(rec) < 3:
        return False
    # (such a call ends in "backward": one search of the joined calls rules most functions out)
    return "backward" in "\n".join(rec[2]) and any(trains(c) and not c.endswith("zero_grad") for c in rec[2])


def _scope_of(rel: str) -> str:
    """The folder above the folder of a file (``a/b`` for ``a/b/c/x.py``), "" near the top: where the modules an
    unresolved module compile may compile are looked for (a pipeline's folder's parent holds its models)."""
    return posixpath.dirname(posixpath.dirname(rel))


def _within(rel: str, scopes) -> bool:
    return any(not d or rel.startswith(d + "/") for d in scopes)


class ProjectIndex:
    def __init__(self, summaries: list[dict], root: str = ".", assume_compiled=None, target: str = "any", texts=None):
        self.root = os.path.abspath(root)
        self._rel: dict[str, str] = {}  # path -> rel(path)
        self._lines: dict[str, list[str]] = {}  # path -> its lines, read when a function there is reached
        self._asked: set[str] = set()  # the files whose text the build asked for (what it says depends on it)
        for path, text in (texts or {}).items():
            self._lines[path] = _ast_line_ends(text).split("\n")
        # by name (and path, where two files share a module name): every order below follows from it, never
        # from the order the files were linted in. Two scripts of one name (tools/train.py, scripts/train.py) are
        # two modules: the first by path keeps the name imports resolve to, the others are keyed `name@path`.
        self.modules: dict[str, dict] = {}
        self._module_of_path: dict[str, str] = {}
        for s in sorted(summaries, key=lambda s: (s["module"], s["path"])):
            key = s["module"] if s["module"] not in self.modules else f"{s['module']}@{self.rel(s['path'])}"
            self.modules[key] = s
            self._module_of_path[s["path"]] = key
        # None: not configured (the library default applies when no compile call is found); () turns it off
        self.assume_compiled = None if assume_compiled is None else tuple(assume_compiled)
        self.unmatched_patterns: list[str] = []  # `assume-compiled` patterns that match no function of the project
        self.target = target
        self.found_compile_site = False
        # why the library default applied ("no compile call found"), or "" when it did not
        self.library_default = ""
        self.compiled: dict[tuple[str, str], Compiled] = {}
        self._reach_cache: dict[tuple[str, str], list] = {}
        # function -> what it reaches only through an object it builds and keeps to itself (``n:`` calls), and
        # only through ``self`` (its own class's methods: the same object); see _per_call_methods
        self._kinds: dict[tuple[str, str], tuple[set, set]] = {}
        self.per_call: frozenset = frozenset()  # methods whose `self` lives for one compiled call
        self._subclasses: dict | None = None  # (module, class) -> its direct project subclasses, made when first asked
        self._trees: dict[str, ast.Module | None] = {}
        self._renames: dict[str, str] = {}
        # (module, class) -> the attributes its methods bind to a disable; module -> its functions that bind any
        self._eager_attr_cache: dict = {}
        self._renames = self._own_names()
        # the names of every method of the project's classes (`A.fit` -> "fit"): what no class has is no method
        self._method_names = frozenset(q.rsplit(".", 1)[-1] for s in self.modules.values() for q in s["functions"]
                                       if "." in q)
        # Lookups the walks repeat thousands of times (a base class's methods, what an import names), each a pure
        # function of the summaries: answered once (the build is then linear in the project, not in its walks).
        self._memo: dict[tuple, object] = {}
        self._facts_by_module: dict[str, list] | None = None  # module -> its compiled functions, for facts_for
        self._roots: set[tuple[str, str, str]] = set()  # (module, qualname, entry path): direct targets
        # compile calls whose target the index cannot follow into the project's code: (path, line, label)
        self.unresolved: list[tuple[str, int, str]] = []
        # module classes the library default leaves out as data transforms: (path, class, the evidence)
        self.pipelines: list[tuple[str, str, str]] = []
        self._external: list[tuple[str, int, str]] = []  # compile calls of other libraries' code
        from ..parsing import gc_paused

        with gc_paused():  # the build makes many lasting objects and no cycles: each collection would rescan them all
            self._build()

    # Resolving names across modules.
    def _own_names(self) -> dict[str, str]:
        """{name the code imports its package by: the package's module name here} where the two differ: a
        package linted as the folder itself under another name (``mylib_copy/`` whose modules import
        ``mylib.nets``). Evidence: the package's absolute imports of that name all (and at least two) name
        modules or definitions the package has under its own."""
        tops = {m.split(".")[0] for m in self.modules}
        hits: dict[tuple[str, str], list[bool]] = {}
        for mod, s in self.modules.items():
            top = mod.split(".")[0]
            if "." not in mod and not s.get("package"):
                continue  # a script at the top: no package of its own
            for origin in s["imports"].values():
                head, _, rest = origin.partition(".")
                if head in tops or not rest:
                    continue
                if head in _STDLIB:
                    continue
                hits.setdefault((head, top), []).append(self._names_something(f"{top}.{rest}"))
        out = {}
        for (head, top), got in sorted(hits.items()):
            if len(got) >= 2 and all(got) and head not in out:
                out[head] = top
        return out

    def _names_something(self, dotted: str) -> bool:
        """Is ``dotted`` a module of the project, or a class, function or imported name of one?"""
        if dotted in self.modules:
            return True
        where = self._split(dotted, rename=False)
        if where is None:
            return False
        s = self.modules[where[0]]
        head = where[1].split(".")[0]
        return head in s["classes"] or head in s["functions"] or head in s["imports"]

    def _split(self, dotted: str, depth: int = 0, rename: bool = True) -> tuple[str, str] | None:
        """(module, name inside it) for an absolute dotted reference, following re-exports a few times."""
        if rename and self._renames:
            head, _, rest = dotted.partition(".")
            if head in self._renames and rest:
                dotted = f"{self._renames[head]}.{rest}"
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            mod = ".".join(parts[:i])
            if mod in self.modules:
                rest = ".".join(parts[i:])
                s = self.modules[mod]
                head = rest.split(".")[0]
                if head not in s["classes"] and head not in s["functions"] and head in s["imports"] and depth < 4:
                    tail = rest[len(head):]
                    return self._split(s["imports"][head] + tail, depth + 1, rename)
                return mod, rest
        return None

    def resolve(self, module: str, ref: str) -> tuple[str, str] | None:
        """(module, qualname) of a class or function that ``ref`` names from inside ``module``."""
        key = ("r", module, ref)
        try:
            return self._memo[key]
        except KeyError:
            got = self._memo[key] = self._resolve(module, ref)
            return got

    def _resolve(self, module: str, ref: str) -> tuple[str, str] | None:
        s = self.modules.get(module)
        if s is None:
            return None
        head, _, tail = ref.partition(".")
        if head in s["classes"] or head in s["functions"]:
            return module, ref
        if head in s["imports"]:
            origin = s["imports"][head] + ("." + tail if tail else "")
            key = ("split", origin)  # (every module that imports torch.nn asks of torch.nn.Linear)
            try:
                return self._memo[key]
            except KeyError:
                got = self._memo[key] = self._split(origin)
                return got
        return None

    def _method(self, module: str, cls: str, name: str, depth: int = 0) -> tuple[str, str] | None:
        """The class's own method ``name`` or the one it inherits (bases followed across modules)."""
        if name not in self._method_names:
            return None  # no class of the project has a method of that name (`self.dropout(x)`: a submodule)
        key = ("m", module, cls, name, depth)  # (depth cuts the walk off: part of the answer's key)
        try:
            return self._memo[key]
        except KeyError:
            got = self._memo[key] = self._method_at(module, cls, name, depth)
            return got

    def _method_at(self, module: str, cls: str, name: str, depth: int) -> tuple[str, str] | None:
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
        """attr -> the classes ``cls`` (with its bases) holds there. The answer is shared: read it, never change it."""
        key = ("h", module, cls, depth)
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = self._submodule_classes_at(module, cls, depth)
        return got

    def _submodule_classes_at(self, module: str, cls: str, depth: int) -> dict[str, list[tuple[str, str]]]:
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
    def rel(self, path: str) -> str:
        got = self._rel.get(path)
        if got is None:
            try:
                got = os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
            except ValueError:
                got = path
            self._rel[path] = got
        return got

    def _build(self) -> None:
        pending = []  # (module, qualname, Compiled, depth)
        deciding = []  # what compile calls outside the project's tests compile: they decide the library default
        wrappers = []  # functions that compile their own argument, with the Compiled of their jit call
        module_sites = set()  # (path, line) of `m.compile()` calls: each compiles some nn.Module
        for mod, s in self.modules.items():
            for target, compiler, symbolic, label, line, _decorator in s["entries"]:
                if self.target != "any":
                    compiler = self.target
                how = Compiled(compiler, symbolic, f"compiled by `{label}` at {self.rel(s['path'])}:{line}",
                                site=(s["path"], line))
                if target[0] == "wrapper":  # (attributes of what the callers pass: `model.layers`'s items)
                    wrappers.append((mod, target[1], target[2], target[3], how, tuple(target[4]) if len(target) > 4 else ()))
                    if len(target) > 5:
                        module_sites.add(how.site)
                    continue
                got = self.compiled_by(mod, *target)
                if not got:
                    if self._project_code(mod, target):
                        self.unresolved.append((self.rel(s["path"]), line, label))
                        if target[0] == "unresolved" and len(target) > 1:
                            module_sites.add(how.site)
                    else:
                        self._external.append((self.rel(s["path"]), line, label))
                for where, direct in got:
                    if direct:
                        self._roots.add((where[0], where[1], s["path"]))
                    pending.append((where, how, 0))
                    if not is_test_file(self.rel(s["path"])):
                        deciding.append(where)
        reached_by = set()
        for where, how, path in through_wrappers(self, wrappers):
            pending.append((where, how, 0))
            reached_by.add(how.site)
            if not is_test_file(self.rel(path)):
                deciding.append(where)
        unresolved_modules = [site for site in module_sites if site not in reached_by]  # (a wrapper no caller resolves)
        for _, _, _, _, how, _ in wrappers:
            if how.site not in reached_by:  # compiles what its callers pass, and no caller here passes a module
                label = how.how.split("`")[1] if "`" in how.how else how.how
                self.unresolved.append((self.rel(how.site[0]), how.site[1], label))
        self.found_compile_site = bool(deciding)
        # A library's tests compile toy models; only a compile of a module in its own code says how it is used.
        compiles_a_module = any(self._is_forward(where) for where in deciding)
        # A module compile of the project's own code that the index could not follow (torchtitan's per-block
        # `transformer_block.compile()` over blocks a config builds) may compile a module no resolved call compiles:
        # while one is left, the modules near it are still linted as the library default says (the summary
        # names both). Only near it (under its folder's parent): sglang's unresolved `module.compile()` calls in multimodal_gen made the
        # default cover its LLM server code too, 462 findings of which a random sample of 40 held 9 right (round 4).
        default_scopes = None
        if compiles_a_module:
            open_sites = [path for path, _ in unresolved_modules if not is_test_file(self.rel(path))]
            if open_sites:
                compiles_a_module = False
                default_scopes = {_scope_of(self.rel(path)) for path in open_sites}
                if "" in default_scopes:  # a script near the project's top compiles whatever it imports
                    default_scopes = None
                else:  # the outermost folders only (`a/` holds `a/b/`)
                    default_scopes = {d for d in default_scopes if not _within(d, default_scopes - {d})}
        if self.assume_compiled is not None:
            compiler = self.target if self.target != "any" else "unknown"
            how = Compiled(compiler, False, "compiled as `assume-compiled` says")
            matched = set()
            for mod, s in self.modules.items():
                for qual in s["functions"]:
                    hits = [p for p in self.assume_compiled if fnmatch.fnmatchcase(f"{mod}.{qual}", p)]
                    if hits:
                        matched.update(hits)
                        pending.append(((mod, qual), how, 0))
            # a pattern that names nothing is most likely a typo or a moved module: the summary says so
            self.unmatched_patterns = [p for p in self.assume_compiled if p not in matched]
        elif not compiles_a_module:
            # A library: nothing here compiles its modules (at most some functions), its users do. Lint every
            # module's forward (and what it reaches) as compiled, saying so.
            compiler = self.target if self.target != "any" else "unknown"
            composed = self._composed()
            owners = {(mod, qual.rsplit(".", 1)[0]) for mod, qual in self._parts_compilers()}
            compiling = self._compiling_methods()
            assumed = False  # some module's forward is linted as compiled
            for mod, s in self.modules.items():
                if default_scopes is not None and not _within(self.rel(s["path"]), default_scopes):
                    continue
                for cls in s["classes"]:
                    if f"{cls}.forward" in s["functions"] and is_module_class(self, mod, cls):
                        why = (data_pipeline(self, mod, cls, composed) or self._compiles_its_parts(mod, cls, owners)
                               or self._compiles_what_it_runs(mod, cls, compiling))
                        if why:
                            self.pipelines.append((self.rel(s["path"]), cls, why))
                            continue
                        pending.append(((mod, f"{cls}.forward"), Compiled(compiler, False, f"if `{cls}` is compiled", True), 0))
                        assumed = True
            if assumed:  # said only where it changes something: there is a module to lint as compiled
                self.library_default = self._why_default(bool(deciding))
                if default_scopes is not None:
                    self.library_default += ("; the modules under " + ", ".join(f"{d}/" for d in sorted(default_scopes))
                                             + " only (where a module compile is left unresolved)")
            if self.library_default and self.pipelines:
                n = len(self.pipelines)
                first = ", ".join(f"`{c}`" for _, c, _ in sorted(self.pipelines)[:3])
                self.library_default += (f"; {n} module{'s' if n > 1 else ''} ({first}{', ...' if n > 3 else ''}) taken"
                                         " for data transforms or training machinery and left out")
        # What each entry point reaches, each walked on its own; a function keeps the entry point that says most
        # about it: a compile call before the library default, then one in its own module (so that its file's
        # findings read the same linted alone or with the project), then the first in the text.
        best: dict[tuple[str, str], tuple] = {}
        compilers: dict[tuple[str, str], set] = {}
        machinery = self._training_modules() if self.library_default else frozenset()
        for rank, (root, how, _) in enumerate(pending):
            reached_how = None  # `how` for what the entry point reaches (made once per entry point)
            seen = {root}
            stack = [(root, 0)]
            while stack:
                where, depth = stack.pop()
                eager = self.eager(where)
                if eager == "recursive":
                    continue  # @torch.compiler.disable: run eagerly, and everything it calls
                key = (how.assumed, where[0] != root[0], rank)
                if eager:
                    pass  # disable(recursive=False): its own frame runs eagerly, what it calls is compiled
                elif where not in best or key < best[where][0]:
                    if depth and reached_how is None:
                        reached_how = replace(how, entry=False)
                    best[where] = (key, reached_how if depth else how)
                if not how.assumed and not eager:
                    compilers.setdefault(where, set()).add(how.compiler)
                if depth < REACH_DEPTH:
                    for nxt in self._reached_once(*where):
                        if how.assumed and nxt[0] != root[0] and "." not in nxt[1] and nxt[0] in machinery:
                            continue  # a helper of the training loop's module (gradcache's _create_minibatch)
                        if nxt not in seen:
                            seen.add(nxt)
                            stack.append((nxt, depth + 1))
        for where, (_, how) in best.items():
            if len(compilers.get(where, ())) > 1:  # compiled by two compilers: both behaviours apply
                how = replace(how, compiler="unknown")
            self.compiled[where] = how
        self.per_call = self._per_call_methods(best.keys() - {root for root, _, _ in pending})

    def _per_call_methods(self, reached) -> frozenset:
        """Compiled methods whose ``self`` lives for one compiled call: reached only through an object some
        compiled function builds and keeps to itself (``solver = MVNXPB(...); solver.solve()``), or through
        ``self`` from such methods. Their attributes change within a call, never between calls (a solver's
        step), so they are no module state. A method an entry point names, or one reached any other way (a held
        object, an argument, a submodule), may see an object that outlives the call."""
        candidates = {w for w in reached if "." in w[1]}
        if not candidates or not self._kinds:
            return frozenset()
        persistent = set()  # candidates some path reaches with an object that may outlive the call
        changed = True
        while changed:
            changed = False
            for g in self.compiled:
                own, same = self._kinds.get(g, (set(), set()))
                g_persistent = g not in candidates or g in persistent
                for m in self._reach_cache.get(g, ()):
                    if m not in candidates or m in persistent or m in own or (m in same and not g_persistent):
                        continue
                    persistent.add(m)
                    changed = True
        return frozenset(candidates - persistent)

    def _parts_compilers(self) -> list[tuple[str, str]]:
        """Methods that compile what their class holds (speechbrain's ``Pretrained._compile``:
        ``torch.compile(self.mods[name])``): (module, qualname), from the compile calls on ``self.<attr>``."""
        out = []
        for mod, s in self.modules.items():
            for target, *_rest, line, _decorator in s["entries"]:
                if target[0] != "chain" or target[1] != "class":
                    continue
                for qual, rec in s["functions"].items():
                    if qual.startswith(f"{target[2]}.") and qual.count(".") == 1 and rec[0] <= line <= rec[1]:
                        out.append((mod, qual))
        return sorted(set(out))

    def _compiles_its_parts(self, module: str, cls: str, owners: set) -> str:
        """A module class that compiles the modules it holds (itself or through a base's method) runs compiled
        parts: its own forward is not what its users compile (an inference interface, a runner). ``owners``: the
        classes of the methods that compile what their class holds (_parts_compilers)."""
        if owners and self._inherits(module, cls, owners):
            return "compiles the modules it holds"
        return ""

    def _compiling_methods(self) -> frozenset:
        """Methods with a compile call in their own body, whatever it compiles: (module, qualname). A compile
        decorator is not one (``@torch.compile`` on a method compiles that method, which its caller then calls)."""
        out = set()
        for mod, s in self.modules.items():
            lines = [e[-2] for e in s["entries"] if not e[-1]]
            if not lines:
                continue
            for qual, rec in s["functions"].items():
                if "." in qual and any(rec[0] <= line <= rec[1] for line in lines):
                    out.add((mod, qual))
        return frozenset(out)

    def _compiles_what_it_runs(self, module: str, cls: str, compiling: frozenset) -> str:
        """A module class whose forward, or a method it calls on ``self`` (a few calls deep), calls torch.compile
        (nequip's CompileGraphModel: forward compiles an fx graph of its model on first use, then runs it) is
        the runner of compiled code: torch.compile is not called from compiled code, so that forward runs
        eagerly and is not what its users compile."""
        if not compiling:
            return ""
        seen, stack = set(), [(module, f"{cls}.forward", 0)]
        while stack:
            mod, qual, depth = stack.pop()
            if (mod, qual) in seen:
                continue
            seen.add((mod, qual))
            if (mod, qual) in compiling:
                return "compiles what its forward runs"
            rec = self.modules[mod]["functions"].get(qual)
            if rec is None or depth >= 3:
                continue
            for c in rec[2]:
                if c.startswith("s:") and "." not in c:
                    where = self._method(module, cls, c[2:])
                    if where is not None:
                        stack.append((where[0], where[1], depth + 1))
        return ""

    def _inherits(self, module: str, cls: str, owners: set, depth: int = 0) -> bool:
        """Is the class, or one of its bases (followed across modules), among ``owners``?"""
        if (module, cls) in owners:
            return True
        info = self.modules.get(module, {}).get("classes", {}).get(cls.rsplit(".", 1)[-1])
        if info is None or depth > 8:
            return False
        for base in info[0]:
            where = self.resolve(module, base)
            if where and where[1].rsplit(".", 1)[-1] in self.modules[where[0]]["classes"] and self._inherits(
                    where[0], where[1], owners, depth + 1):
                return True
        return False

    def _training_modules(self) -> frozenset:
        """Modules of the training loop: some function in them runs backward. The library
        default does not follow a model's forward into their module-level functions from another module: those
        slice and gather batches for the loop (sentence-transformers' gradcache.py), they are not the model's
        helpers. A model's own module, and its classes' methods, are followed as before."""
        return frozenset(mod for mod, s in self.modules.items()
                         if any(_runs_the_loop(qual, rec) for qual, rec in s["functions"].items())
                         and not is_test_file(self.rel(s["path"])))

    def _composed(self) -> set[tuple[str, str]]:
        """Classes the project puts in a transform pipeline (``Compose([RandomFlip(), ...])``)."""
        out = set()
        for mod, s in self.modules.items():
            for ref in s.get("composed", ()):
                where = self.resolve(mod, ref)
                if where is not None:
                    out.add(where)
        return out

    def _why_default(self, compiles_something: bool) -> str:
        """Why the library default applies, naming the compile calls the index could not follow (the first
        three by place): "no compile call found" only where there is none."""
        if not self.unresolved:
            if compiles_something:
                return "no nn.Module compile call found"
            if self._external:  # torch.compile(AutoModel.from_pretrained(...)): another library's code
                n = len(self._external)
                p, line, label = sorted(self._external)[0]
                return f"{n} compile call{'s' if n > 1 else ''} found, of other libraries' code only ({p}:{line} `{label}`)"
            return "no compile call found"
        places = ", ".join(f"{p}:{line} `{label}`" for p, line, label in sorted(self.unresolved)[:3])
        more = f" and {len(self.unresolved) - 3} more" if len(self.unresolved) > 3 else ""
        n = len(self.unresolved)
        return f"{n} compile call{'s' if n > 1 else ''} not resolved to the project's code ({places}{more})"

    def _project_code(self, module: str, target) -> bool:
        """May this unresolved target be the project's own code? Not a function of another library
        (``torch.compile(F.scaled_dot_product_attention)``, ``torch.compile(torch.add)``)."""
        if target[0] not in ("ref", "instance"):
            return True
        imports = self.modules[module]["imports"]
        head = target[1].split(".")[0]
        if head not in imports:
            return True
        top = imports[head].split(".")[0]
        return any(m.split(".")[0] == top for m in self.modules)

    def _reached_once(self, module: str, qual: str) -> list[tuple[str, str]]:
        key = (module, qual)
        got = self._reach_cache.get(key)
        if got is None:
            got = self._reach_cache[key] = self._reached(module, qual)
        return got

    def _is_forward(self, where) -> bool:
        mod, qual = where
        return qual.endswith(".forward") and is_module_class(self, mod, qual.rsplit(".", 1)[0])

    def _chain_targets(self, module: str, root_kind: str, root: str, attrs: list[str]) -> list[tuple[str, str]]:
        """What ``root.a.b`` names: the classes the root is (a class, or what a factory returns), then what
        each holds in the attribute (containers' items included); a last attribute that is a method of the
        class (``model.train_step``, ``self.fn``) names that method. A module class stands for its forward."""
        where = self.resolve(module, root)
        if where is None:
            return []
        if self._class_info(*where) is not None and where[1].rsplit(".", 1)[-1] in self.modules[where[0]]["classes"]:
            classes = [where]
        elif root_kind == "instance" and where[1] in self.modules[where[0]]["functions"]:
            classes = [c for c in returned_classes(self, *where) if self._class_info(*c) is not None]
        else:
            return []
        out = []
        for k, attr in enumerate(attrs):
            nxt = []
            for cls in classes:
                held = self._submodule_classes(cls[0], cls[1]).get(attr)
                if held:
                    nxt.extend(held)
                elif k == len(attrs) - 1:
                    found = self._method(cls[0], cls[1], attr)
                    if found:
                        out.append(found)
                    else:  # `torch.compile(self.fn)`: the functions the class, its bases or subclasses store there
                        out.extend(self._stored_functions(cls, attr))
            classes = sorted(set(nxt))
        for cls in classes:
            fwd = self._method(cls[0], cls[1], "forward")
            if fwd:
                out.append(fwd)
        return sorted(set(out))

    def _stored_functions(self, cls: tuple[str, str], attr: str) -> list[tuple[str, str]]:
        """The project functions that methods of ``cls``, of its bases or of its subclasses store in ``self.<attr>``
        (``self.fn: LossFunction = cross_entropy_loss`` in each loss's ``__init__``): ``self`` there may be any of them."""
        out = []
        for mod, name in self._family(cls):
            info = self._class_info(mod, name)
            stored = info[2] if info is not None and len(info) > 2 else {}
            for ref in stored.get(attr, ()):
                where = self.resolve(mod, ref)
                if where is not None and where[1] in self.modules[where[0]]["functions"]:
                    out.append(where)
        return out

    def _family(self, cls: tuple[str, str]) -> list[tuple[str, str]]:
        """``cls``, its project bases and its project subclasses (at any depth)."""
        if self._subclasses is None:
            self._subclasses = {}
            for mod, s in self.modules.items():
                for name, info in s["classes"].items():
                    for base in info[0]:
                        where = self.resolve(mod, base)
                        if where is not None and self._class_info(*where) is not None:
                            self._subclasses.setdefault(where, []).append((mod, name))
        out, stack = [], [cls]
        while stack:  # down: the subclasses
            c = stack.pop()
            if c not in out:
                out.append(c)
                stack.extend(self._subclasses.get(c, ()))
        stack = [cls]
        while stack:  # up: the bases
            c = stack.pop()
            info = self._class_info(*c)
            for base in info[0] if info is not None else ():
                where = self.resolve(c[0], base)
                if where is not None and self._class_info(*where) is not None and where not in out:
                    out.append(where)
                    stack.append(where)
        return out

    def compiled_by(self, module: str, kind: str, ref: str = "", *chain) -> list[tuple[tuple[str, str], bool]]:
        """What a jit call in ``module`` compiles: [((module, qualname), is the call's direct target)].
        A class compiles its ``forward``; an "instance" of a function is what that factory returns; a "chain"
        (``ref`` is the root's kind, ``chain`` its root and attributes) is followed through held classes."""
        if kind == "chain":
            return [(w, False) for w in self._chain_targets(module, ref, *chain)]
        if kind == "unresolved":
            return []
        position = None
        if kind == "instance" and "@" in ref:  # `step, state = make()`: the nested function at that place
            ref, _, at = ref.partition("@")
            position = int(at)
        where = self.resolve(module, ref)
        if where is None:
            return []
        if self._class_info(*where) is not None and where[1].rsplit(".", 1)[-1] in self.modules[where[0]]["classes"]:
            fwd = self._method(where[0], where[1], "forward")
            return [(fwd, True)] if fwd else []
        if where[1] not in self.modules[where[0]]["functions"]:
            if kind == "ref" and self._record(*where) is not None and "." in where[1]:
                owner = where[1].rsplit(".", 1)[0]
                if owner in self.modules[where[0]]["functions"]:
                    return [(where, True)]  # a function nested in the one that compiles it (its file sees it)
            return []
        if kind == "instance":  # `torch.compile(GPT.from_name(...))`, `model = build(cfg)`: what it builds
            out = []
            for made in returned_classes(self, *where, position=position):
                if made[1].startswith(where[1] + "."):  # a nested function the factory returns
                    out.append((made, False))
                    continue
                fwd = self._method(made[0], made[1], "forward")
                if fwd:
                    out.append((fwd, False))
            return out
        return [(where, True)]

    def lines_of(self, path: str) -> list[str]:
        """The lines of a linted file, read once when the index first needs them."""
        self._asked.add(path)
        lines = self._lines.get(path)
        if lines is None:
            try:
                from ..file_reader import decode

                with open(path, "rb") as f:
                    lines = _ast_line_ends(decode(f.read())).split("\n")
            except Exception:  # gone or unreadable since it was linted: nothing reached through it
                lines = []
            self._lines[path] = lines
        return lines

    def texts_read(self) -> list[str]:
        """The files whose text (beyond their summary) the index has read: what it says depends on their content."""
        return sorted(self._asked)

    def read_text_of(self, path: str) -> bool:
        return path in self._asked

    def tree_of(self, path: str) -> ast.Module | None:
        """A linted file's syntax tree, parsed again only when asked (the callers of a wrapper: few files)."""
        if path not in self._trees:
            try:
                self._trees[path] = ast.parse("\n".join(self.lines_of(path)))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._trees[path] = None
        return self._trees[path]

    def _eager_attrs(self, module: str, cls: str) -> frozenset:
        """Attributes a class's methods bind to ``torch.compiler.disable(...)`` (``self.fn = disable(self.fn)``)."""
        key = (module, cls)
        got = self._eager_attr_cache.get(key)
        if got is None:
            binds = self._eager_attr_cache.get(module)
            if binds is None:  # the module's functions that bind one, found once (few do: most modules have none)
                binds = self._eager_attr_cache[module] = [
                    (qual, [c[2:] for c in rec[2] if c.startswith("x:")]) for qual, rec in
                    self.modules[module]["functions"].items() if "x:" in "\n".join(rec[2])]
            prefix = cls + "."
            got = frozenset(a for qual, attrs in binds if qual.startswith(prefix) for a in attrs)
            self._eager_attr_cache[key] = got
        return got

    def _record(self, module: str, qual: str) -> list | None:
        """A function's summary record; a nested function (``make_op.inner``, returned by a factory) has its
        enclosing function's: its calls are among those."""
        functions = self.modules[module]["functions"]
        while qual not in functions and "." in qual:
            qual = qual.rsplit(".", 1)[0]
        return functions.get(qual)

    def eager(self, where) -> str:
        """"recursive" / "frame" for a function under ``@torch.compiler.disable`` (see calls.py), else ""."""
        rec = self.modules[where[0]]["functions"].get(where[1])
        if rec is None or len(rec) < 7:
            return ""
        if rec[5] or not rec[6]:
            return rec[5]
        for dec in rec[6]:  # an alias another module binds: `no_compile = torch._dynamo.disable` in utils.py
            origin = self.resolve(where[0], dec)
            if origin is not None:
                kind = self.modules[origin[0]].get("disablers", {}).get(origin[1])
                if kind:
                    return kind
        return ""

    def _reached(self, module: str, qual: str) -> list[tuple[str, str]]:
        """What a function calls, from the facts its summary took from the syntax tree (calls.py)."""
        rec = self._record(module, qual)
        if rec is None:
            return []
        calls, self_attrs = rec[2], rec[3]
        out = []
        own, same = [], []  # reached through an object this function builds (n:), through self (s:name, p:)
        cls = qual.rsplit(".", 1)[0] if "." in qual else None
        subs = self._submodule_classes(module, cls) if cls else {}
        eager_attrs = self._eager_attrs(module, cls) if cls else ()
        methods = self._method_names  # (a method of a name no class has is none: asked of no class)
        for call in calls:
            kind, _, ref = call.partition(":")
            if kind == "s":  # self.name(...) / self.attr.meth(...)
                if cls is None:
                    continue
                attr, _, meth = ref.partition(".")
                if attr in eager_attrs or (meth or attr) not in methods:
                    continue
                if meth:
                    for sub in subs.get(attr, ()):
                        found = self._method(sub[0], sub[1], meth)
                        if found:
                            out.append(found)
                    continue
                found = self._method(module, cls, attr)
                if found:
                    out.append(found)
                    same.append(found)
            elif kind == "p":  # super().meth(...): the first base that has it
                info = self._class_info(module, cls) if cls and ref in methods else None
                for base in info[0] if info else ():
                    where = self.resolve(module, base)
                    found = where and self._class_info(*where) is not None and self._method(where[0], where[1], ref)
                    if found:
                        out.append(found)
                        same.append(found)
                        break
            elif kind == "t" or kind == "n":  # a method of a value of a stated class (annotation, isinstance,
                cref, _, meth = ref.rpartition(":")  # `v = C(...)`); n: one the function builds for itself
                if meth not in methods:
                    continue  # (`t:torch.Tensor:view`: most are of other libraries' classes)
                where = self.resolve(module, cref)
                if where and self._class_info(*where) is not None:
                    found = self._method(where[0], where[1], meth)
                    if found:
                        out.append(found)
                        if kind == "n":
                            own.append(found)
            elif kind == "f":
                where = self.resolve(module, ref)
                if where is None:
                    continue
                if where[1] in self.modules[where[0]]["functions"]:
                    out.append(where)
                elif "." in where[1]:  # Cls.method(...) where Cls inherits it
                    owner, _, meth = where[1].rpartition(".")
                    if self._class_info(where[0], owner) is not None:
                        found = self._method(where[0], owner, meth)
                        if found:
                            out.append(found)
        for attr in [*self_attrs, "*"]:  # "*": added under a computed name (`add_module(f"l{i}", ...)`)
            for sub in subs.get(attr, ()):
                found = self._method(sub[0], sub[1], "forward")
                if found:
                    out.append(found)
        if own or same:
            other = {w for w in out if out.count(w) > own.count(w) + same.count(w)}  # also reached another way
            self._kinds[(module, qual)] = (set(own) - other, set(same) - other)
        return sorted(set(out))

    # What linting one file needs.
    def module_key(self, module: str, path: str) -> str:
        """The key of the file at ``path`` in ``modules`` and ``compiled``: its module name, or ``name@path`` for
        the second of two files of one name."""
        return self._module_of_path.get(path, module)

    def facts_for(self, module: str, path: str) -> tuple:
        """Compiled functions of ``module`` that its own text does not compile directly, as sorted plain
        tuples ``(qualname, compiler, symbolic, how, assumed, entry)``; part of the file's cache key."""
        module = self.module_key(module, path)
        if self._facts_by_module is None:  # grouped once: every file's call then costs its own module only
            self._facts_by_module = {}
            for (mod, qual), c in self.compiled.items():
                self._facts_by_module.setdefault(mod, []).append((qual, c))
        out = []
        for qual, c in self._facts_by_module.get(module, ()):
            if (module, qual, path) in self._roots:
                continue  # the file's own entry point: the per-file analysis sees it already
            # (a reached function's scalar arguments come from its callers, not from the compiled call's inputs:
            # only the sizes it reads itself are symbolic there)
            fact = (qual, c.compiler, c.symbolic if c.entry or not c.symbolic else "sizes", c.how, c.assumed, c.entry)
            # a method whose `self` the compiled call builds for itself: said only where true (a 7th item)
            out.append(fact + (True,) if (module, qual) in self.per_call else fact)
        s = self.modules.get(module)
        for qual, rec in (s["functions"].items() if s else ()):
            if len(rec) > 6 and rec[6] and not rec[5] and self.eager((module, qual)):
                out.append((qual, EAGER, False, "", False, False))
        for name, where in self.settings.items():
            out.append(("", SETTING, name, where, False, False))
        return tuple(sorted(out))

    @property
    def settings(self) -> dict[str, str]:
        """torch._dynamo settings some module of the project turns on (process-wide): name -> "path:line" of the
        first module, by name, that does."""
        got = self.__dict__.get("_settings")
        if got is None:
            from rules.dynamo_settings import CAPTURE_SCALAR_OUTPUTS

            got = self.__dict__["_settings"] = {}
            for mod, s in sorted(self.modules.items()):
                if CAPTURE_SCALAR_OUTPUTS in s:
                    got[CAPTURE_SCALAR_OUTPUTS] = f"{self.rel(s['path'])}:{s[CAPTURE_SCALAR_OUTPUTS]}"
                    break
        return got


@dataclass
class ProjectFile:
    """What linting one file exchanges with the project index: the facts in, the file's summary out.

    ``facts`` None: nothing is known from other files yet (first pass); a one-file index still applies
    this file's own ``assume-compiled`` matches and reachability.
    """

    path: str
    module: str
    facts: tuple | None = None
    assume_compiled: tuple | None = None  # None: not configured (the library default may apply)
    target: str = "any"
    want_summary: bool = True
    summary: dict | None = None
    used: tuple | None = None  # the facts the file was linted with
    library_default: str = ""  # why the one-file index applied the library default (first pass only)
    root: str | None = None  # the project's root, for the places messages name (default: the file's folder)
    # linted again with the index's facts, and the first pass already compiled this very text (same content
    # hash): its compile-time errors were checked there
    compile_checked: bool = False
    # A live index (the language server's): takes the fresh summary, returns the facts to lint with (or
    # None), so that a file is linted once, with facts that already know its new text.
    facts_from: Callable[[dict], tuple | None] | None = None

    def summarize(self, ctx) -> None:
        """Take the file's summary from its parse (the engine calls this, then ``apply_facts`` before the rules)."""
        if self.want_summary or self.facts is None or self.facts_from is not None:
            self.summary = summarize(ctx.source.text, ctx.tree, ctx.index, self.path, self.module, ctx.jit_decorators)

    def apply_facts(self, ctx) -> None:
        """Give the file's context the facts to lint with: ``facts``, the live index's, or a one-file index's."""
        facts = self.facts
        if self.facts_from is not None:
            facts = self.facts_from(self.summary)
        if facts is None:
            root = os.path.dirname(self.path) if self.root is None else self.root
            one = ProjectIndex([self.summary], root=root, assume_compiled=self.assume_compiled,
                               target=self.target, texts={self.path: ctx.source.text})
            facts = one.facts_for(self.module, self.path)
            self.library_default = one.library_default
        self.used = normalize_facts(facts)
        # functions another module's decorator runs eagerly (`from .utils import no_compile`): the jit rules do
        # not follow a call into them (rules/_jit_scopes.py reads `eager_elsewhere`)
        ctx.compiled_elsewhere = tuple(f for f in self.used if f[1] != EAGER and f[1] != SETTING)
        ctx.eager_elsewhere = frozenset(f[0] for f in self.used if f[1] == EAGER)
        ctx.settings = {f[2]: f[3] for f in self.used if f[1] == SETTING}
        ctx.target = self.target


def _patterns(value) -> tuple | None:
    return None if value is None else tuple(value)


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
        _patterns(getattr(settings, "assume_compiled", None)),
        getattr(settings, "target", "any"),
        want_summary=facts is None,
        root=getattr(settings, "root", None),
    )


def module_names_of_labels(labels: list[str]) -> list[str]:
    """Module names for files known only by their labels (paths never opened): a folder is a package when an
    ``__init__.py`` among the labels is in it."""
    packages = {os.path.dirname(os.path.abspath(p)) for p in labels if os.path.basename(p) == "__init__.py"}
    return [module_name(p, "", packages.__contains__) for p in labels]


def index_facts(summaries: list[dict], texts: dict[str, str], assume_compiled, target: str) -> tuple[dict, str]:
    """What the joined index says about each file (path -> facts), and why the library default applied (or
    ""): the CLI's second pass, for files whose text is at hand."""
    index = ProjectIndex(summaries, "", assume_compiled, target, texts=texts)
    return {s["path"]: index.facts_for(s["module"], s["path"]) for s in summaries}, index.library_default
