"""GitHub Actions workflow commands: one ``::error``/``::warning``/``::notice`` annotation per finding.

Escaping follows the runner's rules: in the message ``%``, CR and LF are percent-encoded; in property
values ``:`` and ``,`` are too, since they delimit the properties.
"""

from __future__ import annotations

from ..diagnostics import Diagnostic

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def render_github(diagnostics: list[Diagnostic]) -> str:
    lines = []
    for d in diagnostics:
        level = _LEVEL.get(d.severity.value, "error")
        if d.cell is None:
            where = [f"line={d.line}", f"col={d.column}", f"endLine={d.end_line}", f"endColumn={d.end_column}"]
            message = d.message
        else:  # a notebook: its lines count in a cell, not in the .ipynb file an annotation's line would point into
            where, message = [], f"cell {d.cell}:{d.line}:{d.column}: {d.message}"
        props = ",".join([f"file={escape_property(d.path)}", *where, f"title={escape_property(d.code)}"])
        lines.append(f"::{level} {props}::{escape_data(message)}\n")
    return "".join(lines)
