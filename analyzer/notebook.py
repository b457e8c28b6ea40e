"""Jupyter notebooks (``.ipynb``): linted as one Python text made of their code cells, reported cell by cell.

The code cells are joined in order into one text (so a compile call in cell 5 sees the class of cell 2, as the
kernel does), IPython's own syntax neutralized line for line so that the text parses and every line keeps its
number: ``%magic``/``!shell``/``obj?`` lines become ``pass`` (same indent), ``x = !ls`` becomes ``x = None``,
and a cell run by another language (``%%bash``, ``%%writefile``...) is left out. A finding's line in that text
is mapped back to ``cell N`` (the cell's 1-based position among all cells, as Jupyter and ruff number them) and
its line in the cell. A fix is applied to the joined text and written back cell by cell: outputs, metadata and
the cells no fix touched stay as they were, the JSON is written with the notebook's own indent, and a rewrite
that would not load (or that would lose a magic line) is refused instead of written.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import json
import re
from dataclasses import dataclass, replace

from .diagnostics import Diagnostic
from .file_reader import Unreadable, decode

SUFFIX = ".ipynb"
# cell magics whose body is still Python: the magic line is neutralized, the rest linted
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "pypy", "python", "python3"})
_ASSIGNED_MAGIC = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*[%!]")
_HELP = re.compile(r"^\s*[%\w.\[\]()'\"]*\?\??\s*$")


class NotANotebook(ValueError):
    """The file is not a notebook this tool can read (the reason is the message)."""


def is_notebook(path: str) -> bool:
    return path.lower().endswith(SUFFIX)


def source_of(path: str, data: bytes) -> tuple[str, "Notebook | None"]:
    """The Python text a file's bytes lint as, and its Notebook (None for a Python file). Raises Unreadable: a
    notebook that is not JSON or has no list of cells is TL002, as an undecodable file is."""
    return text_source(path, decode(data))


def text_source(path: str, text: str) -> tuple[str, "Notebook | None"]:
    """source_of for text already decoded (the server's submitted text)."""
    if not is_notebook(path):
        return text, None
    try:
        notebook = Notebook(text)
    except NotANotebook as e:
        raise Unreadable(str(e)) from None
    return notebook.source, notebook


@dataclass(frozen=True)
class CellMap:
    """Where each code cell's lines are in the joined text: small and picklable (it travels with results)."""

    starts: tuple[int, ...]  # 1-based line of the joined text where each linted cell begins, ascending
    cells: tuple[int, ...]  # the 1-based cell number of each

    def locate(self, line: int) -> tuple[int, int]:
        """(cell, line in the cell) of a line of the joined text."""
        i = bisect.bisect_right(self.starts, line) - 1
        if i < 0:
            return (self.cells[0] if self.cells else 1), line
        return self.cells[i], line - self.starts[i] + 1

    def place(self, d: Diagnostic) -> Diagnostic:
        """``d`` with its cell set and its lines (and its fixes' lines) counted within that cell."""
        if d.cell is not None or not self.starts:
            return d
        cell, line = self.locate(d.line)
        shift = d.line - line
        end_line = max(d.end_line - shift, line)
        fixes = tuple(replace(f, edits=tuple(replace(e, line=e.line - shift, end_line=e.end_line - shift)
                                              for e in f.edits)) for f in d.fixes)
        return replace(d, cell=cell, line=line, end_line=end_line, fixes=fixes)

    def place_all(self, diagnostics) -> list[Diagnostic]:
        return [self.place(d) for d in diagnostics]

    def unplace(self, d: Diagnostic) -> Diagnostic:
        """``place`` undone: ``d``'s lines in the joined text (for edits made there, such as ``--add-noqa``)."""
        if d.cell is None or d.cell not in self.cells:
            return d
        shift = self.starts[self.cells.index(d.cell)] - 1
        fixes = tuple(replace(f, edits=tuple(replace(e, line=e.line + shift, end_line=e.end_line + shift)
                                              for e in f.edits)) for f in d.fixes)
        return replace(d, cell=None, line=d.line + shift, end_line=d.end_line + shift, fixes=fixes)


_MENTION = re.compile(r"(?P<path>[^\s`'\"(]+\.ipynb):(?P<line>\d+)\b(?!:)")


def place_mentions(diagnostics, cell_map_of) -> list[Diagnostic]:
    """Messages that name a place in a notebook by its joined line (``compiled by ... at run.ipynb:4``, from the
    project index) name its cell instead (``run.ipynb:cell 3:2``). ``cell_map_of(path)`` gives a notebook's
    CellMap (None: unknown, the message stays)."""
    out = []
    for d in diagnostics:
        if ".ipynb:" in d.message:
            def cell_line(m: re.Match) -> str:
                cells = cell_map_of(m.group("path"))
                if cells is None or not cells.starts:
                    return m.group(0)
                cell, line = cells.locate(int(m.group("line")))
                return f"{m.group('path')}:cell {cell}:{line}"

            d = replace(d, message=_MENTION.sub(cell_line, d.message))
        out.append(d)
    return out


def cell_map_reader():
    """``cell_map_of`` for place_mentions: reads each notebook once (a cache hit was never read by this run)."""
    known: dict[str, CellMap | None] = {}

    def cell_map_of(path: str) -> CellMap | None:
        if path not in known:
            try:
                with open(path, "rb") as f:
                    known[path] = Notebook(decode(f.read())).cell_map
            except (OSError, Unreadable, NotANotebook):
                known[path] = None
        return known[path]

    return cell_map_of


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # the line breaks Python counts (not \f, \u2028)
_TRIPLE = ("'''", '"""')


def _lines(text: str) -> list[str]:
    return _LINE.findall(text)


class _Scanner:
    """Whether the next line starts a statement: outside brackets, strings and a backslash continuation.
    (A ``% 2)`` or ``!= b)`` line inside brackets, or a ``!`` line inside a string, is Python, not a magic.)"""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None  # the open string's quote: ', ", ''' or """
        self.continued = False

    @property
    def at_statement(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        body = line.rstrip("\r\n")
        i, n = 0, len(body)
        while i < n:
            c = body[i]
            if self.quote is not None:
                if c == "\\":
                    i += 2
                elif body.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                else:
                    i += 1
                continue
            if c == "#":
                break
            if c in "'\"":
                self.quote = body[i:i + 3] if body[i:i + 3] in _TRIPLE else c
                i += len(self.quote)
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            i += 1
        if self.quote is not None and self.quote not in _TRIPLE:
            self.quote = None  # an unclosed one-line string: the parser reports it
        self.continued = self.quote is None and body.endswith("\\") and not body.lstrip().startswith("#")


def _neutralize(lines: list[str]) -> tuple[list[str], set[int]]:
    """A code cell's lines with IPython syntax made plain Python (same number of lines); and which changed.
    Only a line that starts a statement can be IPython's; a cell that parses as it is is left alone."""
    try:
        ast.parse("".join(lines))
        return lines, set()
    except (SyntaxError, ValueError):
        pass
    out, changed = [], set()
    scanner = _Scanner()
    magic_continues = False
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        stripped = body.lstrip()
        indent = body[: len(body) - len(stripped)]
        new = None
        if magic_continues:
            new = ""  # the rest of a magic continued with a backslash
        elif scanner.at_statement:
            if stripped.startswith(("%", "!")) or (stripped.startswith("?") and len(stripped) > 1):
                new = indent + "pass"
            elif (m := _ASSIGNED_MAGIC.match(body)) is not None:
                new = f"{m.group(1)}{m.group(2)} = None"
            elif stripped.endswith("?") and not stripped.startswith("#") and _HELP.match(body):
                new = indent + "pass"
        if new is not None:
            magic_continues = body.endswith("\\")
            out.append(new + line[len(body):])
            changed.add(i)
        else:
            magic_continues = False
            scanner.feed(line)
            out.append(line)
    return out, changed


def _source_text(cell: dict) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        if not all(isinstance(s, str) for s in src):
            raise NotANotebook("a cell's source is not text")
        return "".join(src)
    if not isinstance(src, str):
        raise NotANotebook("a cell's source is not text")
    return src


class Notebook:
    """A parsed notebook: its JSON, the joined Python text of its code cells and the map back to cells."""

    def __init__(self, text: str):
        self.text = text
        try:
            self.data = json.loads(text)
        except ValueError as e:
            raise NotANotebook(f"not a valid Jupyter notebook (JSON: {e})") from None
        if not isinstance(self.data, dict) or not isinstance(self.data.get("cells"), list):
            raise NotANotebook("not a valid Jupyter notebook (no list of cells; nbformat 4 is read)")
        lines: list[str] = []
        self._owner: list[int | None] = []  # joined line -> index into data["cells"] (None: nothing)
        self._original: list[str] = []  # joined line -> the cell's own line (magics as written)
        self._magic: set[int] = set()  # joined lines (0-based) that were neutralized
        starts, cells = [], []
        if self._is_python():
            for index, cell in enumerate(self.data["cells"]):
                if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                    continue
                source = _source_text(cell)
                own = _lines(source)
                if not own:
                    continue
                if not own[-1].endswith(("\r", "\n")):
                    own[-1] += "\n"
                first = own[0].strip()
                if first.startswith("%%"):
                    if first[2:].split(" ", 1)[0] not in _PYTHON_CELL_MAGICS:
                        continue  # another language's cell
                plain, changed = _neutralize(own)
                starts.append(len(lines) + 1)
                cells.append(index + 1)
                for j, (orig, new) in enumerate(zip(own, plain)):
                    if j in changed:
                        self._magic.add(len(lines))
                    self._owner.append(index)
                    self._original.append(orig)
                    lines.append(new)
        self.source = "".join(lines)
        self.cell_map = CellMap(tuple(starts), tuple(cells))

    def _is_python(self) -> bool:
        meta = self.data.get("metadata") or {}
        lang = (meta.get("language_info") or {}).get("name") or (meta.get("kernelspec") or {}).get("language")
        return lang is None or str(lang).lower() in ("python", "python3")

    def cell_sources(self) -> dict[int, str]:
        """cell number -> its source as written (for code frames)."""
        out = {}
        for index, cell in enumerate(self.data["cells"]):
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                out[index + 1] = _source_text(cell)
        return out

    def with_source(self, fixed: str) -> str:
        """The notebook's JSON with the joined text replaced by ``fixed`` (a fix of ``self.source``), cell by
        cell. Raises NotANotebook when the change cannot be put back (it would cross a magic line)."""
        if fixed == self.source:
            return self.text
        before = _lines(self.source)
        after = _lines(fixed)
        new_lines: dict[int, list[str]] = {}  # cell index -> its new lines
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(i2 - i1):
                    new_lines.setdefault(self._owner[i1 + k], []).append(self._original[i1 + k])
                continue
            if any(i in self._magic for i in range(i1, i2)):
                raise NotANotebook("a fix would change an IPython magic line; not written")
            # new lines belong to the cell of the first line they replace, else to the line before them
            owner = self._owner[i1] if i1 < i2 else self._owner[max(i1 - 1, 0)] if self._owner else None
            if owner is None:
                raise NotANotebook("a fix adds code to a notebook with no code cell; not written")
            new_lines.setdefault(owner, []).extend(after[j1:j2])
        data = json.loads(self.text)  # a fresh copy: self.data stays the notebook as read
        linted = set(self._owner)
        for index, cell in enumerate(data["cells"]):
            if not isinstance(cell, dict) or index not in linted:
                continue
            old = _source_text(cell)
            text = "".join(new_lines.get(index, []))
            if not old.endswith(("\n", "\r")) and text.endswith("\n"):
                text = text[:-1]  # the joining newline this cell did not have
            if text == old:
                continue
            cell["source"] = _lines(text) if isinstance(cell.get("source"), list) else text
        out = _dumps_like(data, self.text)
        check = json.loads(out)  # never write a notebook that would not load
        if not isinstance(check, dict) or not isinstance(check.get("cells"), list) or len(check["cells"]) != len(self.data["cells"]):
            raise NotANotebook("the fixed notebook would not load; not written")
        return out


def _dumps_like(data: dict, original: str) -> str:
    """``data`` as JSON in the original's style: its indent, its escaping, its final newline."""
    m = re.match(r"\{\s*?\n([ \t]*)\S", original)
    indent = len(m.group(1)) if m else None
    ensure_ascii = original.isascii() and "\\u" in original
    out = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)
    if original.endswith("\n"):
        out += "\n"
    return out


__all__ = ["CellMap", "NotANotebook", "Notebook", "SUFFIX", "cell_map_reader", "is_notebook", "place_mentions", "source_of"]
