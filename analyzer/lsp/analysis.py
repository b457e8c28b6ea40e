"""Linting and fixing one open document, with what its project's index knows about it.

The same engine as the CLI (``file_pass.lint_text``): one parse gives the findings and the file's summary
for the index. A buffer over the CLI's size limit is a TL002 finding, never parsed.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import file_pass
from ..diagnostics import Diagnostic
from ..file_reader import MAX_FILE_BYTES, Unreadable, too_large, unreadable_diagnostic
from ..project_index import ProjectFile
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


def lint_document(doc: TextDocument, path: str | None, project: Project) -> Linted:
    """Findings for the document's text; ``path`` None for a buffer that is not a file."""
    label = path or doc.uri
    size = _utf8_size(doc.text)
    if size > MAX_FILE_BYTES:
        return Linted([unreadable_diagnostic(label, Unreadable(too_large(size, MAX_FILE_BYTES)))], None, None)
    if path is None:
        return Linted(file_pass.lint_text(doc.text, label, project.settings), None, None)
    project.buffers[path] = doc.text  # the index reads this file's functions from the buffer, not the disk
    pf = ProjectFile(path, project.module(path), None, project.settings.assume_compiled,
                     project.settings.target, want_summary=True,
                     facts_from=lambda summary: project.facts_with(path, summary))
    findings = file_pass.lint_text(doc.text, path, project.settings, pf)
    return Linted(findings, pf.used, pf.summary)


def fix_document(doc: TextDocument, path: str | None, project: Project, facts: tuple | None, unsafe: bool) -> str:
    """The document's text with every applicable fix applied (as ``--fix``, ``--unsafe-fixes`` with ``unsafe``)."""
    from .. import static

    settings = project.settings
    label = path or doc.uri
    if _utf8_size(doc.text) > MAX_FILE_BYTES:
        return doc.text
    pf = None
    if path is not None:
        pf = ProjectFile(path, project.module(path), facts, settings.assume_compiled, settings.target, want_summary=False)
    outcome = static.fix_source(doc.text, label, select=settings.select, ignore=settings.ignore_for(label),
                                extend_select=settings.extend_select, jit_decorators=settings.jit_decorators,
                                unsafe=unsafe, project=pf)
    return outcome.text
