"""``thunder-lint lsp``: the linter in the editor, as a Language Server over stdio.

Diagnostics as the user types (with the workspace's project index), each fix as a quick fix, fix-all,
``# noqa`` insertion, and the rule's docs on hover. Needs the ``lsp`` extra (pygls, lsprotocol):
``pip install 'thunder-lint[lsp]'``. Setup for editors: docs/editors.md.

    text.py       documents and positions (UTF-16/UTF-8/UTF-32, LSP line breaks)
    settings.py   the editor's settings, combined with [tool.thunder-lint]
    projects.py   which project a document is in; the project index, kept up to date
    analysis.py   lint and fix one document
    convert.py    findings and edits as LSP diagnostics and text edits
    actions.py    quick fixes, `# noqa`, fix-all
    rule_docs.py  hover text and the rule doc links
    server.py     the pygls server: documents, debouncing, the analysis thread
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    """Serve LSP on stdin/stdout until the client says exit (or closes stdin); the exit status follows LSP:
    0 after a shutdown request, 1 without one."""
    p = argparse.ArgumentParser(prog="thunder-lint lsp",
                                description="Run the thunder-lint Language Server (LSP over stdin/stdout).")
    p.add_argument("--stdio", action="store_true", help="accepted for clients that pass it: stdio is the only transport")
    p.parse_args(argv)
    try:
        from .server import ThunderLintServer
    except ImportError as e:
        print(f"thunder-lint: error: the language server needs the `lsp` extra ({e}): "
              "pip install 'thunder-lint[lsp]'", file=sys.stderr)
        return 2
    server = ThunderLintServer()
    # The protocol owns stdout: anything else printed (a stray print in a dependency) goes to stderr.
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    server.start_io(stdin, stdout)
    if server.exit_code is not None:
        return server.exit_code
    return 0 if server.shutdown_received else 1
