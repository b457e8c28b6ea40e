"""The report of a run: trace findings filtered as the linter filters (select/ignore, per-file-ignores,
`# noqa`), paths shown as the linter shows them, merged with the static findings for the same files."""
from __future__ import annotations

import os
from dataclasses import replace

from ..diagnostics import Diagnostic


def shown_path(path: str, cwd: str | None = None) -> str:
    """Relative to the current folder when the file is under it (as the linter prints paths it was given)."""
    cwd = cwd or os.getcwd()
    if path.startswith("<") or not os.path.isabs(path):
        return path
    rel = os.path.relpath(path, cwd)
    return path if rel.startswith(os.pardir) else rel


def filter_trace(diagnostics, settings) -> list[Diagnostic]:
    """The trace findings the config and the command line keep, with the linter's paths."""
    from ..file_reader import Unreadable, decode, read_bytes
    from ..static.engine import enabled_codes
    from ..static.noqa import is_suppressed, noqa_lines

    kept, noqa = [], {}
    for d in diagnostics:
        path = shown_path(d.path)
        if d.code not in enabled_codes(settings.select, settings.ignore_for(path), settings.extend_select):
            continue
        if path not in noqa:
            try:
                noqa[path] = noqa_lines(decode(read_bytes(d.path, 50_000_000)))
            except (Unreadable, OSError):
                noqa[path] = {}
        if is_suppressed(d.code, d.line, noqa[path]):
            continue
        kept.append(replace(d, path=path))
    return kept


def static_findings(files, settings) -> tuple[list[Diagnostic], list[str]]:
    """The static linter over ``files`` (the program's own sources): findings and internal errors."""
    from ..runner import run

    paths = sorted({shown_path(f) for f in files if os.path.isfile(f)})
    if not paths:
        return [], []
    result = run(paths, settings, jobs=1, cache=None)
    return list(result.diagnostics), list(result.errors)


def merge(trace: list[Diagnostic], static: list[Diagnostic]) -> list[Diagnostic]:
    """Both origins, each finding once per (origin, code, place), in the linter's order."""
    seen, out = set(), []
    for d in [*static, *trace]:
        key = (d.origin, d.code, d.path, d.line, d.column)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return sorted(out, key=lambda d: (*Diagnostic.sort_key(d), d.origin))
