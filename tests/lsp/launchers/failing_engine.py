"""The real `thunder-lint lsp`, with an engine that raises on any text containing BOOM: what an internal
error looks like to the server (it must log it, skip that document, and go on)."""

import sys

from analyzer import file_pass

_real = file_pass.lint_text


def _lint_text(text, path, settings, project=None):
    if "BOOM" in text:
        raise RuntimeError("injected engine failure")
    return _real(text, path, settings, project)


file_pass.lint_text = _lint_text

from analyzer.lsp import main  # noqa: E402

sys.exit(main([]))
