"""Human formats: ``concise`` (one line per finding) and ``full`` (with the source lines underlined).

A message's first line is the finding (the hazard and the fix); its further lines are notes (where the code is
compiled, what each compiler does), shown as ``= note:`` lines by ``full`` and left out by ``concise``.

``[*]`` marks a finding that ``--fix`` can fix (a safe fix); one with only unsafe fixes is marked ``[-]``
(it needs ``--unsafe-fixes``), as the summary lines of the CLI explain.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from ..diagnostics import Applicability, Diagnostic

MAX_LINE_CHARS = 160  # a minified 10 MB line must not flood the terminal
TAB = 4
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the line breaks Python's tokenizer counts, nothing else


def fix_marker(d: Diagnostic) -> str:
    kinds = {f.applicability for f in d.fixes}
    if Applicability.SAFE in kinds:
        return "[*] "
    if Applicability.UNSAFE in kinds:
        return "[-] "
    return ""


def _origin(d: Diagnostic) -> str:
    """Trace findings (`thunder-lint run`) say so, and how many calls hit them; static ones carry no mark."""
    if d.origin == "static":
        return ""
    calls = "" if d.calls is None else f", {d.calls} call{'s' if d.calls != 1 else ''}"
    return f" [{d.origin}{calls}]"


def _header(d: Diagnostic) -> str:
    """The finding's first line: the message's first line (the hazard and the fix); its other lines are notes."""
    headline = d.message.split("\n", 1)[0]
    return f"{d.where}: {d.code} {fix_marker(d)}{headline}{_origin(d)}"


def _note_lines(d: Diagnostic, indent: str) -> list[str]:
    return [f"{indent}= note: {line}" for line in d.message.split("\n")[1:] if line.strip()]


def _fix_lines(d: Diagnostic, indent: str) -> list[str]:
    out = []
    for f in d.fixes:
        note = "" if f.applicability is Applicability.SAFE else f" ({f.applicability.value} fix)"
        out.append(f"{indent}= help: {f.title}{note}")
    return out


def _edit_lines(d: Diagnostic, indent: str) -> list[str]:
    out = []
    for f in d.fixes:
        for e in f.edits:
            out.append(f"{indent}{f.title}: {e.line}:{e.column}-{e.end_line}:{e.end_column} -> {e.content!r}")
    return out


def render_concise(diagnostics: list[Diagnostic], *, show_fixes: bool = False) -> str:
    lines = []
    for d in diagnostics:
        lines.append(_header(d))
        if show_fixes:
            lines.extend(_fix_lines(d, "    "))
            lines.extend(_edit_lines(d, "        "))
    return "".join(line + "\n" for line in lines)


def _display(line: str) -> str:
    return line.expandtabs(TAB)


def _width(s: str) -> int:
    """Terminal columns: East Asian wide characters take two, so the caret stays under its code."""
    if s.isascii():
        return len(s)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def _clip(s: str) -> str:
    return s if len(s) <= MAX_LINE_CHARS else s[: MAX_LINE_CHARS - 1] + "…"


def _snippet(d: Diagnostic, lines: list[str]) -> list[str]:
    """The finding's line with one line of context each side, and a caret underline."""
    if not (1 <= d.line <= len(lines)):
        return []
    first = max(1, d.line - 1)
    last = min(len(lines), max(d.end_line, d.line) + 1, d.line + 3)
    gutter = len(str(last))
    out = [f"{' ' * gutter} |"]
    for n in range(first, last + 1):
        src = lines[n - 1]
        out.append(f"{n:>{gutter}} | {_clip(_display(src))}".rstrip())
        if n == d.line:
            col0 = max(d.column - 1, 0)
            end0 = d.end_column - 1 if d.end_line == d.line else len(src)
            start = _width(_display(src[:col0]))
            width = max(1, _width(_display(src[:max(end0, col0)])) - start)
            if start < MAX_LINE_CHARS:
                width = min(width, MAX_LINE_CHARS - start)
                out.append(f"{' ' * gutter} | {' ' * start}{'^' * width} {d.code}")
    out.append(f"{' ' * gutter} |")
    return out


def render_full(diagnostics: list[Diagnostic], *, show_fixes: bool = False, sources: Mapping[str, str]) -> str:
    blocks = []
    split_cache: dict[str, list[str]] = {}
    for d in diagnostics:
        block = [_header(d)]
        key = d.path if d.cell is None else (d.path, d.cell)  # a notebook's sources are its cells'
        text = sources.get(key)
        if text is not None:
            if key not in split_cache:
                split_cache[key] = _LINE_BREAK.split(text)
            block.extend(_snippet(d, split_cache[key]))
        block.extend(_note_lines(d, "  "))
        block.extend(_fix_lines(d, "  "))
        if show_fixes:
            block.extend(_edit_lines(d, "      "))
        blocks.append("\n".join(block) + "\n")
    return "\n".join(blocks)
