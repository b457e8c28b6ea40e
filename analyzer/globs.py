"""Path globs as ruff reads them (its `exclude`, `include` and `per-file-ignores` use the globset syntax).

- ``*`` matches any run of characters and ``?`` any one, ``/`` included (globset's default, which ruff keeps:
  ``tests/*`` covers ``tests/a/b.py``); ``**/`` matches any number of folders, none included, so
  ``**/test_*.py`` matches a top-level ``test_a.py`` as well as ``a/b/test_a.py``;
- ``[abc]``, ``[!abc]`` and ``[a-z]`` are character classes; ``{a,b}`` is an alternation (nesting allowed);
- a pattern without ``/`` is a single-path pattern: it matches a file or folder of that name anywhere;
  one with ``/`` is relative to the project root (a leading ``./`` or ``/`` is the root itself).

fnmatch, used before, had no ``{a,b}`` and never matched ``**/x`` at the top.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache


class GlobError(ValueError):
    """A pattern that cannot be read (an unclosed ``[`` or ``{``)."""


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    depth = 0  # open `{` alternations
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                before_ok = i == 0 or pattern[i - 1] == "/"
                after = pattern[i + 2:i + 3]
                if before_ok and after == "/":
                    out.append("(?:.*/)?")  # `**/`: zero or more whole components
                    i += 3
                    continue
                if before_ok and after == "":
                    out.append(".*")  # trailing `**`: everything below
                    i += 2
                    continue
            out.append(".*")
            i += 1
        elif c == "?":
            out.append(".")
            i += 1
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                raise GlobError(f"unclosed `[` in glob {pattern!r}")
            body = pattern[i + 1:j]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j + 1
        elif c == "{":
            depth += 1
            out.append("(?:")
            i += 1
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
            i += 1
        elif c == "," and depth:
            out.append("|")
            i += 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    if depth:
        raise GlobError(f"unclosed `{{` in glob {pattern!r}")
    return "".join(out)


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern:
    """The pattern as a regular expression over a whole posix path (or name)."""
    return re.compile(r"(?s:" + _translate(pattern) + r")\Z")


def _alternation(patterns: list[re.Pattern]) -> re.Pattern | None:
    """One pattern that matches where any of ``patterns`` (each anchored at both ends) does."""
    if not patterns:
        return None
    return re.compile("|".join(p.pattern for p in patterns))


class GlobSet:
    """Several patterns; ``matches(rel)`` over a posix path relative to the project root."""

    def __init__(self, patterns: Iterable[str]):
        self.patterns = tuple(p for p in patterns if p)
        self._names: list[re.Pattern] = []  # single-path patterns: any component's name
        self._paths: list[re.Pattern] = []  # relative patterns: the whole relative path
        for p in self.patterns:
            body = p[2:] if p.startswith("./") else p.lstrip("/") if p.startswith("/") else p
            body = body.rstrip("/") or body
            (self._paths if "/" in body else self._names).append(compile_glob(body))
        # each kind as one alternation: a folder walk asks about every name it meets (one match, not one per pattern)
        self._any_name = _alternation(self._names)
        self._any_path = _alternation(self._paths)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches_name(self, name: str) -> bool:
        return self._any_name is not None and self._any_name.match(name) is not None

    def matches(self, rel: str, *, whole_only: bool = False) -> bool:
        """Whether ``rel`` (posix, relative to the root) matches: a relative pattern over the path, a single-path
        pattern over its last component (or, unless ``whole_only``, over any folder it is in)."""
        if self._any_path is not None and self._any_path.match(rel) is not None:
            return True
        parts = rel.split("/")
        names = parts[-1:] if whole_only else parts
        return any(self.matches_name(p) for p in names)


def validate(patterns: Iterable[str], where: str) -> None:
    """Raise GlobError naming ``where`` for the first pattern that cannot be read."""
    for p in patterns:
        try:
            compile_glob(p.lstrip("/"))
        except GlobError as e:
            raise GlobError(f"{where}: {e}") from None
