"""What the rules know about PyTorch's API, and small expression helpers shared by several rules."""

from __future__ import annotations

import ast
import bisect
import re

from .dotted import chain_root

# Methods whose result may be a view of the receiver or a fresh copy, depending on strides/dtype/device.
MAYBE_VIEW_METHODS = frozenset({"reshape", "reshape_as", "flatten", "ravel", "contiguous"})
# Conversions that return ``self`` when nothing needs converting.
CAST_METHODS = frozenset(
    {"to", "type", "type_as", "float", "half", "double", "bfloat16", "int", "long", "short", "bool", "byte", "char",
     "cpu", "cuda"}
)
MAYBE_VIEW_FUNCTIONS = frozenset({"torch.reshape", "torch.flatten", "torch.ravel"})

# Methods and attributes that always return a view of the receiver.
VIEW_METHODS = frozenset(
    {"view", "view_as", "transpose", "t", "permute", "squeeze", "unsqueeze", "expand", "expand_as", "narrow",
     "select", "diagonal", "unflatten", "as_strided", "detach", "movedim", "moveaxis", "swapaxes", "swapdims",
     "unfold", "split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "indices", "values", "view_as_real"}
)
VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})
# Calls that always produce new memory.
FRESH_METHODS = frozenset({"clone", "copy", "detach_copy"})
FRESH_FUNCTIONS = frozenset({"copy.deepcopy", "copy.copy", "torch.clone"})
# Functions whose result always shares memory with their first argument (a NumPy array).
SHARING_FUNCTIONS = frozenset({"torch.from_numpy"})

# Reading these gives metadata, never tensor values.
METADATA_ATTRIBUTES = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout", "names", "is_sparse", "grad_fn",
     "is_leaf", "training"}
)
METADATA_METHODS = frozenset(
    {"size", "dim", "numel", "stride", "storage_offset", "is_contiguous", "element_size", "nelement", "ndimension",
     "get_device", "is_floating_point", "is_complex", "data_ptr", "type"}
)


def receiver_call(expr, names) -> tuple[str, ast.AST] | None:
    """(method, receiver) for ``receiver.method(...)`` with method in ``names``."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in names:
        return expr.func.attr, expr.func.value
    return None


def is_basic_index(index) -> bool:
    """An index that certainly selects a view (ints, slices, None, ...), not advanced indexing (a copy)."""
    if isinstance(index, ast.Tuple):
        return all(is_basic_index(e) for e in index.elts)
    if isinstance(index, ast.Slice):
        return True
    if isinstance(index, ast.Constant):
        return index.value is None or index.value is Ellipsis or type(index.value) is int
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        return isinstance(index.operand, ast.Constant) and type(index.operand.value) is int
    return False


def is_none_check(expr) -> bool:
    """``x is None`` / ``x is not None`` (never a decision on a value)."""
    return isinstance(expr, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in expr.ops)


def start(node) -> tuple[int, int]:
    return (node.lineno, node.col_offset)


def assigned_value(facts, name: str, pos):
    """(value, where its statement starts) of the one plain assignment of ``name`` that reaches ``pos``; None for a
    parameter, another kind of binding, or no single one."""
    b = facts.binding_at(name, pos)
    if b is None or isinstance(b, str) or b.kind != "assign" or b.value is None:
        return None
    return b.value, start(b.stmt)


def end(node) -> tuple[int, int]:
    return (node.end_lineno, node.end_col_offset)


def written_tensor(ctx, facts, mutation):
    """The tensor a mutation writes: ``x`` in ``x.add_(1)``, but ``w`` in ``torch.nn.init.normal_(w)``."""
    target = mutation.target
    if mutation.kind != "method":
        return target
    root = chain_root(target)
    if isinstance(root, ast.Name) and root.id in ctx.index.imports and not facts.is_local(root.id):
        call = mutation.node
        return call.args[0] if call.args else None
    return target


# Calls that say "a compiler is tracing this code right now".
_COMPILING_CHECKS = frozenset({"is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling", "is_scripting",
                                "is_tracing", "is_jitting"})


def _is_compiling_test(test) -> bool | None:
    """True for ``is_compiling()``, False for ``not is_compiling()`` (also as an operand of ``and``: the whole
    test is false when compiling), None for anything else."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return False if any(_is_compiling_test(v) is False for v in test.values) else None
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    if isinstance(test, ast.Call) and not test.args:
        f = test.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name in _COMPILING_CHECKS:
            # torch.jit.is_scripting() is False under torch.compile and thunder (checked in
            # tests/cli/test_cli_what_is_compiled.py): its branch is TorchScript's, the other one is compiled
            return negated if name == "is_scripting" else not negated
    return None


