"""Cheap text tests that decide which files and functions can hold a finding at all.

A regex over the text costs a small fraction of a parse, so a file (or a function) is only walked when
its text mentions what a rule needs: a jit entry point for the jit rules; rules bring their own patterns
(TL101: a reshape-like call and an in-place write) and ask for the functions whose lines match.
"""

from __future__ import annotations

import bisect
import re

# `\b(?:jit|compile)\b`, each word found from its first letter (`j(?<!\wj)` is `\bj`): a pattern that starts with
# `\b` is tried at every position of the text, one that starts with letters is searched for them in C (5x faster)
JIT_TEXT = re.compile(r"(?:j(?<!\wj)it|c(?<!\wc)ompile)\b")


_LINE_PATTERNS: dict[re.Pattern, re.Pattern] = {}


def _to_line_end(pattern: re.Pattern) -> re.Pattern:
    """The pattern extended to swallow the rest of its line: one match per line at most."""
    extended = _LINE_PATTERNS.get(pattern)
    if extended is None:
        extended = _LINE_PATTERNS[pattern] = re.compile(f"(?:{pattern.pattern})[^\n]*", pattern.flags)
    return extended


def matching_lines(pattern: re.Pattern, text: str) -> list[int]:
    """Sorted 1-based line numbers where ``pattern`` matches (newlines are counted in C, between matches)."""
    pattern = _to_line_end(pattern)
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        text = re.sub(r"\r\n?", "\n", text)  # old Mac line ends: ast counts a lone \r as a line end too
    lines: list[int] = []
    line, last = 1, 0
    for m in pattern.finditer(text):
        start = m.start()
        line += text.count("\n", last, start)
        last = start
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def any_in_range(lines: list[int], start: int, end: int) -> bool:
    i = bisect.bisect_left(lines, start)
    return i < len(lines) and lines[i] <= end
