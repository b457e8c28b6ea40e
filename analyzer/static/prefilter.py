"""Cheap text tests that decide which files and functions can hold a finding at all.

A regex over the text costs a small fraction of a parse, so a file (or a function) is only walked when
its text mentions what a rule needs: a jit entry point for the jit rules; rules bring their own patterns
(TL101: a reshape-like call and an in-place write) and ask for the functions whose lines match.
"""

from __future__ import annotations

import bisect
import re

JIT_TEXT = re.compile(r"\b(?:jit|compile)\b")


def matching_lines(pattern: re.Pattern, text: str) -> list[int]:
    """Sorted 1-based line numbers where ``pattern`` matches (one pass over the text, no line split)."""
    lines = []
    newline_positions = None
    last = -1
    for m in pattern.finditer(text):
        if newline_positions is None:
            newline_positions = _newlines(text)
        line = bisect.bisect_right(newline_positions, m.start()) + 1
        if line != last:
            lines.append(line)
            last = line
    return lines


def _newlines(text: str) -> list[int]:
    out = []
    i = text.find("\n")
    while i != -1:
        out.append(i)
        i = text.find("\n", i + 1)
    return out


def any_in_range(lines: list[int], start: int, end: int) -> bool:
    i = bisect.bisect_left(lines, start)
    return i < len(lines) and lines[i] <= end