def mentions_compiling_checks(text: str) -> bool:
    """Does the text name any `is_compiling()`-like check? (Else no function of it has an eager-only block.)"""
    global _last_mention
    if _last_mention[0] is not text:  # asked once per compiled function, always of the same file's text
        _last_mention = (text, _MENTION.search(text) is not None)
    return _last_mention[1]


_last_mention: tuple = (None, False)
# Any of the names, in one search from their common `is_` (searched for in C): 2.5x faster than a search per name.
_MENTION = re.compile("is_(?:%s)" % "|".join(sorted(re.escape(name[3:]) for name in _COMPILING_CHECKS))
                      if all(name.startswith("is_") for name in _COMPILING_CHECKS)
                      else "|".join(sorted(map(re.escape, _COMPILING_CHECKS))))


def compiling_checks_in(ctx, node) -> bool:
    """Does a line of ``node`` (a function, its decorators included) name an `is_compiling()`-like check? The text is
    searched once per file; each function is then a bisection (asking ``mentions_compiling_checks`` of each
    function's text built its text, and put the whole file's answer out of the one-text cache)."""
    lines = ctx.__dict__.get("_compiling_check_lines", False)
    if lines is False:
        text = ctx.source.text
        lines = ctx.__dict__["_compiling_check_lines"] = compiling_check_lines(text) if mentions_compiling_checks(text) \
            else []
    if lines is None:
        return True
    decorators = getattr(node, "decorator_list", None)
    i = bisect.bisect_left(lines, decorators[0].lineno if decorators else node.lineno)
    return i < len(lines) and lines[i] <= node.end_lineno


def compiling_check_lines(text: str) -> list[int] | None:
    """The sorted lines that name an `is_compiling()`-like check, or None where the text may spell one otherwise (see
    walks.lines_with). A function none of whose lines is among them has no eager-only block."""
    from .walks import lines_with

    found = [lines_with(text, name) for name in _COMPILING_CHECKS]
    return None if None in found else sorted({line for lines in found for line in lines})


def eager_only_spans(func, ifs=None) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Spans of ``func`` that run only in eager mode: the body of ``if not torch.compiler.is_compiling():``
    and the else of ``if is_compiling():``. Code there never runs under a compiler, so it holds no hazard.
    ``ifs``: the function's `if` statements, when known (its FunctionFacts.all_ifs), instead of a walk."""
    spans = []
    for node in ast.walk(func) if ifs is None else ifs:
        if isinstance(node, ast.If):
            compiling = _is_compiling_test(node.test)
            block = node.body if compiling is False else node.orelse if compiling else None
            if block:
                spans.append((start(block[0]), end(block[-1])))
    spans += after_compiling_returns(func)
    return spans


def _terminates(block) -> bool:
    """Does every path through ``block`` end in a ``return`` or ``raise``?"""
    if not block:
        return False
    last = block[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _terminates(last.body) and _terminates(last.orelse)
    return False


def after_compiling_returns(func) -> list:
    """``if torch.compiler.is_compiling(): ...; return y`` then eager code: what follows the `if` in its block runs
    only eagerly (unsloth's `_bounded_dense_matmul` hands the compiled path to a custom op and returns)."""
    spans = []
    stack = [func] if isinstance(func, ast.AST) else []
    while stack:
        node = stack.pop()
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            for i, stmt in enumerate(block):
                if isinstance(stmt, ast.If) and _is_compiling_test(stmt.test) is True and not stmt.orelse \
                        and _terminates(stmt.body) and i + 1 < len(block):
                    spans.append((start(block[i + 1]), end(block[-1])))
                    break
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.stmt, ast.excepthandler)) and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                stack.append(child)
    return spans


def in_spans(node, spans) -> bool:
    pos = start(node)
    return any(lo <= pos <= hi for lo, hi in spans)


def compiled_operands(test) -> list:
    """The parts of a branch test that a compiler evaluates: in ``a and not is_compiling() and b`` only ``a``
    (and the check itself) runs compiled; ``b`` is short-circuited away."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        out = []
        for v in test.values:
            out.append(v)
            if _is_compiling_test(v) is False:
                break
        return out
    return [test]


_LOG_ROOTS = frozenset({"logger", "logging", "log", "warnings", "_logger", "LOGGER"})


def only_reports(body) -> bool:
    """A block that only raises, warns, logs or passes: it changes no value the trace computes."""
    for stmt in body:
        if isinstance(stmt, (ast.Raise, ast.Pass)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            root = chain_root(stmt.value.func)
            if isinstance(root, ast.Name) and (root.id in _LOG_ROOTS or root.id == "print"):
                continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring-like string
        return False
    return True


def report_only_spans(ifs) -> list:
    """Spans of the `if`/`else` blocks among ``ifs`` that only raise, warn or log: diagnostics for unusual inputs."""
    spans = []
    for node in ifs:
        for block in (node.body, node.orelse):
            if block and only_reports(block):
                spans.append((start(block[0]), end(block[-1])))
    return spans
