"""Reporters: one module per output format, all pure functions of the diagnostics.

``render`` is what the CLI prints and what the HTTP server returns, byte for byte, for the same
diagnostics and root; nothing here reads the clock, the environment or the file system.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..diagnostics import Diagnostic
from . import github, json_formats, sarif, statistics, text

FORMATS = ("full", "concise", "json", "json-lines", "sarif", "github")


def render(
    diagnostics: Iterable[Diagnostic],
    fmt: str,
    *,
    root: str = ".",
    show_fixes: bool = False,
    sources: Mapping[str, str] | None = None,
) -> str:
    """The diagnostics in format ``fmt`` (one of FORMATS), sorted by path, line, column, code."""
    ordered = sorted(diagnostics, key=Diagnostic.sort_key)
    if fmt == "full":
        return text.render_full(ordered, show_fixes=show_fixes, sources=sources or {})
    if fmt == "concise":
        return text.render_concise(ordered, show_fixes=show_fixes)
    if fmt == "json":
        return json_formats.render_json(ordered)
    if fmt == "json-lines":
        return json_formats.render_json_lines(ordered)
    if fmt == "sarif":
        return sarif.render_sarif(ordered, root=root)
    if fmt == "github":
        return github.render_github(ordered)
    raise ValueError(f"unknown output format {fmt!r} (choose from {', '.join(FORMATS)})")


def render_statistics(diagnostics: Iterable[Diagnostic]) -> str:
    """One line per code: count, code, fixability marker, rule name; most frequent first."""
    return statistics.render_statistics(list(diagnostics))


__all__ = ["FORMATS", "render", "render_statistics"]
