"""``--statistics``: how many findings of each code, most frequent first (text, or JSON rows)."""

from __future__ import annotations

from collections import Counter

from ..diagnostics import Diagnostic
from .text import fix_marker


def statistics_rows(diagnostics: list[Diagnostic]) -> list[dict]:
    counts = Counter(d.code for d in diagnostics)
    names = {d.code: d.name for d in diagnostics}
    fixable = {d.code for d in diagnostics if d.fixes}
    return [
        {"code": code, "name": names[code], "count": n, "fixable": code in fixable}
        for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def _markers(diagnostics: list[Diagnostic]) -> dict[str, str]:
    """Per code, the marker its findings carry: [*] some have a safe fix, [-] only unsafe ones."""
    markers: dict[str, str] = {}
    for d in diagnostics:
        m = fix_marker(d).strip()
        if m == "[*]" or (m == "[-]" and markers.get(d.code) != "[*]"):
            markers[d.code] = m
    return markers


def render_statistics(diagnostics: list[Diagnostic]) -> str:
    rows = statistics_rows(diagnostics)
    if not rows:
        return ""
    markers = _markers(diagnostics)
    width = len(str(rows[0]["count"]))
    code_width = max(len(r["code"]) for r in rows)
    return "".join(
        f"{r['count']:>{width}}\t{r['code']:<{code_width}}\t{markers.get(r['code'], '[ ]')} {r['name']}\n" for r in rows
    )


def render_statistics_json(diagnostics: list[Diagnostic]) -> str:
    import json  # (here: a run printing text never loads it)

    return json.dumps(statistics_rows(diagnostics), indent=2) + "\n"
