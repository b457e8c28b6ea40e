"""An open document's text, and positions between the linter's and the editor's conventions.

The linter numbers lines from 1 and columns in characters (code points) from 1, end exclusive. LSP
numbers both from 0 and counts columns in the negotiated position encoding: UTF-16 code units unless
the client offers UTF-8 or UTF-32. Both break lines only at ``\\n``, ``\\r\\n`` and ``\\r`` (Python's
tokenizer and the LSP spec agree; ``str.splitlines`` also breaks at ``\\f``, ``\\v``, ``\\x1c``-``\\x1e``,
``\\x85``, ``\\u2028`` and ``\\u2029``, which is why this module splits lines itself).
"""

from __future__ import annotations

import bisect
import re

_LINE_END = re.compile(r"\r\n|\r|\n")

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def _units(ch: str, encoding: str) -> int:
    """How many code units of ``encoding`` one character takes."""
    if encoding == UTF32:
        return 1
    o = ord(ch)
    if encoding != UTF8:  # UTF-16, LSP's default
        return 2 if o > 0xFFFF else 1
    if o < 0x80:
        return 1
    if o < 0x800:
        return 2
    return 3 if o < 0x10000 else 4  # a lone surrogate (JSON allows one) counts as its 3-byte form


def units_to_chars(line: str, units: int, encoding: str) -> int:
    """Characters of ``line`` covered by its first ``units`` code units (clamped to the line)."""
    if encoding == UTF32 or line.isascii():
        return max(0, min(units, len(line)))
    seen = 0
    for i, ch in enumerate(line):
        if seen >= units:
            return i
        seen += _units(ch, encoding)
    return len(line)


def chars_to_units(line: str, chars: int, encoding: str) -> int:
    """Code units of ``encoding`` in the first ``chars`` characters of ``line``."""
    chars = max(0, min(chars, len(line)))
    if encoding == UTF32 or line.isascii():
        return chars
    return sum(_units(ch, encoding) for ch in line[:chars])


class TextDocument:
    """The editor's copy of one file: full text, version, and a table of line starts."""

    def __init__(self, uri: str, text: str, version: int | None = None, language_id: str = "python"):
        self.uri = uri
        self.version = version
        self.language_id = language_id
        self._text = text
        self._starts: list[int] | None = None

    @property
    def text(self) -> str:
        return self._text

    @property
    def line_starts(self) -> list[int]:
        """Offset (in characters) where each line starts; line 0 starts at 0."""
        if self._starts is None:
            self._starts = [0] + [m.end() for m in _LINE_END.finditer(self._text)]
        return self._starts

    def line_text(self, line: int) -> str:
        """Line ``line`` (0-based) without its line break; "" past the end."""
        starts = self.line_starts
        if not 0 <= line < len(starts):
            return ""
        end = starts[line + 1] if line + 1 < len(starts) else len(self._text)
        text = self._text[starts[line] : end]
        if text.endswith("\r\n"):
            return text[:-2]
        return text[:-1] if text.endswith(("\n", "\r")) else text

    # Positions -----------------------------------------------------------------------------------
    def offset_at(self, line: int, character: int, encoding: str = UTF16) -> int:
        """Character offset of an LSP position; positions past a line's end or the text's end clamp."""
        starts = self.line_starts
        if line < 0:
            return 0
        if line >= len(starts):
            return len(self._text)
        return starts[line] + units_to_chars(self.line_text(line), character, encoding)

    def position_at(self, offset: int, encoding: str = UTF16) -> tuple[int, int]:
        """LSP (line, character) of a character offset."""
        offset = max(0, min(offset, len(self._text)))
        line = bisect.bisect_right(self.line_starts, offset) - 1
        chars = offset - self.line_starts[line]
        return line, chars_to_units(self.line_text(line), chars, encoding)

    def lsp_position(self, line1: int, column1: int, encoding: str = UTF16) -> tuple[int, int]:
        """LSP (line, character) of a linter position (1-based line, 1-based character column)."""
        line = max(0, line1 - 1)
        if line >= len(self.line_starts):  # past the end (an empty last line): the end of the text
            return self.position_at(len(self._text), encoding)
        return line, chars_to_units(self.line_text(line), max(0, column1 - 1), encoding)

    def linter_offset(self, line1: int, column1: int) -> int:
        """Character offset of a linter position (clamped to its line)."""
        line = max(0, line1 - 1)
        if line >= len(self.line_starts):
            return len(self._text)
        return self.line_starts[line] + max(0, min(column1 - 1, len(self.line_text(line))))

    # Changes -------------------------------------------------------------------------------------
    def apply_change(self, new_text: str, start: tuple[int, int] | None = None, end: tuple[int, int] | None = None,
                     encoding: str = UTF16) -> None:
        """Replace the range ``start``..``end`` (LSP positions) with ``new_text``; no range: the whole text."""
        if start is None or end is None:
            self._text = new_text
        else:
            a = self.offset_at(*start, encoding)
            b = self.offset_at(*end, encoding)
            if b < a:
                a, b = b, a
            self._text = self._text[:a] + new_text + self._text[b:]
        self._starts = None
