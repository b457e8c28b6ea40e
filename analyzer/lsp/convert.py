"""Findings and edits in LSP's terms: ranges in the negotiated encoding, severities, links, related places."""

from __future__ import annotations

import os

from lsprotocol import types
from pygls.uris import from_fs_path

from ..diagnostics import Diagnostic, Edit, Severity
from .rule_docs import docs_href
from .text import TextDocument

SOURCE = "thunder-lint"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def lsp_range(doc: TextDocument, line: int, column: int, end_line: int, end_column: int, encoding: str) -> types.Range:
    """The LSP range of a linter span (1-based, end exclusive, in characters)."""
    start = doc.lsp_position(line, column, encoding)
    end = doc.lsp_position(end_line, end_column, encoding)
    if end < start:
        end = start
    return types.Range(types.Position(*start), types.Position(*end))


def text_edit(doc: TextDocument, edit: Edit, encoding: str) -> types.TextEdit:
    return types.TextEdit(lsp_range(doc, edit.line, edit.column, edit.end_line, edit.end_column, encoding), edit.content)


def _site_range(path: str, line: int, open_docs: dict[str, TextDocument], encoding: str,
                cache: dict) -> tuple[str, types.Range]:
    """The URI and range of a compile site: its line without the indent, from the open buffer or the disk."""
    key = (path, line)
    if key not in cache:
        uri = from_fs_path(path) or path
        doc = open_docs.get(uri)
        text = doc.line_text(line - 1) if doc is not None else _disk_line(path, line)
        indent = len(text) - len(text.lstrip())
        one_line = TextDocument(uri, text)  # positions within the line; the line number is added below
        start = one_line.lsp_position(1, indent + 1, encoding)[1]
        end = one_line.lsp_position(1, len(text.rstrip()) + 1, encoding)[1]
        cache[key] = uri, types.Range(types.Position(line - 1, start), types.Position(line - 1, end))
    return cache[key]


def _disk_line(path: str, line: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            for n, text in enumerate(f, start=1):
                if n == line:
                    return text.rstrip("\r\n")
    except OSError:
        pass
    return ""


def lsp_diagnostic(finding: Diagnostic, doc: TextDocument, encoding: str, *, docs_url: str | None,
                   compiled=None, open_docs: dict[str, TextDocument] | None = None,
                   site_cache: dict | None = None) -> types.Diagnostic:
    """``compiled`` (project.index.Compiled): how the function holding the finding is compiled; its entry
    point becomes the related location."""
    related = None
    if compiled is not None and compiled.site is not None:
        site_path, site_line = compiled.site
        uri, rng = _site_range(site_path, site_line, open_docs or {}, encoding, {} if site_cache is None else site_cache)
        what = compiled.how.rsplit(" at ", 1)[0] if " at " in compiled.how else compiled.how
        related = [types.DiagnosticRelatedInformation(types.Location(uri, rng), f"{what} (the compile site)")]
    href = docs_href(finding.code, docs_url)
    return types.Diagnostic(
        range=lsp_range(doc, finding.line, finding.column, finding.end_line, finding.end_column, encoding),
        message=finding.message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source=SOURCE,
        related_information=related,
        data={"name": finding.name},
    )


def path_of(uri: str) -> str | None:
    """The file system path of a ``file:`` URI; None for any other scheme (an untitled buffer)."""
    if not uri.startswith("file:"):
        return None
    from pygls.uris import to_fs_path

    path = to_fs_path(uri)
    return os.path.abspath(path) if path else None
