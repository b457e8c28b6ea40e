"""A rule's documentation for the editor: the hover text, and the page a diagnostic's code links to.

The link (LSP ``codeDescription``) is a URL template from the settings (``ruleDocsUrl``, e.g. the HTTP
service's ``/rules/{code}``) or else a markdown file of ``thunder-lint rule CODE``'s text, written once per
version under the user's cache folder, so that following the link opens the docs in the editor even
offline and without a service running.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..version import __version__

_written: dict[str, str | None] = {}  # code -> file URI (None: could not be written)


def rule_markdown(code: str) -> str | None:
    """``thunder-lint rule CODE``'s text (markdown); None for a code with no rule."""
    from rules import RULES, render_docs

    if code not in RULES:
        return None
    return render_docs(code).rstrip("\n") + "\n"


def _docs_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "thunder-lint" / f"rules-{__version__}"


def _write(code: str, text: str) -> str | None:
    user = os.getuid() if hasattr(os, "getuid") else "user"
    for folder in (_docs_dir(), Path(tempfile.gettempdir()) / f"thunder-lint-{user}" / f"rules-{__version__}"):
        target = folder / f"{code}.md"
        try:
            if not (target.is_file() and target.read_text(encoding="utf-8") == text):
                folder.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{code}-", suffix=".md")
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, target)
            return target.as_uri()
        except OSError:
            continue  # an unwritable cache folder: try the next place
    return None


def docs_href(code: str, template: str | None) -> str | None:
    """Where a diagnostic's code links to; None when there is nowhere to link."""
    if template:
        from rules import RULES

        info = RULES.get(code)
        try:
            return template.format(code=code, name=info.name if info else code.lower())
        except (KeyError, IndexError, ValueError):
            return template  # braces we do not know: the template as written
    if code not in _written:
        text = rule_markdown(code)
        _written[code] = None if text is None else _write(code, text)
    return _written[code]


def hover_markdown(finding) -> str:
    """What hovering over a finding shows: the finding, then its rule's docs."""
    head = f"**{finding.code}** `{finding.name}` ({finding.severity.value}): {finding.message}"
    docs = rule_markdown(finding.code)
    return head if docs is None else f"{head}\n\n---\n\n{docs}"
