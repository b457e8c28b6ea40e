"""``# noqa`` handling after ruff's conventions.

``# noqa`` alone suppresses every finding on its line; ``# noqa: TL101,TL2`` suppresses the listed
codes or prefixes. A ``# noqa`` for another tool (``# noqa: E501``) suppresses nothing of ours.
"""

from __future__ import annotations

import io
import re
import tokenize

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]*(?:\s*,\s*[A-Za-z]+[0-9]*|\s+[A-Za-z]+[0-9]+)*))?", re.I)
_CODE = re.compile(r"[A-Za-z]+[0-9]*")

ALL = None  # a bare "# noqa"


def noqa_lines(text: str) -> dict[int, frozenset[str] | None]:
    """line number -> the codes/prefixes suppressed there (``None`` = everything)."""
    if _NOQA.search(text) is None:
        # (a `# noqa` on one of the lines is one in the text: none in the text, none on a line. The search starts at
        # C speed from each `#`, 4x faster than the upper-cased copy of the text it replaces.)
        return {}
    result: dict[int, frozenset[str] | None] = {}
    for lineno, line in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
        if "#" not in line:
            continue
        m = _NOQA.search(line)
        if not m:
            continue
        codes = m.group("codes")
        if codes is None:
            result[lineno] = ALL
        else:
            result[lineno] = frozenset(c.upper() for c in _CODE.findall(codes))
    return result


def find_noqa(line: str) -> re.Match | None:
    """The ``# noqa`` comment of one line (its ``codes`` group is None for a bare ``# noqa``)."""
    return _NOQA.search(line) if "#" in line else None


def is_suppressed(code: str, line: int, table: dict[int, frozenset[str] | None]) -> bool:
    if line not in table:
        return False
    codes = table[line]
    if codes is ALL:
        return True
    return any(code.startswith(prefix) for prefix in codes)


def comment_lines(text: str) -> frozenset[int] | None:
    """1-based lines whose end a comment can be appended to (not inside a string, not continued with a
    backslash); None when the text does not tokenize."""
    lines = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.NL):
                lines.add(tok.start[0])
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    return frozenset(lines)


NEVER_SUPPRESSED = frozenset({"TL001", "TL002"})  # the file could not be read or parsed: no comment helps


def add_noqa(text: str, findings) -> tuple[str, int]:
    """``text`` with ``# noqa: CODE`` on each finding's first line (codes merged into a ``# noqa: X`` already
    there; a bare ``# noqa`` left as it is; lines inside strings skipped): (the new text, comments added or
    extended). Line endings are kept."""
    commentable = comment_lines(text)
    if commentable is None:
        return text, 0
    by_line: dict[int, list[str]] = {}
    for d in findings:
        if d.code not in NEVER_SUPPRESSED and d.line in commentable:
            codes = by_line.setdefault(d.line, [])
            if d.code not in codes:
                codes.append(d.code)
    if not by_line:
        return text, 0
    lines = text.splitlines(keepends=True)
    changed = 0
    for lineno, codes in by_line.items():
        if lineno > len(lines):
            continue
        raw = lines[lineno - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body):]
        m = find_noqa(body)
        if m and m.group("codes") is None:
            continue  # a bare `# noqa` suppresses everything already
        if m:
            have = {c.upper() for c in _CODE.findall(m.group("codes"))}
            new = [c for c in sorted(codes) if c not in have]
            if not new:
                continue
            at = m.end("codes")
            body = body[:at] + "".join(f", {c}" for c in new) + body[at:]
        else:
            body = body.rstrip() + f"  # noqa: {', '.join(sorted(codes))}"
        lines[lineno - 1] = body + ending
        changed += 1
    return "".join(lines), changed
