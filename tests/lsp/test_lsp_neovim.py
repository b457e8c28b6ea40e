"""Neovim, headless, configured with docs/editors.md's snippet for its version, against the server: the
diagnostics it receives and a quick fix applied with its own code (docs/editors/nvim_session.py).
Skipped where there is no `nvim` (CI installs none; Debian: apt-get install neovim)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from lsp_helpers import REPO, server_env

NVIM = shutil.which("nvim")


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (Debian: apt-get install neovim)")
def test_neovim_session_with_the_documented_config(tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "docs" / "editors" / "nvim_session.py"), "--nvim", NVIM],
                         capture_output=True, text=True, env=server_env(tmp_path), cwd=REPO, timeout=400)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    received, after = text.split("diagnostics after the fix", 1)
    assert "TL101 error" in received and "covers (as Neovim shows it): flat.add_(1)" in received
    assert "related: train.py:5 compiled by `torch.compile(Net())`" in received
    assert "applied with vim.lsp.util.apply_workspace_edit: Make the copy explicit" in text
    assert "flat = x.reshape(-1).clone()" in text
    assert "TL101" not in after and "TL201 warning" in after
