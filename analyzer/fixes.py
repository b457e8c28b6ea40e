"""Fixes as libcst edits: building them from rule rewrites, and applying them to source text.

libcst is only imported here, and only for a fix that its rule cannot build on the plain text (``text_rewrite``):
it parses about a hundred times slower than ``ast``, and importing it costs ~0.14 s CPU. Rewrites are libcst node transformations owned by the rules; the edit is the
rewritten node's code over the original node's span, so everything around it (comments, formatting)
stays as written.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field

from .diagnostics import Applicability, Diagnostic, Edit, Fix
from .parsing import PARSE_ERRORS, PSEUDO_FILENAME
from .parsing import parses as _parses

_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass
class FixOutcome:
    text: str  # the fixed source
    applied: list[Diagnostic] = field(default_factory=list)  # findings whose fix was applied
    remaining: list[Diagnostic] = field(default_factory=list)  # the fixed source, linted again


def build_fixes(text: str, spans_and_requests) -> list[tuple[Fix, ...]]:
    """For each (ast span, [FixRequest]) the Fixes that could be built (possibly none).

    A span is (line, column, end_line, end_column) in the Diagnostic convention (1-based, end exclusive).
    libcst parses only each target expression's own source text, not the whole module with position
    metadata: the target's span is known from ``ast`` already, and whole-module metadata cost about
    70 ms per fix. The expression's text keeps its inner formatting and comments, so the rewritten node
    renders them as written. Any libcst failure (a syntax libcst does not know, a rewrite that does not
    apply) means no fix, never an exception.
    """
    spans_and_requests = list(spans_and_requests)
    out: list[tuple[Fix, ...]] = [() for _ in spans_and_requests]
    if not any(reqs for _, reqs in spans_and_requests):
        return out
    cst = None  # imported for the first fix the plain-text path declines
    offsets = _line_offsets(text)
    parsed: dict[tuple[int, int, int, int], object] = {}
    for i, (_, requests) in enumerate(spans_and_requests):
        fixes = []
        for req in requests:
            span = req.target_span
            start, stop = _offset(span[0], span[1], offsets), _offset(span[2], span[3], offsets)
            if start is None or stop is None or stop <= start:
                continue
            segment = text[start:stop]
            try:
                code = _plain_rewrite(req.request, segment)
                if code is None:
                    if cst is None:
                        try:
                            import libcst as cst
                        except ImportError:
                            return out
                    node = parsed.get(span)
                    if node is None:
                        node = parsed[span] = cst.parse_expression(segment)
                    new = req.request.rewrite(node)
                    if new is None:
                        continue
                    code = cst.Module([]).code_for_node(new)
                # The replacement must stand as an expression wherever the original stood.
                compile("(" + code + "\n)", PSEUDO_FILENAME, "eval", ast.PyCF_ONLY_AST, dont_inherit=True)
            except Exception:
                continue
            edit = _minimal_edit(segment, code, start, offsets)
            if edit is None:
                continue
            fixes.append(Fix(req.request.title, Applicability(req.request.applicability), (edit,)))
        out[i] = tuple(fixes)
    return out


# Text that libcst parses exactly as ast does, token for token: printable ASCII, newlines and tabs, without strings,
# comments or backslashes (where the two parsers' edge cases live).
_NOT_PLAIN = re.compile(r"""[^\x20-\x7e\n\t]|['"\\#]""")


def _plain_rewrite(request, segment: str) -> str | None:
    """The rewrite's code built on the segment's text by the request's ``text_rewrite``, or None (use libcst)."""
    text_rewrite = getattr(request, "text_rewrite", None)
    if text_rewrite is None or _NOT_PLAIN.search(segment):
        return None
    try:
        expr = ast.parse(segment, PSEUDO_FILENAME, mode="eval").body
    except PARSE_ERRORS:
        return None  # e.g. a line break outside brackets: libcst decides
    return text_rewrite(segment, expr)


def _offset(line: int, column: int, offsets: list[int]) -> int | None:
    if not 1 <= line <= len(offsets) or column < 1:
        return None
    return offsets[line - 1] + column - 1


def _minimal_edit(old: str, new: str, base: int, offsets: list[int]) -> Edit | None:
    """One Edit turning ``old`` (the text at offset ``base``) into ``new``: the span between their common
    prefix and common suffix, so an edit touches as little as it can (`reshape` -> `view`)."""
    if old == new:
        return None
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    line, col = _position(base + prefix, offsets)
    end_line, end_col = _position(base + len(old) - suffix, offsets)
    return Edit(line, col, end_line, end_col, new[prefix : len(new) - suffix])


def _position(offset: int, offsets: list[int]) -> tuple[int, int]:
    line = bisect.bisect_right(offsets, offset)
    return line, offset - offsets[line - 1] + 1


@dataclass(frozen=True)
class SpannedRequest:
    request: object  # rules.base.FixRequest
    target_span: tuple[int, int, int, int]


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for m in _LINE_END.finditer(text):
        offsets.append(m.end())
    return offsets


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (positions in ``text``'s lines/characters)."""
    offsets = _line_offsets(text)

    def offset(line: int, col: int) -> int:
        return offsets[line - 1] + col - 1

    pieces = []
    last = len(text)
    for e in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        start, stop = offset(e.line, e.column), offset(e.end_line, e.end_column)
        pieces.append(text[stop:last])
        pieces.append(e.content)
        last = start
    pieces.append(text[:last])
    return "".join(reversed(pieces))


def choose_fix(diag: Diagnostic, unsafe: bool) -> Fix | None:
    for fix in diag.fixes:
        if fix.applicability is Applicability.SAFE or (unsafe and fix.applicability is Applicability.UNSAFE):
            return fix
    return None


def apply_fixes(text: str, diagnostics: list[Diagnostic], unsafe: bool) -> tuple[str, list[Diagnostic]]:
    """One round: apply the first allowed fix of each diagnostic whose edits overlap no earlier one.

    Returns the new text and the diagnostics fixed. A fix whose result would not parse is dropped.
    """
    chosen: list[tuple[Diagnostic, Fix]] = []
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for d in sorted(diagnostics, key=lambda d: (d.line, d.column, d.code)):
        fix = choose_fix(d, unsafe)
        if fix is None or not fix.edits:
            continue
        spans = [((e.line, e.column), (e.end_line, e.end_column)) for e in fix.edits]
        if any(s < t_end and t_start < e for s, e in spans for t_start, t_end in taken):
            continue
        if any(s == t_start and e == t_end for s, e in spans for t_start, t_end in taken):
            continue
        taken.extend(spans)
        chosen.append((d, fix))
    if not chosen:
        return text, []
    new = apply_edits(text, [e for _, f in chosen for e in f.edits])
    if _parses(new):
        return new, [d for d, _ in chosen]
    # Some fix breaks the file: keep only those that parse one by one.
    applied = []
    current = text
    for d, fix in chosen:
        # positions are relative to the original text, so apply each alone against the original and keep
        # the combined set only if it still parses
        trial = apply_edits(text, [e for _, f in [*((x, y) for x, y in chosen if x in applied), (d, fix)] for e in f.edits])
        if _parses(trial):
            applied.append(d)
            current = trial
    return current, applied
