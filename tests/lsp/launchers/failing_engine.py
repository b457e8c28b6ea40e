"""The real `thunder-lint lsp`, with an engine that raises on any text containing BOOM: what an internal
error looks like to the server (it must log it, skip that document, and go on)."""

import sys

from analyzer import static

_real = static.lint_source


def _lint_source(text, *args, **kwargs):
    if "BOOM" in text:
        raise RuntimeError("injected engine failure")
    return _real(text, *args, **kwargs)


static.lint_source = _lint_source

from analyzer.lsp import main  # noqa: E402

sys.exit(main([]))
