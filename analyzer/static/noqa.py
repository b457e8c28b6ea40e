"""``# noqa`` handling after ruff's conventions.

``# noqa`` alone suppresses every finding on its line; ``# noqa: TL101,TL2`` suppresses the listed
codes or prefixes. A ``# noqa`` for another tool (``# noqa: E501``) suppresses nothing of ours.
"""

from __future__ import annotations

import re

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]*(?:\s*,\s*[A-Za-z]+[0-9]*|\s+[A-Za-z]+[0-9]+)*))?", re.I)
_CODE = re.compile(r"[A-Za-z]+[0-9]*")

ALL = None  # a bare "# noqa"


def noqa_lines(text: str) -> dict[int, frozenset[str] | None]:
    """line number -> the codes/prefixes suppressed there (``None`` = everything)."""
    if "noqa" not in text and "NOQA" not in text.upper():
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
