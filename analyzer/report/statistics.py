"""``--statistics``: how many findings of each code, most frequent first."""

from __future__ import annotations

from collections import Counter

from ..diagnostics import Diagnostic


def render_statistics(diagnostics: list[Diagnostic]) -> str:
    if not diagnostics:
        return ""
    counts = Counter(d.code for d in diagnostics)
    names = {d.code: d.name for d in diagnostics}
    fixable = {d.code for d in diagnostics if d.fixes}
    width = len(str(max(counts.values())))
    code_width = max(len(c) for c in counts)
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return "".join(
        f"{n:>{width}}\t{code:<{code_width}}\t{'[*]' if code in fixable else '[ ]'} {names[code]}\n" for code, n in rows
    )
