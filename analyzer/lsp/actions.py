"""Code actions: each fix of a finding as a quick fix, "add ``# noqa: TLxxx``", and fix-all for the file.

Unsafe fixes (they may change what the program computes, see each rule's "Fix safety") are offered one by one
as quick fixes, say so in their title and are never preferred; fix-all (``source.fixAll``, what editors run on
save) applies them only when the ``unsafeFixes`` setting (else the config's ``unsafe-fixes``) is true, as ruff's
editor integration does. Display-only fixes are never offered as edits.
"""

from __future__ import annotations


from lsprotocol import types

from ..diagnostics import Applicability, Diagnostic, Fix
from ..static.noqa import comment_lines, find_noqa  # noqa: F401 (comment_lines: server.py reads it from here)
from .convert import lsp_range, text_edit
from .text import TextDocument

FIX_ALL_KIND = "source.fixAll.thunder-lint"
_NEVER_SUPPRESSED = frozenset({"TL001", "TL002"})  # always reported: a `# noqa` cannot switch them off


def kind_wanted(kind: str, only: list[str] | None) -> bool:
    """Whether ``kind`` is one the client asked for (a kind matches itself and every kind under it)."""
    return not only or any(kind == k or kind.startswith(k + ".") for k in only)


def overlaps(finding_range: types.Range, wanted: types.Range) -> bool:
    a, b = finding_range, wanted
    start_a, end_a = (a.start.line, a.start.character), (a.end.line, a.end.character)
    start_b, end_b = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return start_a <= end_b and start_b <= end_a


def workspace_edit(uri: str, version: int | None, edits: list[types.TextEdit], document_changes: bool) -> types.WorkspaceEdit:
    if document_changes:
        # The version makes the client refuse the edit if the document changed since it was linted.
        ident = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=ident, edits=edits)])
    return types.WorkspaceEdit(changes={uri: edits})


def rule_has_fixes(code: str) -> bool:
    from rules import RULES

    info = RULES.get(code)
    return bool(info and info.fixable)


def quick_fixes(doc: TextDocument, finding: Diagnostic, fixes: tuple[Fix, ...], lsp_diag: types.Diagnostic, *,
                encoding: str, document_changes: bool) -> list[types.CodeAction]:
    """Each fix of a finding, chosen one at a time by the user: unsafe ones too (marked, never preferred, so an
    editor's "auto fix" never picks one), as ruff's editor integration offers them."""
    actions = []
    preferred_given = False
    for fix in fixes:
        if fix.applicability is Applicability.DISPLAY or not fix.edits:
            continue
        title = f"{fix.title} ({finding.code})"
        if fix.applicability is Applicability.UNSAFE:
            title += " (unsafe fix)"
        edits = [text_edit(doc, e, encoding) for e in fix.edits]
        prefer = fix.applicability is Applicability.SAFE and not preferred_given
        preferred_given |= prefer
        actions.append(types.CodeAction(
            title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[lsp_diag], is_preferred=prefer or None,
            edit=workspace_edit(doc.uri, doc.version, edits, document_changes)))
    return actions


def noqa_action(doc: TextDocument, finding: Diagnostic, lsp_diag: types.Diagnostic, commentable: frozenset[int] | None,
                *, encoding: str, document_changes: bool) -> types.CodeAction | None:
    """"Add `# noqa: TL101`" on the finding's first line (the line a `# noqa` is read from)."""
    if finding.code in _NEVER_SUPPRESSED or commentable is None or finding.line not in commentable:
        return None
    line = doc.line_text(finding.line - 1)
    m = find_noqa(line)
    if m and m.group("codes") is None:
        return None  # a bare `# noqa` suppresses everything already
    if m:  # `# noqa: E501`: add ours to the list
        at = m.end("codes")
        new, start, end = f", {finding.code}", at, at
    else:
        content = line.rstrip()
        new, start, end = f"  # noqa: {finding.code}", len(content), len(line)
    rng = lsp_range(doc, finding.line, start + 1, finding.line, end + 1, encoding)
    return types.CodeAction(
        title=f"Add `# noqa: {finding.code}` (suppress this finding on line {finding.line})",
        kind=types.CodeActionKind.QuickFix, diagnostics=[lsp_diag],
        edit=workspace_edit(doc.uri, doc.version, [types.TextEdit(rng, new)], document_changes))


def whole_text_edit(doc: TextDocument, new_text: str, encoding: str) -> types.TextEdit | None:
    """One edit from the document's text to ``new_text``, spanning only what differs (the cursor and the
    undo history outside it are left alone); None when nothing differs."""
    old = doc.text
    if old == new_text:
        return None
    prefix = 0
    limit = min(len(old), len(new_text))
    while prefix < limit and old[prefix] == new_text[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new_text[len(new_text) - 1 - suffix]:
        suffix += 1
    # never cut between \r and \n: LSP has no position there
    if prefix and old[prefix - 1] == "\r" and prefix < len(old) and old[prefix] == "\n":
        prefix -= 1
    end = len(old) - suffix
    if suffix and end > 0 and old[end - 1] == "\r" and old[end] == "\n":
        suffix -= 1
    start = doc.position_at(prefix, encoding)
    stop = doc.position_at(len(old) - suffix, encoding)
    return types.TextEdit(types.Range(types.Position(*start), types.Position(*stop)),
                          new_text[prefix : len(new_text) - suffix])


def fix_all_action(doc: TextDocument, fixed_text: str, *, unsafe: bool, encoding: str,
                   document_changes: bool) -> types.CodeAction | None:
    edit = whole_text_edit(doc, fixed_text, encoding)
    if edit is None:
        return None
    title = "thunder-lint: fix all" + (" (safe and unsafe fixes)" if unsafe else " (safe fixes)")
    return types.CodeAction(title=title, kind=FIX_ALL_KIND,
                            edit=workspace_edit(doc.uri, doc.version, [edit], document_changes))
