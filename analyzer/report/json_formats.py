"""``json`` (one array, DESIGN.md's Diagnostic JSON) and ``json-lines`` (one object per line)."""

from __future__ import annotations

from ..diagnostics import Diagnostic


def render_json(diagnostics: list[Diagnostic]) -> str:
    import json  # (here: a run printing text never loads it)

    return json.dumps([d.to_json() for d in diagnostics], indent=2, ensure_ascii=False) + "\n"


def render_json_lines(diagnostics: list[Diagnostic]) -> str:
    import json  # (here: a run printing text never loads it)

    return "".join(json.dumps(d.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n" for d in diagnostics)
