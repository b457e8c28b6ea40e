"""Reading source from a closed stdin is a usage error (exit 2, a clear message), not an internal error."""

from __future__ import annotations

import os
import subprocess
import sys

from cli_helpers import REPO


def test_closed_stdin_is_a_clear_usage_error(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = f'"{sys.executable}" -m analyzer.cli --stdin-filename z.py - <&-'
    out = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2
    assert "cannot read source from stdin: stdin is closed" in out.stderr
    assert "internal error" not in out.stderr and "AttributeError" not in out.stderr
