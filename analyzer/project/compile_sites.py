"""Compile sites that real code puts between the compile call and the code it compiles.

- factories: ``torch.compile(GPT.from_name("x"))``, ``model = build_model(cfg)``: the classes a function or
  classmethod returns (``return cls(...)``, ``return Net(...)``, ``m = Net(...); return m``);
- wrappers: ``def setup(model): return torch.compile(model)`` compiles whatever its callers pass, so each call
  ``setup(GPT(cfg))`` (or of a name bound to an instance) is a compile site, also through wrappers of wrappers;
- the library default's test: which classes are ``nn.Module`` subclasses.

Each works on the project index (duck-typed: ``modules``, ``resolve``, ``function_text``, ``lines_of``) from
the text of the few functions it needs, read when asked.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import replace

_RETURN_CALL = re.compile(r"\breturn\s+([A-Za-z_][\w.]*)\s*\(")
_RETURN_NAME = re.compile(r"\breturn\s+([A-Za-z_]\w*)\s*$", re.M)
_NOT_MODULE_ROOTS = frozenset({"abc", "typing", "typing_extensions", "enum", "dataclasses", "collections",
                               "object", "Exception", "ABC", "Protocol", "NamedTuple", "Generic"})
_WRAPPER_DEPTH = 3  # a wrapper of a wrapper of a wrapper


def _absolute(index, module: str, ref: str) -> str:
    """``ref`` as an absolute dotted name (imports applied), whether or not it is in the project."""
    imports = index.modules[module]["imports"]
    head, _, tail = ref.partition(".")
    if head in imports:
        return imports[head] + ("." + tail if tail else "")
    return ref


def is_module_class(index, module: str, cls: str, depth: int = 0) -> bool:
    """Does ``cls`` derive from ``torch.nn.Module``? Bases in the project are followed; a base from torch
    answers by being under ``torch.nn``; one from another library (``timm.layers.Mlp``) counts as a module
    (the caller asks only about classes that define ``forward``), one from the standard library does not."""
    info = index.modules.get(module, {}).get("classes", {}).get(cls.rsplit(".", 1)[-1])
    if info is None or depth > 8:
        return False
    for base in info[0]:
        where = index.resolve(module, base)
        if where is not None and where[1].rsplit(".", 1)[-1] in index.modules[where[0]]["classes"]:
            if is_module_class(index, where[0], where[1], depth + 1):
                return True
            continue
        origin = _absolute(index, module, base)
        if origin.startswith("torch."):
            if origin.startswith("torch.nn.") and not origin.startswith("torch.nn.functional"):
                return True
            continue  # torch.autograd.Function has a forward too, and is no module
        if origin.split(".")[0] not in _NOT_MODULE_ROOTS and where is None:
            return True
    return False


def returned_classes(index, module: str, qual: str, depth: int = 0) -> list[tuple[str, str]]:
    """(module, class) of what a factory function or classmethod returns, from its text."""
    if depth > 3:
        return []
    text = index.function_text(module, qual)
    refs = list(_RETURN_CALL.findall(text))
    for name in _RETURN_NAME.findall(text):
        refs += re.findall(r"\b%s\s*=\s*([A-Za-z_][\w.]*)\s*\(" % re.escape(name), text)
    out = []
    owner = qual.rsplit(".", 1)[0] if "." in qual else None
    for ref in refs:
        if ref in ("cls", "self.__class__", "type(self)") and owner:
            ref = owner
        where = index.resolve(module, ref)
        if where is None:
            continue
        s = index.modules[where[0]]
        if where[1].rsplit(".", 1)[-1] in s["classes"]:
            out.append(where)
        elif where[1] in s["functions"] and where != (module, qual):
            out.extend(returned_classes(index, where[0], where[1], depth + 1))
    return out


# --- wrappers --------------------------------------------------------------------------------------
def _arguments(text: str, open_paren: int) -> list[str] | None:
    """The top-level argument texts of the call whose ``(`` is at ``open_paren``; None if it never closes."""
    depth, start, out, quote = 0, open_paren + 1, [], None
    i = open_paren
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                out.append(text[start:i])
                return [a.strip() for a in out if a.strip()]
        elif c == "," and depth == 1:
            out.append(text[start:i])
            start = i + 1
        i += 1
    return None


def _argument(args: list[str], position: int, name: str) -> str | None:
    for a in args:
        if re.match(r"%s\s*=[^=]" % re.escape(name), a):
            return a.split("=", 1)[1].strip()
    positional = [a for a in args if not re.match(r"[A-Za-z_]\w*\s*=[^=]", a) and not a.startswith("*")]
    return positional[position] if 0 <= position < len(positional) else None


def _params(index, module: str, qual: str) -> list[str]:
    """Parameter names of a function (self/cls left out), from its text."""
    try:
        tree = ast.parse(textwrap.dedent(index.function_text(module, qual)))
    except SyntaxError:
        return []
    fn = tree.body[0] if tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if fn is None:
        return []
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if "." in qual and names and names[0] in ("self", "cls"):
        names = names[1:]
    return names


def _enclosing(index, module: str, line: int) -> str | None:
    best, best_start = None, -1
    for qual, span in index.modules[module]["functions"].items():
        if span[0] < line <= span[1] and span[0] > best_start:
            best, best_start = qual, span[0]
    return best


def _callers(index, wmod: str, wqual: str):
    """(module, the text a call of the wrapper starts with) for every module that can call it."""
    name = wqual.rsplit(".", 1)[-1]
    method = "." in wqual
    for mod, s in index.modules.items():
        if method:
            owner = wqual.rsplit(".", 1)[0]
            if mod == wmod or any(index.resolve(mod, local) == (wmod, owner) for local in s["imports"]):
                yield mod, re.compile(r"\.\s*%s\s*\(" % re.escape(name))
            continue
        aliases = [name] if mod == wmod else [local for local in s["imports"] if index.resolve(mod, local) == (wmod, wqual)]
        modules = [local for local, origin in s["imports"].items() if origin == wmod]
        patterns = [re.escape(a) for a in aliases] + [r"%s\s*\.\s*%s" % (re.escape(m), re.escape(name)) for m in modules]
        if patterns:
            yield mod, re.compile(r"(?<![\w.])(?:%s)\s*\(" % "|".join(patterns))


def through_wrappers(index, wrappers):
    """((module, qualname), Compiled, the caller's path) for what each wrapper's callers pass it: ``setup(GPT(cfg))`` compiles
    GPT.forward; a caller that passes its own parameter on is a wrapper too."""
    found = []
    seen = set()
    frontier = list(wrappers)
    for _ in range(_WRAPPER_DEPTH):
        nxt = []
        for wmod, wqual, position, param, how in frontier:
            if (wmod, wqual, position) in seen:
                continue
            seen.add((wmod, wqual, position))
            for mod, pattern in _callers(index, wmod, wqual):
                s = index.modules[mod]
                lines = index.lines_of(s["path"])
                text = "\n".join(lines)
                for m in pattern.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    if (mod, wqual) == (wmod, wqual) and _enclosing(index, mod, line) == wqual:
                        continue  # its own body
                    if lines[line - 1].lstrip().startswith(("def ", "async def ")):
                        continue
                    args = _arguments(text, m.end() - 1)
                    arg = _argument(args, position, param) if args else None
                    if not arg:
                        continue
                    label = " ".join(text[m.start():m.end()].split()).lstrip(".") + (arg if len(arg) < 40 else "...") + ")"
                    inner = how.how.split(" at ")[0].replace("compiled by ", "")
                    where_how = replace(how, how=f"compiled by `{label}` at {index.rel(s['path'])}:{line} (through {inner})")
                    for target in _argument_targets(index, mod, arg, line):
                        if target[0] == "wrapper":
                            nxt.append((mod, target[1], target[2], target[3], how))
                        else:
                            found.extend((where, where_how, s["path"]) for where, _ in index.compiled_by(mod, *target))
        frontier = nxt
    return found


def _argument_targets(index, module: str, arg: str, line: int) -> list[tuple]:
    """What one argument text passes: ("instance", ref) for ``Net(...)``/a name bound to one, ("ref", f) for a
    function, ("wrapper", ...) for a parameter of the calling function."""
    try:
        expr = ast.parse(arg, mode="eval").body
    except SyntaxError:
        return []
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in (
            "to", "cuda", "cpu", "eval", "train", "half", "float", "bfloat16", "requires_grad_", "to_empty"):
        expr = expr.func.value
    if isinstance(expr, ast.Call):
        func = expr.func
        parts = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if isinstance(func, ast.Name):
            return [("instance", ".".join([func.id, *reversed(parts)]))]
        return []
    if isinstance(expr, ast.Attribute) and expr.attr == "forward":
        return _argument_targets(index, module, ast.unparse(expr.value), line)
    if isinstance(expr, ast.Name):
        around = _enclosing(index, module, line)
        if around is not None:
            params = _params(index, module, around)
            if expr.id in params:
                return [("wrapper", around, params.index(expr.id), expr.id)]
        callees = index.modules[module].get("instances", {}).get(expr.id)
        if callees:
            return [("instance", c) for c in callees]
        return [("ref", expr.id)]
    return []
