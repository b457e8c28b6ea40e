"""Linting and fixing one open document, with what its project's index knows about it.

The same engine and settings as the CLI: one parse gives the findings and the file's summary for the
index. A buffer over the CLI's size limit is a TL002 finding, never parsed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..diagnostics import Diagnostic
from ..file_reader import MAX_FILE_BYTES, Unreadable, too_large, unreadable_diagnostic
from ..project.index import ProjectFile
from .projects import Project
from .text import TextDocument


@dataclass
class Linted:
    findings: list[Diagnostic]
    facts: tuple | None  # what the index said about the file when it was linted (None: not a file)
    summary: dict | None  # the file's part of the index, from this parse (None: unparsable or not a file)


def _utf8_size(text: str) -> int:
    if len(text) * 4 <= MAX_FILE_BYTES:  # cannot be over the limit: skip encoding it
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _lint(text: str, label: str, settings, project: ProjectFile | None, with_fixes: bool) -> list[Diagnostic]:
    """The CLI's lint of one file (file_pass.lint_text), with the fixes only when asked for: building them
    (libcst) is about a sixth of a lint, and the editor needs them only for a code action on a finding."""
    from .. import static

    return static.lint_source(text, label, select=settings.select, ignore=settings.ignore_for(label),
                              extend_select=settings.extend_select, jit_decorators=settings.jit_decorators,
                              with_fixes=with_fixes, project=project)


def lint_document(doc: TextDocument, path: str | None, project: Project) -> Linted:
    """Findings for the document's text, without their fixes (see with_fixes); ``path`` None for a buffer
    that is not a file. The document's fresh summary goes into the project index on the way."""
    label = path or doc.uri
    size = _utf8_size(doc.text)
    if size > MAX_FILE_BYTES:
        return Linted([unreadable_diagnostic(label, Unreadable(too_large(size, MAX_FILE_BYTES)))], None, None)
    if path is None:
        return Linted(_lint(doc.text, label, project.settings, None, False), None, None)
    project.buffers[path] = doc.text  # the index reads this file's functions from the buffer, not the disk
    pf = ProjectFile(path, project.module(path), None, project.assume_compiled,
                     project.settings.target, want_summary=True,
                     facts_from=lambda summary: project.facts_with(path, summary))
    findings = _lint(doc.text, path, project.settings, pf, False)
    return Linted(findings, pf.used, pf.summary)


def with_fixes(doc: TextDocument, path: str | None, project: Project, facts: tuple | None) -> list[Diagnostic]:
    """The findings of ``lint_document`` for the same text and facts, with their fixes."""
    label = path or doc.uri
    if _utf8_size(doc.text) > MAX_FILE_BYTES:
        return [unreadable_diagnostic(label, Unreadable(too_large(_utf8_size(doc.text), MAX_FILE_BYTES)))]
    pf = None
    if path is not None:
        pf = ProjectFile(path, project.module(path), facts, project.assume_compiled, project.settings.target,
                         want_summary=False)
    return _lint(doc.text, label, project.settings, pf, True)


def fix_document(doc: TextDocument, path: str | None, project: Project, facts: tuple | None, unsafe: bool) -> str:
    """The document's text with every applicable fix applied (as ``--fix``, ``--unsafe-fixes`` with ``unsafe``)."""
    from .. import static

    settings = project.settings
    label = path or doc.uri
    if _utf8_size(doc.text) > MAX_FILE_BYTES:
        return doc.text
    pf = None
    if path is not None:
        pf = ProjectFile(path, project.module(path), facts, project.assume_compiled, settings.target, want_summary=False)
    outcome = static.fix_source(doc.text, label, select=settings.select, ignore=settings.ignore_for(label),
                                extend_select=settings.extend_select, jit_decorators=settings.jit_decorators,
                                unsafe=unsafe, project=pf)
    return outcome.text
