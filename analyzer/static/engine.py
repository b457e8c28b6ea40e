"""The static engine: one ``ast`` parse per file, shared facts, every enabled rule's check, Diagnostics.

The parse is the only full pass over the file. Rules read lazily built facts (see context.py); a file
whose text cannot hold a finding for a rule is never walked for it. libcst runs only when a finding has
a fix and fixes are wanted.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterable

import rules as rule_table

from ..diagnostics import Diagnostic, Severity
from ..fixes import SpannedRequest, build_fixes
from ..parsing import PARSE_ERRORS, compile_error, gc_paused, newer_syntax, parse
from ..selection import resolve
from .context import FileContext
from .noqa import is_suppressed, noqa_lines
from .source import SourceFile

# A depth at which we stop trusting recursion (ours or the parser's) and report the file as unparsable.
_NESTING_LIMIT = 200
# Below this size a MemoryError from the parser is its stack overflowing on nesting, not a full heap.
_SMALL_FILE_CHARS = 1_000_000
# Findings reported per file; the rest are counted in one "and N more" finding.
MAX_FINDINGS_PER_FILE = 1000


def enabled_codes(select=None, ignore=None, extend_select=None) -> frozenset[str]:
    return resolve(rule_table.RULES.keys(), select, ignore, extend_select)


def _diagnostic(code: str, message: str, path: str, span: tuple[int, int, int, int], fixes=(), severity=None) -> Diagnostic:
    info = rule_table.RULES[code]
    line, col, end_line, end_col = span
    return Diagnostic(
        code=code,
        name=info.name,
        severity=Severity(severity or info.severity),
        message=message,
        path=path,
        line=line,
        column=col,
        end_line=end_line,
        end_column=end_col,
        origin="static",
        fixes=tuple(fixes),
    )


def _deep_nesting_position(source: SourceFile, default=(1, 1)):
    """Where bracket nesting first gets too deep (1-based line/column), else ``default``."""
    depth = 0
    line, col = 1, 0
    for ch in source.text:
        col += 1
        if ch == "\n":
            line, col = line + 1, 0
        elif ch in "([{":
            depth += 1
            if depth >= _NESTING_LIMIT:
                return line, col
        elif ch in ")]}":
            depth = max(0, depth - 1)
    return default


def _deepest_node_position(tree: ast.AST) -> tuple[int, int]:
    """1-based (line, column) of the deepest node with a position: where a recursive rule ran out of depth.

    Walked with an explicit stack, since recursion is exactly what failed.
    """
    best_depth, best = -1, (1, 1)
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if hasattr(node, "lineno") and depth >= best_depth:
            here = (node.lineno, node.col_offset + 1)
            if depth > best_depth or here < best:  # the first of the deepest nodes in the text
                best_depth, best = depth, here
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return best


def _out_of_memory(source: SourceFile, exc: BaseException, parsing: bool) -> bool:
    """CPython's parser raises MemoryError for its own stack overflow (deep nesting) too: that is the
    cause when the file is small or nested past our limit; otherwise memory ran out, never "nesting"."""
    if not isinstance(exc, MemoryError):
        return False
    if not parsing:
        return True
    return len(source.text) >= _SMALL_FILE_CHARS and _deep_nesting_position(source, None) is None


def syntax_error_diagnostic(source: SourceFile, exc: BaseException, *, parsing: bool = True) -> Diagnostic:
    text = source.text
    if _out_of_memory(source, exc, parsing):
        size = len(text.encode("utf-8", "surrogatepass")) / 1e6
        message = f"Cannot lint this file: out of memory while analyzing it ({size:.1f} MB)"
        return _diagnostic("TL002", message, source.path, (1, 1, 1, 1))
    if isinstance(exc, (RecursionError, MemoryError)):
        line, col = _deep_nesting_position(source)
        message = "the file is too deeply nested to parse or analyze"
        return _diagnostic("TL001", message, source.path, (line, col, line, col + 1))
    message = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
    nul = text.find("\0")
    if "null bytes" in message and nul != -1:
        line = text.count("\n", 0, nul) + 1
        col = nul - (text.rfind("\n", 0, nul) + 1) + 1
        return _diagnostic("TL001", "the file contains a null byte", source.path, (line, col, line, col + 1))
    n_lines = max(1, len(source.lines))
    line = getattr(exc, "lineno", None) or 1
    line = min(max(1, line), n_lines)
    col = getattr(exc, "offset", None) or 1
    width = len(source.line(line))
    col = min(max(1, col), width + 1)
    end_line = getattr(exc, "end_lineno", None) or line
    end_col = getattr(exc, "end_offset", None) or col + 1
    if end_line != line or end_col <= col:
        end_line, end_col = line, col + 1
    note = newer_syntax(text, exc) if isinstance(exc, SyntaxError) else None
    if note:
        message = f"{message} ({note})"
    return _diagnostic("TL001", f"syntax error: {message}", source.path, (line, col, end_line, end_col))


def _cap(kept: list) -> tuple[list, list]:
    """The first MAX_FINDINGS_PER_FILE distinct findings in text order, and the rest (counted in one
    summary finding): a pathological file must not cost minutes of fix building and a huge report."""
    if len(kept) <= MAX_FINDINGS_PER_FILE:
        return kept, []
    unique = {}
    for item in kept:
        unique.setdefault((item[0], item[2]), item)
    ordered = sorted(unique.values(), key=lambda item: (item[2][0], item[2][1], item[0]))
    return ordered[:MAX_FINDINGS_PER_FILE], ordered[MAX_FINDINGS_PER_FILE:]


def lint(
    text: str,
    path: str = "<string>",
    *,
    enabled: frozenset[str],
    jit_decorators: Iterable[str] = (),
    with_fixes: bool = True,
    project=None,
    capped: bool = True,
) -> list[Diagnostic]:
    """``project`` (a ProjectFile) brings what the project index knows about this file, and takes back
    the file's summary for the index: both from this one parse. ``capped``: at most
    MAX_FINDINGS_PER_FILE findings and a summary (fixing rounds need them all)."""
    # The collector stays off until the tree is gone (_lint has returned): full collections would
    # rescan the whole tree again and again while the rules allocate (measured: about a quarter of the
    # time on a 1 MB file, more on bigger ones; peak memory unchanged).
    with gc_paused():
        ctx = prepare(text, path, jit_decorators=jit_decorators, project=project)
        if not isinstance(ctx, FileContext):
            return ctx
        return check(ctx, enabled=enabled, with_fixes=with_fixes, project=project, capped=capped)


def prepare(text: str, path: str = "<string>", *, jit_decorators: Iterable[str] = (), project=None) -> FileContext | list[Diagnostic]:
    """The first half of ``lint``: parse, the compile-time error check, and the file's summary for the project
    index (into ``project``). A file that does not parse or compile gets its one TL001 finding instead.

    The runner parses every file of a small project first and checks each once the index is built (its facts
    are then final); keep the collector paused (``gc_paused``) while many prepared files are alive."""
    source = SourceFile(text, path)
    try:
        tree = parse(text)  # under a pseudo file name: the path is a label, never opened
    except PARSE_ERRORS as exc:
        return [syntax_error_diagnostic(source, exc)]
    # errors CPython raises only when compiling: the file would not run. A file linted again with the project
    # index's facts (the runner's second pass) passed this check in its first pass, with the same text.
    # (a notebook's cells may `await` at top level: IPython runs them so)
    late = None if getattr(project, "compile_checked", False) else compile_error(
        tree, text, top_level_await=path.lower().endswith(".ipynb"))
    if late is not None:
        return [syntax_error_diagnostic(source, late)]
    ctx = FileContext(source, tree, tuple(jit_decorators))
    if project is not None:
        project.summarize(ctx)
    return ctx


def check(ctx: FileContext, *, enabled: frozenset[str], with_fixes: bool = True, project=None, capped: bool = True) -> list[Diagnostic]:
    """The second half of ``lint``: the rules on a prepared file, with the facts ``project`` holds (or, with
    none, those of a one-file index), then ``# noqa``, the cap and the fixes."""
    source, tree, text, path = ctx.source, ctx.tree, ctx.source.text, ctx.source.path
    if project is not None:
        project.apply_facts(ctx)
    found = []  # (code, Finding)
    too_deep = []  # rules that ran out of recursion depth on this file
    try:
        has_jit = None
        for code, rule_check in rule_table.STATIC_CHECKS.items():
            if code not in enabled:
                continue
            if code in rule_table.JIT_ONLY:
                if has_jit is None:
                    has_jit = bool(ctx.jitted)
                if not has_jit:
                    continue
            rule_found = []
            try:
                rule_found.extend((code, f) for f in rule_check(ctx))
            except RecursionError:
                too_deep.append(code)  # parsable but too deep for this rule: the others still report
                continue
            except MemoryError:
                raise
            except Exception as exc:  # a bug in one rule must not cost the file its other findings
                warnings.warn(f"thunder-lint: rule {code} failed on {path}: {exc!r}", RuntimeWarning, stacklevel=2)
                continue
            found.extend(rule_found)
    except (RecursionError, MemoryError) as exc:
        return [syntax_error_diagnostic(source, exc, parsing=False)]

    noqa = noqa_lines(text)
    kept = []
    for code, finding in found:
        span = source.span(finding.node)
        if is_suppressed(code, span[0], noqa):
            continue
        # a `# noqa` on the line the fix edits (the `reshape` of a TL101) is about this finding too
        if noqa and any(is_suppressed(code, getattr(r.target, "lineno", 0), noqa) for r in finding.fixes):
            continue
        kept.append((code, finding, span))
    kept, omitted = _cap(kept) if capped else (kept, [])

    fixes_per_finding = [()] * len(kept)
    if with_fixes and any(f.fixes for _, f, _ in kept):
        requests = [
            (span, [SpannedRequest(r, source.span(r.target)) for r in finding.fixes]) for _, finding, span in kept
        ]
        fixes_per_finding = build_fixes(text, requests)

    diagnostics = []
    seen = set()
    for (code, finding, span), fixes in zip(kept, fixes_per_finding):
        key = (code, span)
        if key in seen:
            continue
        seen.add(key)
        diagnostics.append(_diagnostic(code, finding.message, path, span, fixes, getattr(finding, "severity", None)))
    if omitted:
        code, finding, span = omitted[0]
        message = (
            f"... and {len(omitted)} more findings in this file, from here on, not shown "
            f"(at most {MAX_FINDINGS_PER_FILE} per file)"
        )
        diagnostics.append(_diagnostic(code, message, path, span))
    if too_deep:
        line, col = _deepest_node_position(tree)
        diagnostics.append(
            _diagnostic(
                "TL001",
                f"the file is too deeply nested to analyze with {', '.join(too_deep)}; other rules ran",
                path,
                (line, col, line, col + 1),
            )
        )
    diagnostics.sort(key=lambda d: (d.line, d.column, d.code))
    return diagnostics
