"""A closure's captured value that is an nn.Module. torch.compile takes a module it reaches through a closure cell as
it takes one passed in: its parameters and buffers are graph inputs, read at each call, so new weights or another
instance of the same class give right results with no recompile (round 4, class [18]; checked on CPU in
tests/rules/test_rule_tl202_torch_compile.py). Evidence is local: the name is bound, in the function that owns it,
to a ``torch.nn`` layer or a class of this file that derives from ``torch.nn.Module``; or it is ``self`` and the
closure only calls attributes of it that the class sets to such modules (``self.encoder(x)``)."""

from __future__ import annotations

import ast

_MAX_DEPTH = 6
# nn.Module methods that return the module itself
_RETURNS_SELF = frozenset({"eval", "train", "to", "cuda", "cpu", "float", "half", "double", "bfloat16",
                           "requires_grad_", "to_empty"})


def captures_a_module(ctx, owner, jit_node, name: str) -> bool:
    """Is ``name``, a variable of function ``owner`` read by the closure ``jit_node``, known to hold an nn.Module?"""
    if name == "self":
        cls = _class_of(ctx, owner)
        if cls is None:
            return False
        attrs = _called_self_attributes(jit_node)
        return attrs is not None and bool(attrs) and all(_module_attribute(ctx, cls, a) for a in attrs)
    values = [n.value for n in ast.walk(owner) if isinstance(n, ast.Assign) and n.value is not None
              and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
    return bool(values) and all(_makes_module(ctx, v) for v in values)


def _class_of(ctx, func):
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.ClassDef) and any(s is func for s in node.body):
            return node
    return None


def _called_self_attributes(jit_node) -> set | None:
    """The attributes of ``self`` the closure calls (``self.encoder(x)``); None if it uses ``self`` otherwise."""
    called, calls = set(), set()
    for node in ast.walk(jit_node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
            called.add(node.func.attr)
            calls.add(id(node.func.value))
    for node in ast.walk(jit_node):
        if isinstance(node, ast.Name) and node.id == "self" and id(node) not in calls:
            return None
    return called


def _module_attribute(ctx, cls: ast.ClassDef, attr: str) -> bool:
    """Is every ``self.<attr> = ...`` of the class a module it builds?"""
    values = [n.value for n in ast.walk(cls) if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Attribute) and t.attr == attr
              and isinstance(t.value, ast.Name) and t.value.id == "self"]
    return bool(values) and all(_makes_module(ctx, v) for v in values)


def _makes_module(ctx, value, depth: int = 0) -> bool:
    """A call of a ``torch.nn`` layer class, or of a class of this file that derives from one."""
    if not isinstance(value, ast.Call) or depth > _MAX_DEPTH:
        return False
    f = value.func
    if isinstance(f, ast.Attribute) and f.attr in _RETURNS_SELF:
        return _makes_module(ctx, f.value, depth + 1)  # `nn.Linear(2, 2).eval()`
    name = ctx.resolve(f) or ""
    if _torch_module_class(name):
        return True
    if isinstance(value.func, ast.Name):
        return _module_class_here(ctx, value.func.id, depth)
    return False


def _torch_module_class(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return name.startswith("torch.nn.") and not name.startswith("torch.nn.functional") and last[:1].isupper() \
        and last not in ("Parameter", "Buffer")


def _module_class_here(ctx, cls_name: str, depth: int) -> bool:
    for node in ctx.tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            for base in node.bases:
                if _torch_module_class(ctx.resolve(base) or ""):
                    return True
                if isinstance(base, ast.Name) and base.id != cls_name and _module_class_here(ctx, base.id, depth + 1):
                    return True
    return False
