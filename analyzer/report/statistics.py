"""``--statistics``: how many findings of each code, most frequent first (text, or JSON rows)."""

from __future__ import annotations

import json
from collections import Counter

from ..diagnostics import Diagnostic


def statistics_rows(diagnostics: list[Diagnostic]) -> list[dict]:
    counts = Counter(d.code for d in diagnostics)
    names = {d.code: d.name for d in diagnostics}
    fixable = {d.code for d in diagnostics if d.fixes}
    return [
        {"code": code, "name": names[code], "count": n, "fixable": code in fixable}
        for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def render_statistics(diagnostics: list[Diagnostic]) -> str:
    rows = statistics_rows(diagnostics)
    if not rows:
        return ""
    width = len(str(rows[0]["count"]))
    code_width = max(len(r["code"]) for r in rows)
    return "".join(
        f"{r['count']:>{width}}\t{r['code']:<{code_width}}\t{'[*]' if r['fixable'] else '[ ]'} {r['name']}\n" for r in rows
    )


def render_statistics_json(diagnostics: list[Diagnostic]) -> str:
    return json.dumps(statistics_rows(diagnostics), indent=2) + "\n"
