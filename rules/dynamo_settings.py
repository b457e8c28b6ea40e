"""torch._dynamo settings a project turns on, which change what torch.compile does with a pattern.

``torch._dynamo.config.capture_scalar_outputs = True`` (torchtitan sets it before compiling its blocks) makes
``.item()``/``.tolist()``/``int(t)`` a symbolic value in the graph instead of a graph break; a branch on that value
still breaks the graph (tests/rules/test_rule_tl302_scalar_outputs.py). The setting is process-wide: one file of
the project that sets it is enough (the project index passes it to every file; a file linted alone sees its own).
"""

from __future__ import annotations

import ast

CAPTURE_SCALAR_OUTPUTS = "capture_scalar_outputs"
_CONFIG = "torch._dynamo.config"


def _is_true(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _sets_in_call(call: ast.Call, resolve) -> bool:
    """``torch._dynamo.config.patch(capture_scalar_outputs=True)`` (a decorator or a with), ``.patch("...", True)``,
    ``.update({"capture_scalar_outputs": True})``."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("patch", "update"):
        return False
    if resolve(func.value) != _CONFIG:
        return False
    if any(k.arg == CAPTURE_SCALAR_OUTPUTS and _is_true(k.value) for k in call.keywords):
        return True
    args = call.args
    if len(args) == 2 and isinstance(args[0], ast.Constant) and args[0].value == CAPTURE_SCALAR_OUTPUTS:
        return _is_true(args[1])
    if args and isinstance(args[0], ast.Dict):
        return any(isinstance(k, ast.Constant) and k.value == CAPTURE_SCALAR_OUTPUTS and _is_true(v)
                   for k, v in zip(args[0].keys, args[0].values))
    return False


def capture_scalar_outputs_line(text: str, tree: ast.Module, resolve) -> int | None:
    """The first line where the file turns ``capture_scalar_outputs`` on, else None (``resolve`` maps a Name or
    Attribute chain to its dotted name with the file's import aliases)."""
    if CAPTURE_SCALAR_OUTPUTS not in text:
        return None  # (almost every file: no walk)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_true(node.value):
            if any(resolve(t) == f"{_CONFIG}.{CAPTURE_SCALAR_OUTPUTS}" for t in node.targets):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and _sets_in_call(node, resolve):
            lines.append(node.lineno)
    return min(lines, default=None)


def scalar_outputs_captured(ctx) -> str | None:
    """Where the project turns ``capture_scalar_outputs`` on ("path:line", or "line N" of this file), else None."""
    settings = getattr(ctx, "settings", None)
    if settings is not None:
        return settings.get(CAPTURE_SCALAR_OUTPUTS)
    cached = ctx.__dict__.get("_scalar_outputs", False)
    if cached is False:
        line = capture_scalar_outputs_line(ctx.source.text, ctx.tree, ctx.resolve)
        cached = ctx.__dict__["_scalar_outputs"] = None if line is None else f"line {line}"
    return cached
