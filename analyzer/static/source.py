"""One source file as the engine sees it: the text, its lines, and position conversion.

``ast`` columns are UTF-8 byte offsets; Diagnostics use 1-based character columns. The conversion
is only done for the few nodes that are reported, and is free for ASCII lines.
"""

from __future__ import annotations

import re

# The line terminators the Python tokenizer knows (str.splitlines knows more, e.g. \x0c, \u2028).
_LINE_END = re.compile(r"\r\n|\r|\n")


class SourceFile:
    def __init__(self, text: str, path: str = "<string>"):
        self.text = text
        self.path = path
        self._lines: list[str] | None = None
        self._ascii = text.isascii()

    @property
    def lines(self) -> list[str]:
        """Lines without their terminators, numbered like ``ast`` numbers them (index 0 is line 1)."""
        if self._lines is None:
            text = self.text
            self._lines = text.split("\n") if "\r" not in text else _LINE_END.split(text)
        return self._lines

    def line(self, lineno: int) -> str:
        lines = self.lines
        return lines[lineno - 1] if 1 <= lineno <= len(lines) else ""

    def char_column(self, lineno: int, byte_col: int) -> int:
        """0-based character column of a 0-based UTF-8 byte offset on a line."""
        if self._ascii:
            return byte_col
        line = self.line(lineno)
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def span(self, node) -> tuple[int, int, int, int]:
        """(line, column, end_line, end_column) of an ast node: 1-based, end exclusive, in characters."""
        line = node.lineno
        end_line = getattr(node, "end_lineno", None) or line
        col = self.char_column(line, node.col_offset)
        end_byte = getattr(node, "end_col_offset", None)
        end_col = self.char_column(end_line, end_byte) if end_byte is not None else col + 1
        return line, col + 1, end_line, end_col + 1

    def segment(self, node) -> str:
        """The source text of a node (for messages)."""
        line, col, end_line, end_col = self.span(node)
        if line == end_line:
            return self.line(line)[col - 1 : end_col - 1]
        parts = [self.line(line)[col - 1 :]]
        parts += [self.line(n) for n in range(line + 1, end_line)]
        parts.append(self.line(end_line)[: end_col - 1])
        return "\n".join(parts)
