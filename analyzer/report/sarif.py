"""SARIF 2.1.0 for GitHub code scanning and other SARIF consumers.

One run; ``tool.driver.rules`` carries every known rule's metadata (short and full description, help as
text and markdown, default level, tags), so a consumer can show the docs without a URL. Artifact URIs
are relative to ``root`` with ``uriBaseId`` ``%SRCROOT%`` (repo-relative paths, as code scanning wants);
columns are 1-based code points (``columnKind: unicodeCodePoints``), as in our Diagnostic JSON. Fixes
become SARIF ``fixes`` with deleted regions and inserted text. Nothing time- or machine-dependent is
written, so the same findings always give the same bytes.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from ..diagnostics import Diagnostic
from ..version import __version__

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _rule_table() -> dict:
    try:
        from rules import RULES  # rules sit below analyzer; imported lazily so reporters load fast
    except ImportError:
        return {}
    return dict(RULES)


def _first_paragraph(markdown: str) -> str:
    """The text under "What it does", or the first paragraph: a one-paragraph full description."""
    lines = markdown.strip().splitlines()
    body: list[str] = []
    for i, line in enumerate(lines):
        if line.lstrip("#").strip().lower() == "what it does":
            for nxt in lines[i + 1:]:
                if nxt.startswith("#"):
                    break
                body.append(nxt)
            break
    text = " ".join(s.strip() for s in body if s.strip())
    if not text:
        text = " ".join(s.strip() for s in markdown.strip().split("\n\n", 1)[0].splitlines())
    return text


def _rule_descriptor(code: str, info, fallback: Diagnostic | None) -> dict:
    if info is None:
        name = fallback.name if fallback else code
        summary = fallback.message if fallback else code
        return {
            "id": code,
            "name": name,
            "shortDescription": {"text": summary},
            "defaultConfiguration": {"level": _LEVEL.get(fallback.severity.value, "error") if fallback else "error"},
        }
    docs = info.docs or info.summary
    return {
        "id": code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": _first_paragraph(docs) or info.summary},
        "help": {"text": docs, "markdown": docs},
        "defaultConfiguration": {"level": _LEVEL.get(info.severity, "error")},
        "properties": {"tags": ["correctness", "pytorch"], "precision": "high"},
    }


def _uri_quote(path: str) -> str:
    # The file name's own bytes, percent-encoded: a name that is not UTF-8 (surrogate escapes) stays exact.
    return quote(os.fsencode(path))


def artifact_location(path: str, root: str) -> dict:
    """Repo-relative ``uri`` + ``uriBaseId`` when ``path`` is under ``root``, else an absolute file URI.

    A relative path that climbs above the file-system root (``../../x.py`` from ``/``, as labels sent to
    the service can) keeps its ``..`` as a relative reference: made absolute it would collide with ``x.py``.
    """
    if not os.path.isabs(path):
        norm = os.path.normpath(path)
        ups = 0
        for part in Path(norm).parts:
            if part != "..":
                break
            ups += 1
        if ups and ups > len(Path(os.path.abspath(root)).parts) - 1:
            return {"uri": _uri_quote(Path(norm).as_posix()), "uriBaseId": SRCROOT}
    absolute = os.path.abspath(path)
    root_abs = os.path.abspath(root)
    try:
        rel = os.path.relpath(absolute, root_abs)
    except ValueError:
        rel = None
    if rel is not None and not rel.startswith(".."):
        return {"uri": _uri_quote(Path(rel).as_posix()), "uriBaseId": SRCROOT}
    return {"uri": "file://" + _uri_quote(Path(absolute).as_posix())}


def _region(line: int, column: int, end_line: int, end_column: int) -> dict:
    # SARIF regions are 1-based with an exclusive endColumn, exactly our convention; clamp nonsense.
    line, column = max(line, 1), max(column, 1)
    end_line = max(end_line, line)
    end_column = max(end_column, 1) if end_line > line else max(end_column, column)
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def _result(d: Diagnostic, rule_index: int, root: str) -> dict:
    location = artifact_location(d.path, root)
    result: dict = {
        "ruleId": d.code,
        "ruleIndex": rule_index,
        "level": _LEVEL.get(d.severity.value, "error"),
        "message": {"text": d.message},
        "locations": [{"physicalLocation": {"artifactLocation": location, "region": _region(d.line, d.column, d.end_line, d.end_column)}}],
    }
    if d.cell is not None:
        # a notebook's lines count in a cell, not in the .ipynb file a region would point into: the finding names
        # its cell in words and in properties, and its fixes (edits of a cell) are left to `thunder-lint --fix`
        result["message"]["text"] = f"cell {d.cell}:{d.line}:{d.column}: {d.message}"
        del result["locations"][0]["physicalLocation"]["region"]
        result["properties"] = {"cell": d.cell, "cellLine": d.line, "cellColumn": d.column}
    elif d.fixes:
        result["fixes"] = [
            {
                "description": {"text": f"{f.title} ({f.applicability.value} fix)"},
                "artifactChanges": [
                    {
                        "artifactLocation": location,
                        "replacements": [
                            {
                                "deletedRegion": _region(e.line, e.column, e.end_line, e.end_column),
                                "insertedContent": {"text": e.content},
                            }
                            for e in f.edits
                        ],
                    }
                ],
            }
            for f in d.fixes
            if f.edits
        ]
        if not result["fixes"]:
            del result["fixes"]
    if d.origin != "static":
        result.setdefault("properties", {})["origin"] = d.origin
        if d.calls is not None:
            result["properties"]["calls"] = d.calls
    return result


def render_sarif(diagnostics: list[Diagnostic], *, root: str = ".") -> str:
    table = _rule_table()
    codes = list(table)
    first_of = {}
    for d in diagnostics:
        first_of.setdefault(d.code, d)
        if d.code not in table and d.code not in codes:
            codes.append(d.code)
    index = {code: i for i, code in enumerate(codes)}
    log = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "thunder-lint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_rule_descriptor(code, table.get(code), first_of.get(code)) for code in codes],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": [_result(d, index[d.code], root) for d in diagnostics],
            }
        ],
    }
    import json  # (here: a run printing text never loads it)

    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
