"""tests/lsp: the language server end to end (helpers in lsp_helpers.py; it skips without the `lsp` extra)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # lsp_helpers, whatever pytest's import mode
